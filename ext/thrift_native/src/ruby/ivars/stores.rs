//! Setting an ivar the way YJIT's `setinstancevariable` does: an `IvarStore` learns, from one `rb_ivar_set` it
//! watches, the shape an object of its class had before (S), the shape it has after (T) and the ivar's index in T;
//! then for any object of that class in shape S it writes the value at that index and puts T in the object's flags,
//! which is all `rb_ivar_set` does there (3.2-3.4 `rb_obj_ivar_set`, 4.0 `obj_field_set`) once the transition
//! exists. T == S is an ivar the object already has, overwritten in place.
//!
//! Sound because a shape fixes the capacity of the object's array (the shape tree has one root per heap size and
//! records each capacity change), so what fitted one object of shape S fits all of them: a transition is learned
//! only from an object that kept its ivars inside itself before and after (Ruby grows an array by moving it out of
//! the object, never in place there) or from one whose shape did not change. What Ruby also does on that path and
//! this skips: raising for a frozen object (checked here first), the class's `max_iv_count` (a size hint for new
//! objects, raised by the learned set itself, and the store is per class) and shape variations (only counted when a
//! transition is made, never when an existing one is followed).

use std::sync::atomic::Ordering;

use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::{RBasic, VALUE};

use super::shape_id::{flags_shape_id, LAYOUT_DIFFERS, SHAPE_FLAG_SHIFT};
use super::shapes::{layout, object_flags, place_of, Walked};
use super::{IvarStore, UNLEARNED};
use crate::ruby::rb;

const FROZEN: VALUE = rb_sys::ruby_fl_type::RUBY_FL_FREEZE as VALUE;
/// The flags below the shape id (shape.h's SHAPE_FLAG_MASK).
const BELOW_SHAPE: VALUE = (1 << SHAPE_FLAG_SHIFT) - 1;

impl IvarStore {
    /// The direct write, for an object of the learned class in the learned shape S; false for any other.
    #[inline(always)]
    pub(super) fn store(&self, obj: VALUE, v: VALUE) -> bool {
        let learned = self.shapes.load(Ordering::Relaxed);
        if learned == UNLEARNED {
            return false;
        }
        let Some(flags) = object_flags(obj) else {
            return false;
        };
        if u64::from(flags_shape_id(flags)) != learned >> 32 || flags & FROZEN != 0 {
            return false;
        }
        let basic = obj as *mut RBasic;
        // SAFETY: `obj` is a live T_OBJECT (object_flags checked), whose header is an RBasic.
        if unsafe { (*basic).klass } != self.class.load(Ordering::Relaxed) as VALUE {
            return false;
        }
        let to = learned as u32;
        let index = self.index.load(Ordering::Relaxed) as usize;
        // SAFETY: `obj` is an unfrozen T_OBJECT in shape S, whose array has room for T's ivars at the same place
        // (the module doc), so `index` is inside it. The new flags differ only in the shape id; the value is written
        // with its write barrier, as RB_OBJ_WRITE; nothing here allocates, so no GC sees T before the value is in.
        unsafe {
            let slot = layout::ivar_array(obj, flags).add(index);
            (*basic).flags = flags & BELOW_SHAPE | VALUE::from(to) << SHAPE_FLAG_SHIFT;
            get_default().rb_obj_write(obj, slot, v);
        }
        true
    }

    /// `rb_ivar_set` on an object known not to be frozen, learning its transition where one can be.
    #[cold]
    pub(super) fn set_and_learn(&self, obj: VALUE, v: VALUE) {
        let before = self.before(obj);
        rb::ivar_set_unfrozen(obj, self.id, v);
        if let Some(before) = before {
            self.learn(obj, before, v);
        }
    }

    /// The object's flags and shape before the set, if it is a T_OBJECT whose ivars are in its array.
    fn before(&self, obj: VALUE) -> Option<(VALUE, u32)> {
        if LAYOUT_DIFFERS.load(Ordering::Relaxed) {
            return None;
        }
        let flags = object_flags(obj)?;
        let shape = flags_shape_id(flags);
        // SAFETY: `obj` is a live T_OBJECT; libruby's shape function only reads it.
        if unsafe { layout::shape_id(obj) } != shape {
            LAYOUT_DIFFERS.store(true, Ordering::Relaxed);
            return None;
        }
        layout::ivars_in_array(obj, shape).then_some((flags, shape))
    }

    fn learn(&self, obj: VALUE, (before, from): (VALUE, u32), v: VALUE) {
        let Some(flags) = object_flags(obj) else {
            return;
        };
        let to = flags_shape_id(flags);
        // SAFETY: `obj` is a live T_OBJECT; libruby's shape function only reads it.
        if unsafe { layout::shape_id(obj) } != to {
            LAYOUT_DIFFERS.store(true, Ordering::Relaxed);
            return;
        }
        let kept_inside = layout::embedded(before) && layout::embedded(flags);
        if !layout::ivars_in_array(obj, to) || (to != from && !kept_inside) {
            return;
        }
        // SAFETY: `obj` is a live T_OBJECT whose ivars are all in its array (ivars_in_array).
        let array = unsafe { layout::ivar_array(obj, flags) };
        // SAFETY: as above.
        let index = match unsafe { place_of(obj, array, self.id) } {
            // SAFETY: `i` is below the object's ivar count (place_of checked).
            Walked::At(i) if unsafe { *array.add(i) } == v => i,
            _ => return,
        };
        // SAFETY: `obj` is a live T_OBJECT, whose header is an RBasic.
        let class = unsafe { (*(obj as *const RBasic)).klass };
        self.class.store(class as usize, Ordering::Relaxed);
        self.index.store(index as u32, Ordering::Relaxed);
        self.shapes
            .store(u64::from(from) << 32 | u64::from(to), Ordering::Relaxed);
    }
}
