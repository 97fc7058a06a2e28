//! Ruby objects read back for the core's encoder: a struct's ivars, a union's `@setfield`/`@value`, the scalars the
//! fast path can encode without the protocol's checks, and the C accelerator's way through Arrays, Hashes and Sets.

use magnus::rb_sys::protect;
use magnus::{Error, Ruby};
use rb_sys::ruby_value_type::{RUBY_T_ARRAY, RUBY_T_HASH};
use rb_sys::VALUE;
use thrift_native_core::codec::{Inspect, Primitive, Scalar};
use thrift_native_core::{uuid, CoreError};

use super::sets;
use crate::ruby::names::{ENTRIES, IVAR_SETFIELD, IVAR_VALUE, KEYS, NAME_TO_ID, TO_S, VALIDATE};
use crate::ruby::rb;
use crate::struct_codec::field_plan::{plan_for, ClassPlan, FieldPlan, RubyField, StructPlan};
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};

pub struct RubyValues<'r> {
    ruby: &'r Ruby,
    /// For `JsonProtocol`, whose Ruby methods differ: a double field takes only a Float (`write_double` of an
    /// Integer raises), and a string only valid text (`write_json_string` of a broken one raises).
    json: bool,
    /// A bool is true only if it is `true` itself, as the protocol's `write_bool` has it (the compact protocol before
    /// thrift master); else anything truthy is. The C accelerator's struct code calls `write_bool`, so both agree.
    only_true_is_true: bool,
    /// The object whose `validate` was left out (its class's does nothing) and its plan, which `definition` then
    /// answers without looking it up again (no Ruby code ran in between).
    validated: Option<(VALUE, &'static ClassPlan)>,
    /// The object being written and its class's plan, where the caller knew it (the RPC code's `data.write`).
    known: Option<(VALUE, &'static ClassPlan)>,
}

impl<'r> RubyValues<'r> {
    pub fn new(ruby: &'r Ruby) -> Self {
        RubyValues {
            ruby,
            json: false,
            only_true_is_true: false,
            validated: None,
            known: None,
        }
    }

    /// Takes `plan` as the plan of `obj`'s class (no lookup) where `obj` is an exact instance of it.
    pub fn knowing(mut self, obj: VALUE, plan: Option<&'static ClassPlan>) -> Self {
        self.known = plan.map(|plan| (obj, plan));
        self
    }

    /// For the compact encoding: its `write_bool`'s rule of what is true, which the loaded thrift decides.
    pub fn compact(mut self) -> Self {
        self.only_true_is_true = !crate::protocols::compact::writes_truthy_as_true();
        self
    }

    pub fn json(ruby: &'r Ruby) -> Self {
        RubyValues {
            ruby,
            json: true,
            only_true_is_true: false,
            validated: None,
            known: None,
        }
    }
}

fn kind_of(v: VALUE, class: VALUE) -> bool {
    // SAFETY: rb_obj_is_kind_of only walks the class chain.
    unsafe { rb_sys::rb_obj_is_kind_of(v, class) == rb::QTRUE }
}

/// Whether a SET field's value is written as a Set: any Set on thrift master (THRIFT-6104); before, only an instance
/// of exactly `::Set` (`CLASS_OF(v) == rb_cSet`: no subclass, no singleton class).
fn is_set(v: VALUE) -> bool {
    let set = thrift().set_class;
    if thrift().contract.set_subclass_writes {
        kind_of(v, set)
    } else {
        rb::is_exact_instance(v, set)
    }
}

/// The value of an Integer that fits `min..=max`, when it is a Fixnum.
#[inline(always)]
fn fixnum_in(v: VALUE, min: i64, max: i64) -> Option<i64> {
    rb::fixnum_value(v).filter(|n| (min..=max).contains(n))
}

/// A Float's or Fixnum's value as a double (what rb_Float gives for them).
#[inline(always)]
fn plain_double(v: VALUE) -> Option<f64> {
    if let Some(n) = rb::fixnum_value(v) {
        return Some(n as f64);
    }
    rb::float_of(v)
}

impl Inspect<'static> for RubyValues<'_> {
    type Value = VALUE;
    type Class = VALUE;
    type Field = RubyField;
    type Error = Error;

    fn error(&self, e: CoreError) -> Error {
        errors::from_core(self.ruby, e)
    }

    /// `v.validate`, left out where `v`'s class's does nothing (owners.rs; its plan is looked up for that, which
    /// `definition` then takes).
    fn validate(&mut self, v: VALUE) -> Result<(), Error> {
        self.validated = None;
        if !rb::is_special_const(v) {
            // SAFETY: `v` is a live heap object; rb_obj_class skips a singleton class.
            let class = unsafe { rb_sys::rb_obj_class(v) };
            if rb::heap_class(v) == Some(class) {
                let known = self
                    .known
                    .filter(|&(obj, plan)| obj == v && plan.class == class);
                // A class with no plan (no FIELDS) is the library's to fail on, after its `validate`.
                match known.map_or_else(|| plan_for(self.ruby, class), |(_, plan)| Ok(plan)) {
                    Ok(plan) if plan.owners_now()?.empty_validate() => {
                        self.validated = Some((v, plan));
                        return Ok(());
                    }
                    Err(e) if !e.is_kind_of(self.ruby.exception_standard_error()) => return Err(e),
                    _ => {}
                }
            }
        }
        rb::funcall(v, VALIDATE.get(), &[]).map(drop)
    }

    /// The plan of the object's own class (a stubbed object's singleton class finds its class's FIELDS).
    fn definition(&mut self, v: VALUE) -> Result<&'static StructPlan, Error> {
        if let Some((validated, plan)) = self.validated.take() {
            if validated == v {
                return Ok(&plan.def);
            }
        }
        plan_for(self.ruby, rb::heap_class(v).unwrap_or(v)).map(|plan| &plan.def)
    }

    fn is_union(&mut self, v: VALUE) -> Result<bool, Error> {
        Ok(kind_of(v, thrift().union))
    }

    #[inline(always)]
    fn field(&self, obj: VALUE, _index: usize, field: &'static FieldPlan) -> Option<VALUE> {
        let v = field.extra.load.get(obj);
        (!rb::is_nil(v)).then_some(v)
    }

    fn union_value(&self, obj: VALUE) -> (VALUE, VALUE) {
        (
            rb::ivar_get(obj, IVAR_SETFIELD.get()),
            rb::ivar_get(obj, IVAR_VALUE.get()),
        )
    }

    fn union_field_by_name(&self, def: &'static StructPlan, name: VALUE) -> Option<usize> {
        def.fields().iter().position(|f| f.extra.symbol == name)
    }

    /// Not one of the field Symbols: ask the object, as the C accelerator does (`name_to_id(setfield.to_s)`).
    fn union_field_id(&mut self, obj: VALUE, name: VALUE) -> Result<Option<i64>, Error> {
        let name = rb::funcall(name, TO_S.get(), &[])?;
        let id = rb::funcall(obj, NAME_TO_ID.get(), &[name])?;
        Ok(rb::fixnum_value(id))
    }

    /// The common cases, encoded without a call: bools, Fixnums in range, Floats, Strings already in the field's
    /// encoding (UTF-8 for a string field, BINARY for a binary one), UUID text. Everything else (nil, Bignums,
    /// conversions) goes to the protocol's own method, with its checks and exceptions.
    #[inline(always)]
    fn primitive(&self, kind: Scalar, v: VALUE) -> Option<Primitive<'_>> {
        Some(match kind {
            Scalar::Bool => Primitive::Bool(match v {
                rb::QTRUE => true,
                _ if self.only_true_is_true => false,
                _ => rb::truthy(v),
            }),
            Scalar::Byte => Primitive::Byte(fixnum_in(v, i8::MIN.into(), i8::MAX.into())? as i8),
            Scalar::I16 => Primitive::I16(fixnum_in(v, i16::MIN.into(), i16::MAX.into())? as i16),
            Scalar::I32 => Primitive::I32(fixnum_in(v, i32::MIN.into(), i32::MAX.into())? as i32),
            Scalar::I64 => Primitive::I64(rb::fixnum_value(v)?),
            Scalar::Double if self.json => Primitive::Double(rb::float_of(v)?),
            Scalar::Double => Primitive::Double(plain_double(v)?),
            Scalar::String | Scalar::Binary => {
                let plain = match kind {
                    Scalar::String if self.json => bytes::is_valid_utf8_string(v),
                    Scalar::String => bytes::is_utf8_string(v),
                    _ => bytes::is_binary_string(v),
                };
                if !plain {
                    return None;
                }
                // SAFETY: `v` is a String held by the object being written; the sink copies the slice before
                // anything else happens.
                let b = unsafe { rb::str_bytes(v) };
                i32::try_from(b.len()).ok()?;
                Primitive::Bytes(b)
            }
            Scalar::Uuid => {
                if !rb::is_string(v) {
                    return None;
                }
                // SAFETY: `v` is a String; the slice is dropped before returning.
                Primitive::Uuid(uuid::parse(unsafe { rb::str_bytes(v) }).ok()?)
            }
        })
    }

    fn list_len(&self, v: VALUE) -> Result<usize, Error> {
        rb::check_type(v, RUBY_T_ARRAY)?;
        // SAFETY: `v` is an Array.
        Ok(unsafe { rb::array_len(v) })
    }

    fn list_item(&self, list: VALUE, i: usize) -> Result<VALUE, Error> {
        // SAFETY: `list` passed `list_len`, so it is an Array (an object's type never changes); rb_ary_entry answers
        // nil past its end.
        Ok(unsafe { rb::array_entry(list, i) })
    }

    fn map_check(&self, v: VALUE) -> Result<(), Error> {
        rb::check_type(v, RUBY_T_HASH)
    }

    fn map_size(&self, v: VALUE) -> usize {
        // SAFETY: `v` passed `map_check`, so it is a Hash.
        unsafe { rb_sys::rb_hash_size_num(v) as usize }
    }

    /// Natively, `rb_hash_foreach` (no Array of keys); else the C accelerator's walk: `hash.keys`, then `hash[key]`
    /// for each key, fetched before the key is written.
    fn each_pair<F>(&mut self, map: VALUE, native: bool, mut f: F) -> Result<(), Error>
    where
        F: FnMut(&mut Self, VALUE, VALUE) -> Result<(), Error>,
    {
        if native {
            return rb::hash_foreach(map, |key, value| f(self, key, value));
        }
        let keys = rb::funcall(map, KEYS.get(), &[])?;
        let n = self.list_len(keys)?;
        for i in 0..n {
            // SAFETY: `keys` is an Array (checked by list_len); nil past its end.
            let key = unsafe { rb::array_entry(keys, i) };
            // SAFETY: protected; Hash#[] may call the key's Ruby #hash.
            let item = protect(|| unsafe { rb_sys::rb_hash_aref(map, key) })?;
            f(self, key, item)?;
        }
        Ok(())
    }

    fn set_elements(&self, set: VALUE) -> Option<(VALUE, usize)> {
        sets::walkable(set)
    }

    /// The C accelerator's view: an Array as is, a Set's `entries`, a Hash's `keys`; TypeError for anything else.
    fn set_items(&mut self, set: VALUE) -> Result<VALUE, Error> {
        if rb::is_array(set) {
            return Ok(set);
        }
        if is_set(set) {
            return rb::funcall(set, ENTRIES.get(), &[]);
        }
        rb::check_type(set, RUBY_T_HASH)?;
        rb::funcall(set, KEYS.get(), &[])
    }

    fn each_set_element<F>(&mut self, elements: VALUE, mut f: F) -> Result<(), Error>
    where
        F: FnMut(&mut Self, VALUE) -> Result<(), Error>,
    {
        sets::each_element(elements, |item| f(self, item))
    }
}
