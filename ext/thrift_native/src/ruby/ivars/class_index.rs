//! Ruby 3.1: an ivar's slot index is a property of the object's class (the class's iv_index_tbl only ever grows, and
//! an index is never reassigned), so an `IvarSlot` learns the index once for its one exact class and then reads the
//! object's ivar array directly (ROBJECT_IVPTR, ROBJECT_NUMIV).

use std::sync::atomic::Ordering;

use rb_sys::{ruby_value_type, RObject, VALUE};

use super::{unique_slot, IvarSlot, Place, UNKNOWN};
use crate::ruby::rb;

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
    // SAFETY: `obj` is a live T_OBJECT (the caller's promise), so it is an RObject.
    unsafe {
        if (*robj).basic.flags & EMBED_FLAG != 0 {
            ((*robj).as_.ary.as_mut_ptr(), EMBED_LEN)
        } else {
            ((*robj).as_.heap.ivptr, (*robj).as_.heap.numiv)
        }
    }
}

impl IvarSlot {
    fn of_class(&self, obj: VALUE) -> bool {
        rb::heap_class(obj) == Some(self.class.load(Ordering::Relaxed) as VALUE)
            && rb::builtin_type(obj) == Some(ruby_value_type::RUBY_T_OBJECT)
    }

    #[inline(always)]
    pub(super) fn place(&self, obj: VALUE) -> Place {
        let index = self.index.load(Ordering::Relaxed);
        if index == UNKNOWN || !self.of_class(obj) {
            return Place::Unknown;
        }
        // SAFETY: `obj` is a T_OBJECT; the index is checked against its ivar count before the pointer is formed.
        unsafe {
            let (ptr, len) = ivars(obj);
            if index < len && *ptr.add(index as usize) != QUNDEF {
                Place::Slot(ptr.add(index as usize))
            } else {
                Place::Unknown
            }
        }
    }

    /// Learns the index from a value just read with rb_ivar_get: the one slot of `obj` holding exactly that VALUE.
    /// Ambiguous or unset values teach nothing; a later call learns from another value.
    #[cold]
    pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
        if self.index.load(Ordering::Relaxed) != UNKNOWN || rb::is_nil(v) || !self.of_class(obj) {
            return;
        }
        // SAFETY: `obj` is a live T_OBJECT; only indices below its ivar count are read.
        let found = unsafe {
            let (ptr, len) = ivars(obj);
            unique_slot(ptr, len as usize, v)
        };
        if let Some(i) = found {
            self.index.store(i as u32, Ordering::Relaxed);
        }
    }
}
