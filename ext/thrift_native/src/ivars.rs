//! Instance-variable access for the hot paths.
//!
//! On Ruby 3.1 `rb_ivar_get` takes the VM lock and does a hash lookup per call (about 17 ns here, most of a
//! primitive read). An ivar's slot index is a property of the object's class there (the class's iv_index_tbl only
//! ever grows, and an index is never reassigned), so an `IvarSlot` learns the index once for one exact class and
//! then reads the object's ivar array directly.
//!
//! On Ruby 3.3 `rb_ivar_get` looks the ivar up through the object's shape (about 60 instructions and three calls
//! per read). A shape fixes the index of each of its ivars for good, so an `IvarSlot` remembers the index of its ivar
//! in the last shape it met, and reads or writes the array directly for an object of that very shape, as YJIT's
//! inline caches do. Every other Ruby, and any object of another shape, goes through `rb_ivar_get`/`rb_ivar_set`.

#[cfg(ruby_eq_3_3)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use rb_sys::{ID, VALUE};

use crate::rb;

const UNKNOWN: u32 = u32::MAX;

pub struct IvarSlot {
    class: AtomicUsize,
    id: AtomicUsize,
    index: AtomicU32,
    /// Ruby 3.3: the shape id last learned (upper 32 bits) and the ivar's index in it, or `ruby_3_3::UNLEARNED`.
    #[cfg(ruby_eq_3_3)]
    shaped: AtomicU64,
}

impl IvarSlot {
    pub const fn new() -> Self {
        IvarSlot {
            class: AtomicUsize::new(0),
            id: AtomicUsize::new(0),
            index: AtomicU32::new(UNKNOWN),
            #[cfg(ruby_eq_3_3)]
            shaped: AtomicU64::new(ruby_3_3::UNLEARNED),
        }
    }

    /// Binds the slot to `@name` of instances of exactly `class` (a pinned class).
    pub fn configure(&self, class: VALUE, id: ID) {
        self.class.store(class as usize, Ordering::Relaxed);
        self.id.store(id as usize, Ordering::Relaxed);
        self.index.store(UNKNOWN, Ordering::Relaxed);
        #[cfg(ruby_eq_3_3)]
        self.shaped.store(ruby_3_3::UNLEARNED, Ordering::Relaxed);
    }

    #[inline(always)]
    fn id(&self) -> ID {
        self.id.load(Ordering::Relaxed) as ID
    }

    /// The ivar's value (nil when unset), as `rb_ivar_get`.
    #[inline(always)]
    pub fn get(&self, obj: VALUE) -> VALUE {
        #[cfg(any(ruby_eq_3_1, ruby_eq_3_3))]
        if let Some(v) = self.read_slot(obj) {
            return v;
        }
        let v = rb::ivar_get(obj, self.id());
        #[cfg(any(ruby_eq_3_1, ruby_eq_3_3))]
        self.learn(obj, v);
        v
    }

    /// Stores an immediate value (a Fixnum) into an object known not to be frozen.
    #[inline(always)]
    pub fn set_immediate_unfrozen(&self, obj: VALUE, v: VALUE) {
        debug_assert!(rb::is_special_const(v));
        #[cfg(any(ruby_eq_3_1, ruby_eq_3_3))]
        if self.write_slot(obj, v) {
            return;
        }
        rb::ivar_set_unfrozen(obj, self.id(), v);
    }
}

/// The direct accesses, where a Ruby-specific `slot` (the ivar's place in this object's array, if known) exists.
#[cfg(any(ruby_eq_3_1, ruby_eq_3_3))]
impl IvarSlot {
    #[inline(always)]
    fn read_slot(&self, obj: VALUE) -> Option<VALUE> {
        // SAFETY: `slot` returns a pointer into obj's live ivar array.
        self.slot(obj).map(|p| unsafe { *p })
    }

    /// An immediate needs no write barrier: it is not a heap reference the GC must learn about.
    #[inline(always)]
    fn write_slot(&self, obj: VALUE, v: VALUE) -> bool {
        match self.slot(obj) {
            Some(p) => {
                // SAFETY: `p` points into obj's ivar array, obj is not frozen, and `v` is an immediate.
                unsafe { *p = v };
                true
            }
            None => false,
        }
    }
}

#[cfg(ruby_eq_3_1)]
mod ruby_3_1 {
    use super::*;
    use rb_sys::{ruby_value_type, RObject};

    const QUNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
    const EMBED_FLAG: VALUE = rb_sys::ruby_robject_flags::ROBJECT_EMBED as VALUE;
    const EMBED_LEN: u32 = rb_sys::ruby_robject_consts::ROBJECT_EMBED_LEN_MAX as u32;

    /// The ivar array of a T_OBJECT: (pointer, length), as ROBJECT_IVPTR and ROBJECT_NUMIV.
    ///
    /// # Safety
    /// `obj` must be a live T_OBJECT.
    #[inline(always)]
    unsafe fn ivars(obj: VALUE) -> (*mut VALUE, u32) {
        let robj = obj as *mut RObject;
        if (*robj).basic.flags & EMBED_FLAG != 0 {
            ((*robj).as_.ary.as_mut_ptr(), EMBED_LEN)
        } else {
            ((*robj).as_.heap.ivptr, (*robj).as_.heap.numiv)
        }
    }

    impl IvarSlot {
        #[inline(always)]
        pub(super) fn slot(&self, obj: VALUE) -> Option<*mut VALUE> {
            let index = self.index.load(Ordering::Relaxed);
            if index == UNKNOWN
                || rb::heap_class(obj) != Some(self.class.load(Ordering::Relaxed) as VALUE)
            {
                return None;
            }
            if rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT) {
                return None;
            }
            // SAFETY: `obj` is a T_OBJECT; the index is checked against its ivar count before the pointer is formed.
            unsafe {
                let (ptr, len) = ivars(obj);
                (index < len && *ptr.add(index as usize) != QUNDEF).then(|| ptr.add(index as usize))
            }
        }

        /// Learns the index from a value just read with rb_ivar_get: the one slot of `obj` holding exactly that
        /// VALUE. Ambiguous or unset values teach nothing; a later call learns from another value.
        #[cold]
        pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
            if self.index.load(Ordering::Relaxed) != UNKNOWN
                || rb::is_nil(v)
                || rb::heap_class(obj) != Some(self.class.load(Ordering::Relaxed) as VALUE)
                || rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT)
            {
                return;
            }
            // SAFETY: `obj` is a live T_OBJECT; only indices below its ivar count are read.
            let (ptr, len) = unsafe { ivars(obj) };
            let mut found = None;
            for i in 0..len {
                // SAFETY: `i` is below the object's ivar count.
                if unsafe { *ptr.add(i as usize) } == v {
                    if found.is_some() {
                        return;
                    }
                    found = Some(i);
                }
            }
            if let Some(i) = found {
                self.index.store(i, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(ruby_eq_3_3)]
mod ruby_3_3 {
    use super::*;
    use rb_sys::{ruby_value_type, RBasic, RObject};

    pub const UNLEARNED: u64 = u64::MAX;
    const QUNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
    const EMBED_FLAG: VALUE = rb_sys::ruby_robject_flags::ROBJECT_EMBED as VALUE;
    /// 64-bit Ruby 3.3 keeps a 32-bit shape id in RBasic's flags, above this bit (shape.h's SHAPE_FLAG_SHIFT).
    const SHAPE_FLAG_SHIFT: u32 = 32;

    // Exported by libruby 3.3 (RUBY_FUNC_EXPORTED in its shape.h), though not in its installed headers.
    extern "C" {
        fn rb_shape_get_shape_id(obj: VALUE) -> u32;
        fn rb_shape_obj_too_complex(obj: VALUE) -> bool;
    }

    /// Set when the shape id is not where SHAPE_FLAG_SHIFT says (a Ruby built otherwise): from then on, no slot
    /// learns anything and every access goes through rb_ivar_get.
    static LAYOUT_DIFFERS: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);

    /// A T_OBJECT's flags, or None for anything else.
    #[inline(always)]
    fn object_flags(obj: VALUE) -> Option<VALUE> {
        if rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT) {
            return None;
        }
        // SAFETY: `obj` is a live heap object (builtin_type checked it), whose header is an RBasic.
        Some(unsafe { (*(obj as *const RBasic)).flags })
    }

    /// A T_OBJECT's ivar array, as ROBJECT_IVPTR.
    ///
    /// # Safety
    /// `obj` must be a live T_OBJECT with `flags` its flags.
    #[inline(always)]
    unsafe fn ivptr(obj: VALUE, flags: VALUE) -> *mut VALUE {
        let robj = obj as *mut RObject;
        if flags & EMBED_FLAG != 0 {
            (*robj).as_.ary.as_mut_ptr()
        } else {
            (*robj).as_.heap.ivptr
        }
    }

    impl IvarSlot {
        #[inline(always)]
        pub(super) fn slot(&self, obj: VALUE) -> Option<*mut VALUE> {
            let learned = self.shaped.load(Ordering::Relaxed);
            if learned == UNLEARNED {
                return None;
            }
            let flags = object_flags(obj)?;
            if flags >> SHAPE_FLAG_SHIFT != learned >> 32 {
                return None;
            }
            // SAFETY: `obj` has the shape the index was learned in: the shape says the object holds at least
            // index + 1 ivars (a shape's ivars are never removed in place: removing one makes a new shape).
            unsafe {
                let p = ivptr(obj, flags).add((learned & 0xffff_ffff) as usize);
                (*p != QUNDEF).then_some(p)
            }
        }

        /// Learns the index in `obj`'s shape from a value just read with rb_ivar_get: the one slot among the
        /// object's ivars holding exactly that VALUE. Ambiguous or unset values teach nothing; a later call
        /// learns from another value.
        #[cold]
        pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
            if rb::is_nil(v) || LAYOUT_DIFFERS.load(Ordering::Relaxed) {
                return;
            }
            let Some(flags) = object_flags(obj) else {
                return;
            };
            // SAFETY: `obj` is a live T_OBJECT; both functions only read it.
            let (shape, too_complex) =
                unsafe { (rb_shape_get_shape_id(obj), rb_shape_obj_too_complex(obj)) };
            if u64::from(shape) != flags >> SHAPE_FLAG_SHIFT {
                LAYOUT_DIFFERS.store(true, Ordering::Relaxed);
                return;
            }
            if too_complex {
                return; // its ivars live in a hash table, not an array
            }
            // SAFETY: `obj` is a live T_OBJECT; rb_ivar_count is the count of its shape's ivars, all in its array.
            let count = unsafe { rb_sys::rb_ivar_count(obj) } as usize;
            // SAFETY: as above.
            let ptr = unsafe { ivptr(obj, flags) };
            let mut found = None;
            for i in 0..count {
                // SAFETY: `i` is below the object's ivar count.
                if unsafe { *ptr.add(i) } == v {
                    if found.is_some() {
                        return;
                    }
                    found = Some(i as u64);
                }
            }
            if let Some(i) = found {
                self.shaped
                    .store(u64::from(shape) << 32 | i, Ordering::Relaxed);
            }
        }
    }
}
