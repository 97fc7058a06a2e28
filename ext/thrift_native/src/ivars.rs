//! Instance-variable access for the hot paths.
//!
//! On Ruby 3.1 `rb_ivar_get` takes the VM lock and does a hash lookup per call (about 17 ns here, most of a
//! primitive read). An ivar's slot index is a property of the object's class there (the class's iv_index_tbl only
//! ever grows, and an index is never reassigned), so an `IvarSlot` learns the index once for one exact class and
//! then reads the object's ivar array directly. Every other Ruby, every other class, and any object whose array is
//! too short or holds Qundef there, goes through `rb_ivar_get`/`rb_ivar_set`.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use rb_sys::{ID, VALUE};

use crate::rb;

const UNKNOWN: u32 = u32::MAX;

pub struct IvarSlot {
    class: AtomicUsize,
    id: AtomicUsize,
    index: AtomicU32,
}

impl IvarSlot {
    pub const fn new() -> Self {
        IvarSlot {
            class: AtomicUsize::new(0),
            id: AtomicUsize::new(0),
            index: AtomicU32::new(UNKNOWN),
        }
    }

    /// Binds the slot to `@name` of instances of exactly `class` (a pinned class).
    pub fn configure(&self, class: VALUE, id: ID) {
        self.class.store(class as usize, Ordering::Relaxed);
        self.id.store(id as usize, Ordering::Relaxed);
        self.index.store(UNKNOWN, Ordering::Relaxed);
    }

    #[inline(always)]
    fn id(&self) -> ID {
        self.id.load(Ordering::Relaxed) as ID
    }

    /// The ivar's value (nil when unset), as `rb_ivar_get`.
    #[inline(always)]
    pub fn get(&self, obj: VALUE) -> VALUE {
        #[cfg(ruby_eq_3_1)]
        if let Some(v) = self.read_slot(obj) {
            return v;
        }
        let v = rb::ivar_get(obj, self.id());
        #[cfg(ruby_eq_3_1)]
        self.learn(obj, v);
        v
    }

    /// Stores an immediate value (a Fixnum) into an object known not to be frozen.
    #[inline(always)]
    pub fn set_immediate_unfrozen(&self, obj: VALUE, v: VALUE) {
        debug_assert!(rb::is_special_const(v));
        #[cfg(ruby_eq_3_1)]
        if self.write_slot(obj, v) {
            return;
        }
        rb::ivar_set_unfrozen(obj, self.id(), v);
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
        fn slot(&self, obj: VALUE) -> Option<*mut VALUE> {
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

        #[inline(always)]
        pub(super) fn read_slot(&self, obj: VALUE) -> Option<VALUE> {
            // SAFETY: `slot` returns a pointer into obj's live ivar array.
            self.slot(obj).map(|p| unsafe { *p })
        }

        /// An immediate needs no write barrier: it is not a heap reference the GC must learn about.
        #[inline(always)]
        pub(super) fn write_slot(&self, obj: VALUE, v: VALUE) -> bool {
            match self.slot(obj) {
                Some(p) => {
                    // SAFETY: `p` points into obj's ivar array, obj is not frozen, and `v` is an immediate.
                    unsafe { *p = v };
                    true
                }
                None => false,
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
