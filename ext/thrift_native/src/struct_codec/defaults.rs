//! Field defaults when a struct is read: what `Thrift::Struct#initialize` sets on a new instance, and the C
//! accelerator's reset of an instance that already has ivars (thrift's `ext/struct.c`, `rb_thrift_struct_read`).

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::names::DUP;
use crate::ruby::rb;
use crate::struct_codec::field_plan::ClassPlan;

/// Fields whose default must still be applied at the end of a fast-path read (they were not on the wire).
/// Up to 64 fields are tracked; a larger struct gets its defaults up front, as on the dispatch path.
#[derive(Debug, Default)]
pub struct PendingDefaults {
    mask: u64,
}

impl PendingDefaults {
    /// The field at `index` was read: its default is not needed.
    #[inline(always)]
    pub fn clear(&mut self, index: usize) {
        if index < 64 {
            self.mask &= !(1u64 << index);
        }
    }

    /// Applies the defaults still pending: `@field = default.dup`.
    pub fn apply(&mut self, obj: VALUE, plan: &ClassPlan) -> Result<(), Error> {
        while self.mask != 0 {
            let i = self.mask.trailing_zeros() as usize;
            self.mask &= !(1u64 << i);
            let f = &plan.def.fields()[i].extra;
            rb::ivar_set(obj, f.ivar, dup_default(f.default)?)?;
        }
        Ok(())
    }
}

/// Gives `obj` its field defaults, as `Thrift::Struct#initialize` (`fresh`: a new instance) or the C accelerator's
/// reset before a read (an instance with ivars). With `defer`, a field with a default gets a nil placeholder now, so
/// that the ivars keep Ruby's order, and its `default.dup` only if the wire does not carry it: no copy is made only
/// to be overwritten.
pub fn apply(
    obj: VALUE,
    plan: &ClassPlan,
    fresh: bool,
    defer: bool,
) -> Result<PendingDefaults, Error> {
    let fields = plan.def.fields();
    let defer = defer && fields.len() <= 64;
    let mut pending = PendingDefaults::default();
    for (i, f) in fields.iter().enumerate() {
        let f = &f.extra;
        if rb::is_nil(f.default) {
            // Reset: a nil default clears the field only if it is set (initialize leaves it alone).
            if !fresh && !rb::is_nil(rb::ivar_get(obj, f.ivar)) {
                rb::ivar_set(obj, f.ivar, rb::QNIL)?;
            }
        } else if defer {
            rb::ivar_set(obj, f.ivar, rb::QNIL)?;
            pending.mask |= 1u64 << i;
        } else {
            rb::ivar_set(obj, f.ivar, dup_default(f.default)?)?;
        }
    }
    Ok(pending)
}

/// `default.dup rescue default` (StandardError only), without a call for values whose dup is themselves.
pub(super) fn dup_default(default: VALUE) -> Result<VALUE, Error> {
    if rb::is_special_const(default)
        || rb::builtin_type(default) == Some(rb_sys::ruby_value_type::RUBY_T_FLOAT)
    {
        return Ok(default);
    }
    match rb::funcall(default, DUP.get(), &[]) {
        Ok(v) => Ok(v),
        Err(e) if e.is_kind_of(Ruby::get().expect("Ruby thread").exception_standard_error()) => {
            Ok(default)
        }
        Err(e) => Err(e),
    }
}
