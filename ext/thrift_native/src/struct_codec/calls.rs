//! `klass.new`, `obj.read(prot)` and `obj.write(prot)` as the RPC code makes them (`args_class.new`,
//! `result.read(@iprot)`, `data.write(@oprot)`), without Ruby's dispatch where dispatch would run our own methods:
//! `new` where the class's singleton answers Class#new and the class keeps the library's `initialize`
//! (`initialize::new_plain`), then `read` and `write` of that object while it is still an exact instance of its
//! class and the class keeps the library's `read` and `write` (`owners.rs`) and Thrift::Struct's and Thrift::Union's
//! are ours ([`super::CODEC`]). Anything else is called as before. A backtrace raised inside lacks the native
//! method's line; TracePoint sees no `c_call` for it.

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::codec::check_depth;

use super::field_plan::ClassPlan;
use crate::ruby::names::{NEW, READ, TO_S, WRITE};
use crate::ruby::rb;
use crate::thrift::{errors, thrift};

/// An object the RPC code made with `new`, and its class's plan where it was made without the call.
pub(crate) struct Made {
    pub obj: VALUE,
    plan: Option<&'static ClassPlan>,
}

/// `class.new`.
pub(crate) fn new_instance(class: VALUE) -> Result<Made, Error> {
    let ruby = Ruby::get().expect("called from a Ruby thread");
    if let Some((obj, plan)) = super::initialize::new_plain(&ruby, class)? {
        return Ok(Made {
            obj,
            plan: Some(plan),
        });
    }
    Ok(Made {
        obj: rb::funcall(class, NEW.get(), &[])?,
        plan: None,
    })
}

impl Made {
    /// The plan, where `read` and `write` of the object are still ours to run without a call.
    fn codec_plan(&self) -> Result<Option<&'static ClassPlan>, Error> {
        let Some(plan) = self.plan else {
            return Ok(None);
        };
        let ours = super::CODEC.intact()
            && rb::heap_class(self.obj) == Some(plan.class)
            && plan.owners_now()?.plain_codec();
        Ok(ours.then_some(plan))
    }

    /// Where every `data.send("#{key}=", value)` of the RPC code may be done as the setter does it, without the
    /// call: the object is an exact instance of a class whose setters are all thrift_native's
    /// (`Struct.field_accessor`), whose `instance_variable_set` is Kernel's, `send` Kernel's (`own_send`), and
    /// `Thrift.type_checking` is off (nothing run while the arguments are set can turn it on).
    pub(crate) fn direct_setters(&self, own_send: bool) -> Result<Option<DirectSetters>, Error> {
        let Some(plan) = self.plan else {
            return Ok(None);
        };
        if !own_send || rb::heap_class(self.obj) != Some(plan.class) {
            return Ok(None);
        }
        let found = plan.owners_now()?;
        if !found.plain_setters()
            || !found.plain_collaborators()
            || super::initialize::type_checking()?
        {
            return Ok(None);
        }
        Ok(Some(DirectSetters {
            obj: self.obj,
            plan,
        }))
    }

    /// `obj.read(prot)`.
    pub(crate) fn read(&self, prot: VALUE) -> Result<(), Error> {
        match self.codec_plan()? {
            Some(plan) => {
                let ruby = Ruby::get().expect("called from a Ruby thread");
                // `read(prot)`: the default depth, checked as `parse_args` checks a given one.
                let depth = check_depth(thrift().default_recursion_depth)
                    .map_err(|e| errors::from_core(&ruby, e))?;
                super::read_planned(&ruby, self.obj, plan, prot, depth)
            }
            None => rb::funcall(self.obj, READ.get(), &[prot]).map(drop),
        }
    }

    /// `obj.write(prot)`.
    pub(crate) fn write(&self, prot: VALUE) -> Result<(), Error> {
        match self.codec_plan()? {
            Some(plan) => write_planned(self.obj, plan, prot),
            None => rb::funcall(self.obj, WRITE.get(), &[prot]).map(drop),
        }
    }
}

/// `obj.write(prot)` (the processor's `result.write(oprot)`): without a call where `obj` is an exact instance of a
/// class that keeps the library's `write` (its plan looked up, then taken by the writer).
pub(crate) fn write_object(obj: VALUE, prot: VALUE) -> Result<(), Error> {
    if let Some(plan) = codec_plan_of(obj)? {
        return write_planned(obj, plan, prot);
    }
    rb::funcall(obj, WRITE.get(), &[prot]).map(drop)
}

/// The plan of `obj`'s class where its `read` and `write` are ours to run without a call.
fn codec_plan_of(obj: VALUE) -> Result<Option<&'static ClassPlan>, Error> {
    if rb::is_special_const(obj) || !super::CODEC.intact() {
        return Ok(None);
    }
    // SAFETY: `obj` is a live heap object; rb_obj_class skips a singleton class.
    let class = unsafe { rb_sys::rb_obj_class(obj) };
    if rb::heap_class(obj) != Some(class) {
        return Ok(None);
    }
    let ruby = Ruby::get().expect("called from a Ruby thread");
    // A class with no plan (no FIELDS) is its own `write`'s to fail on.
    let plan = match super::field_plan::plan_for(&ruby, class) {
        Ok(plan) => plan,
        Err(e) if e.is_kind_of(ruby.exception_standard_error()) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(plan.owners_now()?.plain_codec().then_some(plan))
}

/// `write(prot)` with the default depth, for `obj`, an exact instance of `plan`'s class.
fn write_planned(obj: VALUE, plan: &'static ClassPlan, prot: VALUE) -> Result<(), Error> {
    let ruby = Ruby::get().expect("called from a Ruby thread");
    let depth =
        check_depth(thrift().default_recursion_depth).map_err(|e| errors::from_core(&ruby, e))?;
    super::write_known(&ruby, obj, Some(plan), prot, depth, plan.def.is_union())
}

/// A [`Made`] object whose setters the RPC code may do itself (see [`Made::direct_setters`]).
pub(crate) struct DirectSetters {
    obj: VALUE,
    plan: &'static ClassPlan,
}

impl DirectSetters {
    /// `obj.send("#{key}=", value)` as the setter does it (`instance_variable_set("@<name>", value)`), for a key
    /// naming a field as `"#{key}"` would: a static Symbol or an ASCII String while their `to_s` is Ruby's own. False,
    /// with nothing done, for any other key or a frozen object (the setter's call then raises as it raises).
    pub(crate) fn set(&self, key: VALUE, value: VALUE) -> bool {
        let to_s_is_ruby_s = |class| {
            // SAFETY: a live core class; rb_method_basic_definition_p only looks `to_s` up.
            unsafe { rb_sys::rb_method_basic_definition_p(class, TO_S.get()) != 0 }
        };
        let plain_key = if rb::is_static_symbol(key) {
            to_s_is_ruby_s(rb::symbol_class())
        } else {
            rb::is_exact_instance(key, rb::string_class()) && to_s_is_ruby_s(rb::string_class())
        };
        if !plain_key || rb::is_frozen(self.obj) {
            return false;
        }
        let Some(i) = super::initialize::field_of(self.plan, key) else {
            return false;
        };
        rb::ivar_set_unfrozen(self.obj, self.plan.def.fields()[i].extra.ivar, value);
        true
    }
}
