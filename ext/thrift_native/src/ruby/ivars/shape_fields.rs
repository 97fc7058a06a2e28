//! Ruby 4.0: an object's ivars are its "fields", embedded in the object or at `as.heap.fields` (ROBJECT_HEAP,
//! ROBJECT_FIELDS in the public robject.h); libruby exports `rb_obj_shape_id`. The shape id carries flag bits above
//! its 19-bit offset and 3-bit heap index (shape.h's SHAPE_ID_FL_USHIFT, 22): 25 frozen, 26 "has an object_id
//! field", 27 "too complex" (fields in a hash table). A learned shape id is compared whole, flags included, so only
//! objects of exactly that kind match it.
//!
//! Only shapes without either of the last two bits are learned: a too complex object's fields are not an array, and
//! an object_id is a field that rb_ivar_count does not count. Where those bits are is internal to Ruby, so
//! [`verify_layout`] checks them at load time on objects made to have them; until it has, nothing is learned.

use std::sync::atomic::{AtomicBool, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{RArray, Ruby};
use rb_sys::{RObject, VALUE};

use super::shape_id::{flags_shape_id, LAYOUT_DIFFERS};
use crate::ruby::rb;

const HEAP_FLAG: VALUE = rb_sys::ruby_robject_flags::ROBJECT_HEAP as VALUE;
/// shape.h: SHAPE_ID_FL_HAS_OBJECT_ID and SHAPE_ID_FL_TOO_COMPLEX, RBIMPL_SHAPE_ID_FL(4) and (5).
const HAS_OBJECT_ID: u32 = 1 << (22 + 4);
const TOO_COMPLEX: u32 = 1 << (22 + 5);

static VERIFIED_AT_LOAD: AtomicBool = AtomicBool::new(false);

/// Whether [`verify_layout`] found the flag bits where this file says.
pub fn verified() -> bool {
    VERIFIED_AT_LOAD.load(Ordering::Relaxed)
}

extern "C" {
    fn rb_obj_shape_id(obj: VALUE) -> u32;
}

/// # Safety
/// `obj` must be a live T_OBJECT.
#[inline(always)]
pub unsafe fn shape_id(obj: VALUE) -> u32 {
    // SAFETY: the caller's promise; for a T_OBJECT the function only reads its header.
    unsafe { rb_obj_shape_id(obj) }
}

/// True for a shape whose ivars are all of the object's fields, in an array, once the bits are verified.
pub fn ivars_in_array(_obj: VALUE, shape: u32) -> bool {
    VERIFIED_AT_LOAD.load(Ordering::Relaxed) && shape & (HAS_OBJECT_ID | TOO_COMPLEX) == 0
}

/// Whether a T_OBJECT with these flags keeps its fields inside itself (no ROBJECT_HEAP).
#[inline(always)]
pub fn embedded(flags: VALUE) -> bool {
    flags & HEAP_FLAG == 0
}

/// A T_OBJECT's fields, as ROBJECT_FIELDS.
///
/// # Safety
/// `obj` must be a live T_OBJECT with `flags` its flags, not too complex.
#[inline(always)]
pub unsafe fn ivar_array(obj: VALUE, flags: VALUE) -> *mut VALUE {
    let robj = obj as *mut RObject;
    // SAFETY: the caller's promise: `obj` is an RObject.
    unsafe {
        if flags & HEAP_FLAG != 0 {
            (*robj).as_.heap.fields
        } else {
            (*robj).as_.ary.as_mut_ptr()
        }
    }
}

/// Three objects of one new class, each with @a = 1 first: one plain, one given an object_id, one made too complex
/// (a class's ninth shape variation is: SHAPE_MAX_VARIATIONS), with Ruby's performance warning about that silenced.
const PROBE: &str = r#"
  klass = Class.new
  plain = klass.new.tap { |o| o.instance_variable_set(:@a, 1) }
  with_id = klass.new.tap { |o| o.instance_variable_set(:@a, 1) }
  with_id.object_id
  warn_performance = Warning[:performance]
  begin
    Warning[:performance] = false
    complex = (0..9).map { |i| klass.new.tap { |o| o.instance_variable_set(:"@v#{i}", i) } }.last
    complex.instance_variable_set(:@a, 1)
  ensure
    Warning[:performance] = warn_performance
  end
  [plain, with_id, complex]
"#;

/// Checks the flag bits and the fields' place on objects that have them; the fast path learns only if all hold.
pub fn verify_layout(ruby: &Ruby) {
    let Ok(objects) = ruby.eval::<RArray>(PROBE) else {
        return;
    };
    let objects = objects.as_raw();
    let shapes: Vec<(VALUE, u32, VALUE)> = (0..3)
        .map(|i| {
            // SAFETY: `objects` is the probe's Array of three live T_OBJECTs, on this stack while they are read;
            // nothing here allocates.
            unsafe {
                let obj = rb::array_entry(objects, i);
                (obj, shape_id(obj), (*(obj as *const rb_sys::RBasic)).flags)
            }
        })
        .collect();
    let [(plain, plain_shape, plain_flags), (_, with_id, _), (_, complex, _)] = shapes[..] else {
        return;
    };
    let one = rb::integer(1);
    let bits_hold = plain_shape & (HAS_OBJECT_ID | TOO_COMPLEX) == 0
        && with_id & (HAS_OBJECT_ID | TOO_COMPLEX) == HAS_OBJECT_ID
        && complex & TOO_COMPLEX != 0
        && flags_shape_id(plain_flags) == plain_shape
        // SAFETY: `plain` is a live T_OBJECT, not too complex (just checked), with one ivar.
        && unsafe { *ivar_array(plain, plain_flags) } == one;
    if bits_hold {
        VERIFIED_AT_LOAD.store(true, Ordering::Relaxed);
    } else {
        LAYOUT_DIFFERS.store(true, Ordering::Relaxed);
    }
}
