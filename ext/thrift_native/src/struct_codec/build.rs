//! The Ruby builder's structs and containers (its scalars: `crate::thrift::values`): what the core's decoder makes
//! as it reads. Structs and unions are allocated (or `new`ed when
//! their class has its own `initialize`), given their defaults, filled ivar by ivar and validated; lists are Arrays
//! reserved as the core says, maps Hashes, sets `::Set`s filled without an intermediate Array (`sets`).

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::codec::{Build, Container, Ran};
use thrift_native_core::CoreError;

use super::defaults::{self, PendingDefaults};
use super::sets;
use crate::ruby::names::{IVAR_SETFIELD, IVAR_VALUE, NEW, VALIDATE};
use crate::ruby::rb;
use crate::struct_codec::field_plan::{plan_for, ClassPlan, FieldPlan, RubyField, StructPlan};
use crate::thrift::errors;
use crate::thrift::thrift;
use crate::thrift::values::RubyBuilder;

/// A struct or union being read.
pub struct RubyStruct {
    obj: VALUE,
    plan: &'static ClassPlan,
    /// Allocated here: nothing but what `initialize` would set has happened to it.
    fresh: bool,
    pending: PendingDefaults,
}

impl RubyStruct {
    /// `obj.read(prot)`: an instance the caller has.
    pub fn existing(obj: VALUE, plan: &'static ClassPlan) -> Self {
        RubyStruct {
            obj,
            plan,
            fresh: false,
            pending: PendingDefaults::default(),
        }
    }
}

impl Build<'static> for RubyBuilder<'_> {
    type Class = VALUE;
    type Field = RubyField;
    type Struct = RubyStruct;
    type List = VALUE;
    type Set = VALUE;
    type Map = VALUE;

    fn instantiate(
        &mut self,
        class: &'static VALUE,
    ) -> Result<(RubyStruct, &'static StructPlan, Ran), Error> {
        let class = *class;
        let plan = plan_for(self.ruby, class)?;
        // Looking the class's methods up again calls Ruby (`instance_method`), as `new` does: either way the source
        // resyncs.
        let (owners, looked_up) = match plan.owners.known() {
            Some(owners) => (owners, false),
            None => (plan.owners_now()?, true),
        };
        // A struct's initialize calls its collaborators: one that is not the library's gets `new`, as the C
        // accelerator calls it.
        let plain =
            owners.plain_initialize() && (plan.def.is_union() || owners.plain_collaborators());
        if !plain {
            let obj = rb::funcall(class, NEW.get(), &[])?;
            return Ok((RubyStruct::existing(obj, plan), &plan.def, Ran::HostCode));
        }
        // SAFETY: protected; rb_obj_alloc runs the class's allocator.
        let obj = protect(|| unsafe { rb_sys::rb_obj_alloc(class) })?;
        if plan.def.is_union() {
            // Thrift::Union#initialize with no arguments.
            rb::ivar_set(obj, IVAR_SETFIELD.get(), rb::QNIL)?;
            rb::ivar_set(obj, IVAR_VALUE.get(), rb::QNIL)?;
        }
        let s = RubyStruct {
            obj,
            plan,
            fresh: true,
            pending: PendingDefaults::default(),
        };
        let ran = if looked_up {
            Ran::HostCode
        } else {
            Ran::OnlyRust
        };
        Ok((s, &plan.def, ran))
    }

    fn struct_begin(&mut self, s: &mut RubyStruct, native: bool) -> Result<(), Error> {
        let (obj, plan) = (s.obj, s.plan);
        let reset = thrift().contract.reused_structs_reset;
        if !s.fresh && !reset {
            // Before thrift master an instance read into kept what the message does not set.
            return Ok(());
        }
        if plan.def.is_union() {
            rb::check_frozen(obj)?;
            for ivar in [IVAR_SETFIELD.get(), IVAR_VALUE.get()] {
                if !rb::is_nil(rb::ivar_get(obj, ivar)) {
                    rb::ivar_set(obj, ivar, rb::QNIL)?;
                }
            }
        } else if s.fresh {
            // Thrift::Struct#initialize would have set the defaults.
            if plan.has_defaults {
                s.pending = defaults::apply(obj, plan, true, native)?;
            }
        } else if !plan.def.fields().is_empty() && rb::ivar_count(obj) > 0 {
            rb::check_frozen(obj)?;
            s.pending = defaults::apply(obj, plan, false, native)?;
        }
        Ok(())
    }

    /// Before thrift master a union's `@setfield` was set before its value was read.
    #[inline(always)]
    fn field_begin(&mut self, s: &mut RubyStruct, field: &'static FieldPlan) -> Result<(), Error> {
        if s.plan.def.is_union() && !thrift().contract.reused_structs_reset {
            rb::ivar_set(s.obj, IVAR_SETFIELD.get(), field.extra.symbol)?;
        }
        Ok(())
    }

    #[inline(always)]
    fn set_field(
        &mut self,
        s: &mut RubyStruct,
        index: usize,
        field: &'static FieldPlan,
        value: VALUE,
    ) -> Result<(), Error> {
        if s.plan.def.is_union() {
            if thrift().contract.reused_structs_reset {
                rb::ivar_set(s.obj, IVAR_SETFIELD.get(), field.extra.symbol)?;
            }
            return rb::ivar_set(s.obj, IVAR_VALUE.get(), value);
        }
        field.extra.store.set(s.obj, value)?;
        s.pending.clear(index);
        Ok(())
    }

    /// Defaults are in place before `validate` runs, and after a failure too (as the C accelerator leaves them).
    fn struct_end(
        &mut self,
        mut s: RubyStruct,
        outcome: Result<(), Error>,
    ) -> Result<VALUE, Error> {
        let applied = s.pending.apply(s.obj, s.plan);
        outcome?;
        applied?;
        // `validate`, unless the object's class's does nothing (owners.rs).
        let empty =
            rb::heap_class(s.obj) == Some(s.plan.class) && s.plan.owners_now()?.empty_validate();
        if !empty {
            rb::funcall(s.obj, VALIDATE.get(), &[])?;
        }
        Ok(s.obj)
    }

    #[inline(always)]
    fn list_new(&mut self, reserve: usize) -> VALUE {
        // SAFETY: rb_ary_new_capa only allocates.
        unsafe { rb_sys::rb_ary_new_capa(reserve as _) }
    }

    #[inline(always)]
    fn list_push(&mut self, list: &mut VALUE, item: VALUE) {
        // SAFETY: `list` is a new, unfrozen Array that no Ruby code has seen.
        unsafe { rb_sys::rb_ary_push(*list, item) };
    }

    #[inline(always)]
    fn list_end(&mut self, list: VALUE) -> VALUE {
        list
    }

    fn set_new(&mut self, _reserve: usize) -> Result<(VALUE, Ran), Error> {
        let set = rb::funcall(thrift().set_class, NEW.get(), &[])?;
        Ok((set, Ran::HostCode))
    }

    fn set_insert(&mut self, set: &mut VALUE, item: VALUE, fresh: bool) -> Result<Ran, Error> {
        sets::insert(*set, item, fresh)
    }

    #[inline(always)]
    fn set_end(&mut self, set: VALUE) -> VALUE {
        set
    }

    #[inline(always)]
    fn map_new(&mut self, _reserve: usize) -> VALUE {
        // SAFETY: rb_hash_new only allocates.
        unsafe { rb_sys::rb_hash_new() }
    }

    #[inline(always)]
    fn map_insert(
        &mut self,
        map: &mut VALUE,
        key: VALUE,
        value: VALUE,
        fresh: bool,
    ) -> Result<Ran, Error> {
        sets::hash_store(*map, key, value, fresh)
    }

    #[inline(always)]
    fn map_end(&mut self, map: VALUE) -> VALUE {
        map
    }

    /// A negative size reaches here only before thrift 0.24. A list or set to read is refused (0.14-0.22:
    /// ArgumentError from `rb_ary_new2`; 0.23: "Negative container size"), and a map too on 0.23; otherwise it is
    /// read as empty.
    fn negative_size(&mut self, container: Container, matched: bool) -> Result<(), Error> {
        let refused = match container {
            Container::List | Container::Set => matched,
            Container::Map => thrift().contract.typed_errors,
        };
        if refused {
            return Err(errors::from_core(
                self.ruby,
                CoreError::NegativeContainerSize,
            ));
        }
        Ok(())
    }
}
