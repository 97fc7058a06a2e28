//! Ruby 3.2 and later keep an object's ivars in an array whose layout its shape fixes for good: a shape's ivars are
//! never removed in place (removing one makes a new shape from 3.3 on; 3.2 leaves a hole, which `place_of` sees).
//! An `IvarSlot` remembers the index of its ivar in the last shape it met and reads or writes the array directly for
//! an object of that very shape. 64-bit Rubies keep the
//! 32-bit shape id in RBasic's flags, above bit 32 (shape.h's SHAPE_FLAG_SHIFT); the first object learned from checks
//! that against libruby's own answer, and a Ruby built otherwise never learns anything.
//!
//! What differs between versions is where the array is, how libruby tells an object's shape and which objects keep
//! their ivars elsewhere (a "too complex" object's are in a hash table): [`ivptr`] for 3.2-3.4 here,
//! [`super::shape_fields`] for 4.0.

use std::sync::atomic::Ordering;

use std::os::raw::c_int;

use rb_sys::{ruby_value_type, RBasic, ID, VALUE};

use super::shape_id::{flags_shape_id, LAYOUT_DIFFERS};
use super::{IvarSlot, Place, ABSENT, UNLEARNED};
use crate::ruby::rb;

#[cfg(ivar_layout = "shape_fields")]
pub(super) use super::shape_fields as layout;
#[cfg(ivar_layout = "shapes")]
pub(super) use ivptr as layout;

const QUNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;

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
pub(super) fn object_flags(obj: VALUE) -> Option<VALUE> {
    if rb::builtin_type(obj) != Some(ruby_value_type::RUBY_T_OBJECT) {
        return None;
    }
    // SAFETY: `obj` is a live heap object (builtin_type checked it), whose header is an RBasic.
    Some(unsafe { (*(obj as *const RBasic)).flags })
}

impl IvarSlot {
    #[inline(always)]
    pub(super) fn place(&self, obj: VALUE) -> Place {
        let learned = self.shaped.load(Ordering::Relaxed);
        if learned == UNLEARNED {
            return Place::Unknown;
        }
        let Some(flags) = object_flags(obj) else {
            return Place::Unknown;
        };
        if u64::from(flags_shape_id(flags)) != learned >> 32 {
            return Place::Unknown;
        }
        let index = learned & 0xffff_ffff;
        if index == ABSENT {
            return Place::Absent;
        }
        // SAFETY: `obj` has the shape the index was learned in, which says the object holds at least index + 1
        // ivars in its array (a shape that keeps them elsewhere is never learned).
        unsafe {
            let p = layout::ivar_array(obj, flags).add(index as usize);
            if *p != QUNDEF {
                Place::Slot(p)
            } else {
                Place::Unknown
            }
        }
    }

    /// Where to write the ivar: where it is (an absent one is added by rb_ivar_set, a new shape).
    #[inline(always)]
    pub(super) fn place_to_write(&self, obj: VALUE) -> Place {
        self.place(obj)
    }

    /// Learns the ivar's index in `obj`'s shape: its place among the object's ivars as `rb_ivar_foreach` walks them
    /// (in index order: a shape's ivars from the root down), each checked against the array ([`place_of`]). So an
    /// ivar holding nil, or a value another ivar holds too, is learned as well; `v`, what rb_ivar_get just returned,
    /// must be in the place found.
    #[cold]
    pub(super) fn learn(&self, obj: VALUE, v: VALUE) {
        if LAYOUT_DIFFERS.load(Ordering::Relaxed) {
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
        // SAFETY: `obj` is a live T_OBJECT whose ivars are all in its array, rb_ivar_count of them.
        let learned = match unsafe { place_of(obj, layout::ivar_array(obj, flags), self.id()) } {
            // SAFETY: `i` is below the object's ivar count (place_of checked).
            Walked::At(i) if unsafe { *layout::ivar_array(obj, flags).add(i) } == v => i as u64,
            Walked::Absent if rb::is_nil(v) => ABSENT,
            _ => return,
        };
        self.shaped
            .store(u64::from(shape) << 32 | learned, Ordering::Relaxed);
    }
}

/// What [`place_of`] found.
pub(super) enum Walked {
    At(usize),
    /// Every ivar walked, all in their places, and none was the one sought.
    Absent,
    /// The walk and the array disagree.
    Unknown,
}

/// What [`place_of`] hands `rb_ivar_foreach`'s callback.
struct Walk {
    id: ID,
    array: *const VALUE,
    count: usize,
    place: usize,
    found: Option<usize>,
    agrees: bool,
}

/// One ivar of the walk: the one sought ends it with its place; any whose value is not the array's at its place (a
/// walk not in index order, or a removed ivar's hole) ends it with nothing.
///
/// # Safety
/// `arg` must be the address of the live `Walk` that `place_of` passes, whose `array` holds `count` VALUEs.
unsafe extern "C" fn walk_ivar(key: ID, value: VALUE, arg: rb_sys::st_data_t) -> c_int {
    const ST_CONTINUE: c_int = 0;
    const ST_STOP: c_int = 1;
    // SAFETY: the caller's promise.
    let walk = unsafe { &mut *(arg as *mut Walk) };
    // SAFETY: `place` is checked against `count` first.
    if walk.place >= walk.count || unsafe { *walk.array.add(walk.place) } != value {
        walk.agrees = false;
        return ST_STOP;
    }
    if key == walk.id {
        walk.found = Some(walk.place);
        return ST_STOP;
    }
    walk.place += 1;
    ST_CONTINUE
}

/// The index of ivar `id` in a T_OBJECT's ivar array, or that it has none, where the walk of its ivars agrees with
/// the array (each in its place, as many as rb_ivar_count says).
///
/// # Safety
/// `obj` must be a live T_OBJECT whose ivars are all in `array` (not too complex).
pub(super) unsafe fn place_of(obj: VALUE, array: *const VALUE, id: ID) -> Walked {
    let mut walk = Walk {
        id,
        array,
        // SAFETY: the caller's promise; rb_ivar_count only reads the object's shape.
        count: unsafe { rb_sys::rb_ivar_count(obj) } as usize,
        place: 0,
        found: None,
        agrees: true,
    };
    // SAFETY: for a T_OBJECT, rb_ivar_foreach only walks its shape and calls `walk_ivar` (which runs no Ruby code and
    // cannot raise) with `walk`, which outlives the call.
    unsafe {
        rb_sys::rb_ivar_foreach(
            obj,
            Some(walk_ivar),
            &mut walk as *mut Walk as rb_sys::st_data_t,
        )
    };
    match walk.found {
        Some(i) => Walked::At(i),
        None if walk.agrees && walk.place == walk.count => Walked::Absent,
        None => Walked::Unknown,
    }
}

/// Ruby 3.2-3.4: the ivars are embedded in the object (ROBJECT_EMBED) or at `as.heap.ivptr`; libruby exports its
/// shape functions (RUBY_FUNC_EXPORTED in shape.h, though not in the installed headers).
#[cfg(ivar_layout = "shapes")]
pub(super) mod ivptr {
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

    /// Whether a T_OBJECT with these flags keeps its ivars inside itself (ROBJECT_EMBED).
    #[inline(always)]
    pub fn embedded(flags: VALUE) -> bool {
        flags & EMBED_FLAG != 0
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
