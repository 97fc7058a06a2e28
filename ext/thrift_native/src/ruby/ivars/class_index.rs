//! Ruby 3.1: an ivar's slot index is a property of the object's class (the class's iv_index_tbl only ever grows, and
//! an index is never reassigned), so an `IvarSlot` learns the index once for its one exact class and then reads the
//! object's ivar array directly (ROBJECT_IVPTR, ROBJECT_NUMIV).

use std::sync::atomic::Ordering;

use rb_sys::{ruby_value_type, RObject, ID, VALUE};

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
            unique_slot(ptr, len as usize, v).or_else(|| ranked_slot(obj, self.id(), v, ptr, len))
        };
        if let Some(i) = found {
            self.index.store(i as u32, Ordering::Relaxed);
        }
    }
}

/// The slot of ivar `id`, holding `v`, where other ivars hold `v` too (FramedTransport's `@read` and `@write`, both
/// true): `rb_ivar_foreach` walks a T_OBJECT's ivars in index order (the class's iv_index_tbl, in insertion order,
/// each entry's index the table's size when it was added), skipping only unset ones, so `id`'s rank among the ivars
/// holding `v` is its slot's rank among the slots holding `v`.
///
/// # Safety
/// `obj` must be a live T_OBJECT whose ivar array is (`ptr`, `len`).
unsafe fn ranked_slot(obj: VALUE, id: ID, v: VALUE, ptr: *const VALUE, len: u32) -> Option<usize> {
    struct Rank {
        id: ID,
        v: VALUE,
        before: usize,
        found: bool,
    }
    unsafe extern "C" fn each(name: ID, val: VALUE, arg: rb_sys::st_data_t) -> std::os::raw::c_int {
        // SAFETY: `arg` is the `Rank` on ranked_slot's stack, alive for the walk.
        let rank = unsafe { &mut *(arg as *mut Rank) };
        if val != rank.v {
            return rb_sys::st_retval::ST_CONTINUE as _;
        }
        if name == rank.id {
            rank.found = true;
            return rb_sys::st_retval::ST_STOP as _;
        }
        rank.before += 1;
        rb_sys::st_retval::ST_CONTINUE as _
    }
    let mut rank = Rank {
        id,
        v,
        before: 0,
        found: false,
    };
    // SAFETY: `obj` is a live T_OBJECT; the callback only compares what it is handed (no Ruby code, no allocation).
    unsafe {
        rb_sys::rb_ivar_foreach(obj, Some(each), &mut rank as *mut Rank as rb_sys::st_data_t)
    };
    if !rank.found {
        return None;
    }
    // SAFETY: indices below `len` (the caller's ivar count).
    (0..len as usize)
        .filter(|&i| unsafe { *ptr.add(i) } == v)
        .nth(rank.before)
}
