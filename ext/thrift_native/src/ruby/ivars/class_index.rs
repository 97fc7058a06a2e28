//! Ruby 3.1: an ivar's slot index is a property of the object's class (the class's iv_index_tbl only ever grows, and
//! an index is never reassigned), so an `IvarSlot` learns the index once for its one exact class and then reads the
//! object's ivar array directly (ROBJECT_IVPTR, ROBJECT_NUMIV). Writes go there too, as 3.1's `obj_ivar_set` does
//! once the array is long enough (a slot still Qundef is an ivar not yet set, which the write sets); a shorter
//! array is grown by `rb_ivar_set`. An `IvarStore` is the same index, learned from the first set it makes.

use std::sync::atomic::Ordering;

use rb_sys::{ruby_value_type, RObject, ID, VALUE};

use rb_sys::stable_api::{get_default, StableApiDefinition};

use super::{unique_slot, IvarSite, IvarSlot, IvarStore, Place, UNKNOWN};
use crate::ruby::rb;

/// How many nils a slot walks the ivars for before it learns only from other values.
const NIL_WALKS: u32 = 4;
const QUNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
const SINGLETON_FLAG: VALUE = rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE;
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

    /// Where to write the ivar: its slot once the array reaches it, set or not.
    #[inline(always)]
    pub(super) fn place_to_write(&self, obj: VALUE) -> Place {
        let index = self.index.load(Ordering::Relaxed);
        if index == UNKNOWN || !self.of_class(obj) {
            return Place::Unknown;
        }
        // SAFETY: `obj` is a T_OBJECT; the index is checked against its ivar count before the pointer is formed.
        unsafe {
            let (ptr, len) = ivars(obj);
            if index < len {
                Place::Slot(ptr.add(index as usize))
            } else {
                Place::Unknown
            }
        }
    }

    /// Learns the index from a value just read with rb_ivar_get (or set with rb_ivar_set): the one slot of `obj`
    /// holding exactly that VALUE, or its rank among those that do ([`ranked_slot`], which also tells a nil that is
    /// set from an unset ivar). An unset ivar teaches nothing; a later call learns from another value. A nil is
    /// walked for only a few times: an ivar the class never sets would otherwise cost a walk per read.
    #[cold]
    pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
        if self.index.load(Ordering::Relaxed) != UNKNOWN || !self.of_class(obj) {
            return;
        }
        if rb::is_nil(v) && self.nil_misses.fetch_add(1, Ordering::Relaxed) >= NIL_WALKS {
            return;
        }
        // SAFETY: `obj` is a live T_OBJECT; only indices below its ivar count are read.
        let found = unsafe {
            let (ptr, len) = ivars(obj);
            // A nil may be an unset ivar's, so the one slot holding nil can be another ivar's: only the walk tells.
            let unique = if rb::is_nil(v) {
                None
            } else {
                unique_slot(ptr, len as usize, v)
            };
            unique.or_else(|| ranked_slot(obj, self.id(), v, ptr, len))
        };
        if let Some(i) = found {
            self.index.store(i as u32, Ordering::Relaxed);
        }
    }
}

impl IvarSite {
    /// Aims the slot at `obj`'s class: only a T_OBJECT's, and never a singleton class (which would keep its one
    /// object alive); anything else leaves the slot aimed nowhere, so that it goes through rb_ivar_get.
    #[cold]
    pub(super) fn re_aim(&'static self, obj: VALUE, id: ID) {
        let class = rb::heap_class(obj)
            .filter(|_| rb::builtin_type(obj) == Some(ruby_value_type::RUBY_T_OBJECT))
            // SAFETY: a T_OBJECT's klass is a live class, whose RBasic flags can be read.
            .filter(|&c| unsafe { (*(c as *const rb_sys::RBasic)).flags } & SINGLETON_FLAG == 0)
            .unwrap_or(0);
        if !self.rooted.swap(true, Ordering::Relaxed) {
            // SAFETY: `slot.class` is a static's field (`&'static self`) holding a VALUE or 0, registered once; the
            // GC marks (and pins) what it holds from then on.
            unsafe { rb_sys::rb_gc_register_address(self.slot.class.as_ptr() as *mut VALUE) };
        }
        self.slot.configure(class, id);
    }
}

impl IvarStore {
    /// The direct write, for an unfrozen object of the learned class whose array reaches the learned index.
    #[inline(always)]
    pub(super) fn store(&self, obj: VALUE, v: VALUE) -> bool {
        let index = self.index.load(Ordering::Relaxed);
        if index == UNKNOWN
            || rb::heap_class(obj) != Some(self.class.load(Ordering::Relaxed) as VALUE)
            || rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT)
            || rb::is_frozen(obj)
        {
            return false;
        }
        // SAFETY: `obj` is an unfrozen T_OBJECT of the class the index was learned for, and the index is inside
        // its array; the value is written with its write barrier, as RB_OBJ_WRITE.
        unsafe {
            let (ptr, len) = ivars(obj);
            if index >= len {
                return false;
            }
            get_default().rb_obj_write(obj, ptr.add(index as usize), v);
        }
        true
    }

    /// `rb_ivar_set` on an object known not to be frozen, learning the index from the first T_OBJECT it sets.
    #[cold]
    pub(super) fn set_and_learn(&self, obj: VALUE, v: VALUE) {
        rb::ivar_set_unfrozen(obj, self.id, v);
        if self.index.load(Ordering::Relaxed) != UNKNOWN
            || rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT)
        {
            return;
        }
        let Some(class) = rb::heap_class(obj) else {
            return;
        };
        // SAFETY: `obj` is a live T_OBJECT; only indices below its ivar count are read.
        let found = unsafe {
            let (ptr, len) = ivars(obj);
            unique_slot(ptr, len as usize, v).or_else(|| ranked_slot(obj, self.id, v, ptr, len))
        };
        if let Some(i) = found {
            self.class.store(class as usize, Ordering::Relaxed);
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
