//! `klass.new`, `obj.read(prot)` and `obj.write(prot)` as the RPC code makes them (`args_class.new`,
//! `result.read(@iprot)`, `data.write(@oprot)`), without Ruby's dispatch where dispatch would run our own methods:
//! `new` where the class's singleton answers Class#new and the class keeps the library's `initialize`
//! (`initialize::new_plain`), then `read` and `write` of that object while it is still an exact instance of its
//! class and the class keeps the library's `read` and `write` (`owners.rs`) and Thrift::Struct's and Thrift::Union's
//! are ours ([`super::CODEC`]). Anything else is called as before. A backtrace raised inside lacks the native
//! method's line; TracePoint sees no `c_call` for it.
//!
//! [`ReusedArgs`]: the client's call arguments set on, and written from, one instance of the args class that the
//! class's plan keeps, where a new instance would be made, set and written without any Ruby code seeing it: no
//! struct per call. `ObjectSpace.each_object(args_class)` finds that instance (its fields nil between calls, set
//! afresh by each call; frozen or extended there, it is replaced by a new one).

use std::sync::atomic::Ordering;

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::codec::check_depth;

use super::field_plan::ClassPlan;
use crate::ruby::names::{NEW, READ, SEND, TO_S, WRITE};
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
    // A class with no plan (no FIELDS) is its own `write`'s to fail on.
    let Some(plan) = plan_if_any(class)? else {
        return Ok(None);
    };
    Ok(plan.owners_now()?.plain_codec().then_some(plan))
}

/// `class`'s plan, or None for a class the plan cannot be made of (a StandardError, which its own methods will
/// raise where they need FIELDS).
fn plan_if_any(class: VALUE) -> Result<Option<&'static ClassPlan>, Error> {
    let ruby = Ruby::get().expect("called from a Ruby thread");
    match super::field_plan::plan_for(&ruby, class) {
        Ok(plan) => Ok(Some(plan)),
        Err(e) if e.is_kind_of(ruby.exception_standard_error()) => Ok(None),
        Err(e) => Err(e),
    }
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
        self.plan.def.fields()[i]
            .extra
            .load
            .set_unfrozen(self.obj, value);
        true
    }
}

/// A call's arguments set on the args class's reused instance ([`ClassPlan::args_instance`]) instead of a new one:
/// `data = args_class.new; args.each { |k, v| data.send("#{k}=", v) }; data.write(prot)` gives the same bytes,
/// errors and calls when `new` would set no field and run no Ruby code (`initialize::new_sets_nothing`), every
/// setter is the plain one and type checking is off (what [`Made::direct_setters`] asks), every key names a field as
/// [`DirectSetters::set`] decides it, and `write` is ours with an empty `validate`, so that no Ruby code is ever
/// handed the instance. Emptied (its fields nil) and given back when dropped.
pub(crate) struct ReusedArgs {
    obj: VALUE,
    plan: &'static ClassPlan,
    /// Handed to Ruby code (see [`ReusedArgs::write`]): no longer the plan's.
    given_up: bool,
}

impl ReusedArgs {
    /// The instance with the arguments set, or None (nothing done) where a new instance must be made. `args` is a
    /// plain Hash (`args.each` is Hash's).
    pub(crate) fn fill(args_class: VALUE, args: VALUE) -> Result<Option<ReusedArgs>, Error> {
        use super::initialize::{field_of, new_sets_nothing, type_checking_off, MAX_KEYS};
        if rb::builtin_type(args_class) != Some(rb_sys::ruby_value_type::RUBY_T_CLASS)
            || !super::CODEC.intact()
        {
            return Ok(None);
        }
        let basic = |class, id| {
            // SAFETY: a live class; rb_method_basic_definition_p only looks the method up.
            unsafe { rb_sys::rb_method_basic_definition_p(class, id) != 0 }
        };
        if !rb::heap_class(args_class).is_some_and(|meta| basic(meta, NEW.get()))
            || !basic(args_class, SEND.get())
            || !type_checking_off()
        {
            return Ok(None);
        }
        let Some(plan) = plan_if_any(args_class)? else {
            return Ok(None);
        };
        let found = plan.owners_now()?;
        if !new_sets_nothing(args_class, plan, found)
            || !found.plain_setters()
            || !found.plain_codec()
            || !found.empty_validate()
            || !basic(rb::symbol_class(), TO_S.get())
            || !basic(rb::string_class(), TO_S.get())
        {
            return Ok(None);
        }
        let mut pairs = [(rb::QNIL, rb::QNIL); MAX_KEYS];
        // SAFETY: `args` is a Hash (the caller's check).
        let Some(n) = (unsafe { rb::hash_pairs(args, &mut pairs) }) else {
            return Ok(None);
        };
        let mut named = [0usize; MAX_KEYS];
        for (slot, &(key, _)) in named.iter_mut().zip(&pairs[..n]) {
            let plain = rb::is_static_symbol(key) || rb::is_exact_instance(key, rb::string_class());
            match field_of(plan, key).filter(|_| plain) {
                Some(i) => *slot = i,
                None => return Ok(None),
            }
        }
        let instance = &plan.args_instance;
        if instance.busy.swap(true, Ordering::Relaxed) {
            return Ok(None);
        }
        let mut obj = instance.obj.load(Ordering::Relaxed) as VALUE;
        // Reachable through ObjectSpace, it may have been frozen or extended since: then a new one replaces it.
        if obj != 0 && !untouched(obj, plan) {
            obj = 0;
        }
        if obj == 0 {
            // SAFETY: protected; `args_class` is a class with a plan (its instances are T_OBJECTs).
            match magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_alloc(args_class) }) {
                Ok(made) => obj = made,
                Err(e) => {
                    instance.busy.store(false, Ordering::Relaxed);
                    return Err(e);
                }
            }
            instance.obj.store(obj as usize, Ordering::Relaxed);
        }
        // The instance is unfrozen (`untouched`, or just made); each set goes through the field's slot once it is
        // learned (the instance keeps its ivars from call to call).
        let fields = plan.def.fields();
        for f in fields {
            f.extra.load.set_unfrozen(obj, rb::QNIL);
        }
        for (&(_, value), &i) in pairs[..n].iter().zip(&named) {
            fields[i].extra.load.set_unfrozen(obj, value);
        }
        Ok(Some(ReusedArgs {
            obj,
            plan,
            given_up: false,
        }))
    }

    /// `data.write(prot)`. Where Ruby code run since [`ReusedArgs::fill`] (master's `next_seqid!`) changed the class's
    /// `write` or `validate`, or extended the instance, the instance is the library's to write, and given up: it is
    /// never reused.
    pub(crate) fn write(&mut self, prot: VALUE) -> Result<(), Error> {
        let found = self.plan.owners_now()?;
        if super::CODEC.intact()
            && found.plain_codec()
            && found.empty_validate()
            && rb::heap_class(self.obj) == Some(self.plan.class)
        {
            return write_planned(self.obj, self.plan, prot);
        }
        self.given_up = true;
        let instance = &self.plan.args_instance;
        instance.obj.store(0, Ordering::Relaxed);
        instance.busy.store(false, Ordering::Relaxed);
        rb::funcall(self.obj, WRITE.get(), &[prot]).map(drop)
    }
}

impl Drop for ReusedArgs {
    fn drop(&mut self) {
        if self.given_up {
            return;
        }
        let instance = &self.plan.args_instance;
        if untouched(self.obj, self.plan) {
            for f in self.plan.def.fields() {
                f.extra.load.set_unfrozen(self.obj, rb::QNIL);
            }
        } else {
            instance.obj.store(0, Ordering::Relaxed);
        }
        instance.busy.store(false, Ordering::Relaxed);
    }
}

/// The reused instance is still a plain, unfrozen instance of its class (nothing froze or extended it).
fn untouched(obj: VALUE, plan: &ClassPlan) -> bool {
    rb::heap_class(obj) == Some(plan.class) && !rb::is_frozen(obj)
}
