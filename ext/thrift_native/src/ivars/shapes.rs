//! Ruby 3.2 and later keep an object's ivars in an array whose layout its shape fixes for good: a shape's ivars are
//! never removed in place (removing one makes a new shape). An `IvarSlot` remembers the index of its ivar in the
//! last shape it met and reads or writes the array directly for an object of that very shape. 64-bit Rubies keep the
//! 32-bit shape id in RBasic's flags, above bit 32 (shape.h's SHAPE_FLAG_SHIFT); the first object learned from checks
//! that against libruby's own answer, and a Ruby built otherwise never learns anything.
//!
//! What differs between versions is where the array is, how libruby tells an object's shape and which objects keep
//! their ivars elsewhere (a "too complex" object's are in a hash table): [`ivptr`] for 3.2-3.4 here,
//! [`super::shape_fields`] for 4.0.

use std::sync::atomic::{AtomicBool, Ordering};

use rb_sys::{ruby_value_type, RBasic, VALUE};

use super::{unique_slot, IvarSlot, UNLEARNED};
use crate::rb;

#[cfg(ivar_layout = "shape_fields")]
use super::shape_fields as layout;
#[cfg(ivar_layout = "shapes")]
use ivptr as layout;

const QUNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
const SHAPE_FLAG_SHIFT: u32 = 32;

/// Set when libruby's shape id is not where SHAPE_FLAG_SHIFT says, or (4.0) its flag bits are not where
/// `shape_fields` expects: from then on no slot learns anything and every access goes through rb_ivar_get.
pub(super) static LAYOUT_DIFFERS: AtomicBool = AtomicBool::new(false);

/// The layout's name, unless libruby was found to differ from it (or, on 4.0, not yet verified).
pub(super) fn access() -> &'static str {
    if LAYOUT_DIFFERS.load(Ordering::Relaxed) || !layout::verified() {
        return "rb_ivar_get";
    }
    if cfg!(ivar_layout = "shapes") {
        "shapes"
    } else {
        "shape_fields"
    }
}

/// A T_OBJECT's flags, or None for anything else.
#[inline(always)]
fn object_flags(obj: VALUE) -> Option<VALUE> {
    if rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT) {
        return None;
    }
    // SAFETY: `obj` is a live heap object (builtin_type checked it), whose header is an RBasic.
    Some(unsafe { (*(obj as *const RBasic)).flags })
}

/// The shape id in a T_OBJECT's flags.
#[inline(always)]
pub(super) fn flags_shape_id(flags: VALUE) -> u32 {
    (flags >> SHAPE_FLAG_SHIFT) as u32
}

impl IvarSlot {
    #[inline(always)]
    pub(super) fn slot(&self, obj: VALUE) -> Option<*mut VALUE> {
        let learned = self.shaped.load(Ordering::Relaxed);
        if learned == UNLEARNED {
            return None;
        }
        let flags = object_flags(obj)?;
        if u64::from(flags_shape_id(flags)) != learned >> 32 {
            return None;
        }
        // SAFETY: `obj` has the shape the index was learned in, which says the object holds at least index + 1
        // ivars in its array (a shape that keeps them elsewhere is never learned).
        unsafe {
            let p = layout::ivar_array(obj, flags).add((learned & 0xffff_ffff) as usize);
            (*p != QUNDEF).then_some(p)
        }
    }

    /// Learns the index in `obj`'s shape from a value just read with rb_ivar_get: the one slot among the object's
    /// ivars holding exactly that VALUE. Ambiguous or unset values teach nothing; a later call learns from another
    /// value.
    #[cold]
    pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
        if rb::is_nil(v) || LAYOUT_DIFFERS.load(Ordering::Relaxed) {
            return;
        }
        let Some(flags) = object_flags(obj) else {
            return;
        };
        // SAFETY: `obj` is a live T_OBJECT; libruby's shape function only reads it.
        let shape = unsafe { layout::shape_id(obj) };
        if shape != flags_shape_id(flags) {
            LAYOUT_DIFFERS.store(true, Ordering::Relaxed);
            return;
        }
        if !layout::ivars_in_array(obj, shape) {
            return;
        }
        // SAFETY: `obj` is a live T_OBJECT whose ivars are all in its array: rb_ivar_count of them.
        let found = unsafe {
            let count = rb_sys::rb_ivar_count(obj) as usize;
            unique_slot(layout::ivar_array(obj, flags), count, v)
        };
        if let Some(i) = found {
            self.shaped
                .store(u64::from(shape) << 32 | i as u64, Ordering::Relaxed);
        }
    }
}

/// Ruby 3.2-3.4: the ivars are embedded in the object (ROBJECT_EMBED) or at `as.heap.ivptr`; libruby exports its
/// shape functions (RUBY_FUNC_EXPORTED in shape.h, though not in the installed headers).
#[cfg(ivar_layout = "shapes")]
mod ivptr {
    use rb_sys::{RObject, VALUE};

    const EMBED_FLAG: VALUE = rb_sys::ruby_robject_flags::ROBJECT_EMBED as VALUE;

    /// Nothing to verify at load time: the first object learned from checks the shape id's place.
    pub fn verified() -> bool {
        true
    }

    extern "C" {
        fn rb_shape_get_shape_id(obj: VALUE) -> u32;
        fn rb_shape_obj_too_complex(obj: VALUE) -> bool;
    }

    /// # Safety
    /// `obj` must be a live T_OBJECT.
    #[inline(always)]
    pub unsafe fn shape_id(obj: VALUE) -> u32 {
        // SAFETY: the caller's promise; the function only reads the object's header.
        unsafe { rb_shape_get_shape_id(obj) }
    }

    /// False for a too complex object, whose ivars are in a hash table.
    pub fn ivars_in_array(obj: VALUE, _shape: u32) -> bool {
        // SAFETY: `obj` is a live T_OBJECT (the caller checked); the function only reads its shape.
        !unsafe { rb_shape_obj_too_complex(obj) }
    }

    /// A T_OBJECT's ivar array, as ROBJECT_IVPTR.
    ///
    /// # Safety
    /// `obj` must be a live T_OBJECT with `flags` its flags, not too complex.
    #[inline(always)]
    pub unsafe fn ivar_array(obj: VALUE, flags: VALUE) -> *mut VALUE {
        let robj = obj as *mut RObject;
        // SAFETY: the caller's promise: `obj` is an RObject.
        unsafe {
            if flags & EMBED_FLAG != 0 {
                (*robj).as_.ary.as_mut_ptr()
            } else {
                (*robj).as_.heap.ivptr
            }
        }
    }
}
