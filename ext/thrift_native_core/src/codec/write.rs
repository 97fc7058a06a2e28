//! Encoding: an [`Inspect`] that reads values back, a [`Sink`] that takes headers and scalars, an [`Encoder`] that
//! turns them into the bytes of one encoding, and the one algorithm between them.

use super::{FieldDef, Kind, Primitive, Scalar, Sequence, StructDef, TypeDesc};
use crate::CoreError;

/// What the encoder walks: a value tree as the host holds it (Ruby objects in the binding).
pub trait Inspect<'d> {
    type Value: Copy;
    type Class: 'd;
    type Field: 'd;
    type Error;

    fn error(&self, e: CoreError) -> Self::Error;
    /// The value's own check before it is written (Ruby's `validate`). Host code.
    fn validate(&mut self, v: Self::Value) -> Result<(), Self::Error>;
    /// The definition of the struct or union `v` is an instance of.
    fn definition(
        &mut self,
        v: Self::Value,
    ) -> Result<&'d StructDef<Self::Class, Self::Field>, Self::Error>;
    /// True when `v` is a union (a nested struct field may hold either).
    fn is_union(&mut self, v: Self::Value) -> Result<bool, Self::Error>;
    /// A struct's field, `None` when unset.
    fn field(
        &self,
        obj: Self::Value,
        index: usize,
        field: &'d FieldDef<Self::Class, Self::Field>,
    ) -> Option<Self::Value>;
    /// A union's set field as it names it (Ruby: `@setfield`) and its value (`@value`).
    fn union_value(&self, obj: Self::Value) -> (Self::Value, Self::Value);
    /// The index of the field a union's name names, when that needs no host code (Ruby: one of the field Symbols).
    fn union_field_by_name(
        &self,
        def: &'d StructDef<Self::Class, Self::Field>,
        name: Self::Value,
    ) -> Option<usize>;
    /// The id of the field a union's name names, asking the union (Ruby: `name_to_id(name.to_s)`). Host code.
    fn union_field_id(
        &mut self,
        obj: Self::Value,
        name: Self::Value,
    ) -> Result<Option<i64>, Self::Error>;
    /// A scalar value as the encoding writes it, when it is one that needs no conversion or check; `None` leaves it
    /// to [`Sink::value`].
    fn primitive(&self, kind: Scalar, v: Self::Value) -> Option<Primitive<'_>>;
    /// The length of a list, or the error for a value that is not one.
    fn list_len(&self, v: Self::Value) -> Result<usize, Self::Error>;
    fn list_item(&self, list: Self::Value, i: usize) -> Result<Self::Value, Self::Error>;
    /// Checks that `v` is a map (before its declaration is looked at).
    fn map_check(&self, v: Self::Value) -> Result<(), Self::Error>;
    fn map_size(&self, v: Self::Value) -> usize;
    /// Calls `f` with every pair. `native`: the sink encodes itself, so no protocol sees how the map is walked
    /// (Ruby: `rb_hash_foreach` instead of the C accelerator's `keys` and `[]`).
    fn each_pair<F>(&mut self, map: Self::Value, native: bool, f: F) -> Result<(), Self::Error>
    where
        F: FnMut(&mut Self, Self::Value, Self::Value) -> Result<(), Self::Error>;
    /// A set whose elements can be walked without host code: what holds them (the set, or a map whose keys they
    /// are) and their count.
    fn set_elements(&self, set: Self::Value) -> Option<(Self::Value, usize)>;
    /// A set's elements as a list (Ruby: an Array as is, `entries`, a Hash's `keys`). Host code.
    fn set_items(&mut self, set: Self::Value) -> Result<Self::Value, Self::Error>;
    /// Calls `f` with every element held by what [`Inspect::set_elements`] gave.
    fn each_set_element<F>(&mut self, elements: Self::Value, f: F) -> Result<(), Self::Error>
    where
        F: FnMut(&mut Self, Self::Value) -> Result<(), Self::Error>;
}

/// Where a struct's headers and scalars go: an encoder's bytes, or a protocol object's methods.
pub trait Sink<V, F> {
    type Error;

    /// True while the sink encodes scalars itself ([`Sink::primitive`]); false when every value goes to
    /// [`Sink::value`] as it is (the protocol's own methods).
    fn native(&self) -> bool;
    /// Runs host code with everything written so far where that code can see it, then picks the transport up again.
    fn host<T>(&mut self, f: impl FnOnce() -> Result<T, Self::Error>) -> Result<T, Self::Error>;
    /// Starts a struct (`obj`, for its class name); returns what [`Sink::struct_end`] puts back.
    fn struct_begin(&mut self, obj: V) -> Result<i64, Self::Error>;
    fn struct_end(&mut self, saved: i64) -> Result<(), Self::Error>;
    /// A field header; `name` is a union's own name for its field, else the declared name is used.
    fn field_begin<C>(
        &mut self,
        field: &FieldDef<C, F>,
        name: Option<V>,
    ) -> Result<(), Self::Error>;
    fn field_end(&mut self) -> Result<(), Self::Error>;
    fn field_stop(&mut self) -> Result<(), Self::Error>;
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), Self::Error>;
    fn map_end(&mut self) -> Result<(), Self::Error>;
    fn list_begin(&mut self, seq: Sequence, element: i64, size: usize) -> Result<(), Self::Error>;
    fn list_end(&mut self, seq: Sequence) -> Result<(), Self::Error>;
    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) -> Result<(), Self::Error>;
    /// A scalar value the sink's protocol must convert and check itself (Ruby: `write_i32(v)` and friends).
    fn value(&mut self, kind: Scalar, v: V) -> Result<(), Self::Error>;
}

/// The bytes of one encoding, appended to a buffer of its own.
pub trait Encoder {
    fn bytes(&mut self) -> &mut Vec<u8>;
    /// Starts a struct; returns what `struct_end` puts back.
    fn struct_begin(&mut self) -> i64;
    fn struct_end(&mut self, saved: i64);
    fn field_begin(&mut self, ttype: i64, id: i64) -> Result<(), CoreError>;
    fn field_stop(&mut self);
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), CoreError>;
    fn list_begin(&mut self, element: i64, size: usize) -> Result<(), CoreError>;
    /// The ends of a field, a map and a list (or set): nothing in the binary and compact encodings.
    fn field_end(&mut self) {}
    fn map_end(&mut self) {}
    fn list_end(&mut self) {}
    /// A scalar of a declared `kind` (a string and a binary are both bytes).
    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>);
}

/// Writes a struct (never a union: see [`write_union`]): validation, then its set fields by ascending id, then STOP.
pub fn write_struct<'d, I, S>(
    values: &mut I,
    sink: &mut S,
    obj: I::Value,
    depth: i64,
) -> Result<(), I::Error>
where
    I: Inspect<'d>,
    S: Sink<I::Value, I::Field, Error = I::Error>,
{
    sink.host(|| values.validate(obj))?;
    let saved = sink.struct_begin(obj)?;
    let def = values.definition(obj)?;
    for (index, field) in def.by_id() {
        let Some(v) = values.field(obj, index, field) else {
            continue;
        };
        write_field(values, sink, field, None, v, depth)?;
    }
    sink.field_stop()?;
    sink.struct_end(saved)
}

/// Writes a union: validation, then its one set field, then STOP.
pub fn write_union<'d, I, S>(
    values: &mut I,
    sink: &mut S,
    obj: I::Value,
    depth: i64,
) -> Result<(), I::Error>
where
    I: Inspect<'d>,
    S: Sink<I::Value, I::Field, Error = I::Error>,
{
    sink.host(|| values.validate(obj))?;
    let saved = sink.struct_begin(obj)?;
    let def = values.definition(obj)?;
    let (name, v) = values.union_value(obj);
    let index = match values.union_field_by_name(def, name) {
        Some(i) => Some(i),
        None => sink
            .host(|| values.union_field_id(obj, name))?
            .and_then(|id| def.find(id)),
    };
    let Some(index) = index else {
        return Err(values.error(CoreError::InvalidUnionField));
    };
    write_field(values, sink, &def.fields()[index], Some(name), v, depth)?;
    sink.field_stop()?;
    sink.struct_end(saved)
}

fn write_field<'d, I, S>(
    values: &mut I,
    sink: &mut S,
    field: &'d FieldDef<I::Class, I::Field>,
    name: Option<I::Value>,
    v: I::Value,
    depth: i64,
) -> Result<(), I::Error>
where
    I: Inspect<'d>,
    S: Sink<I::Value, I::Field, Error = I::Error>,
{
    sink.field_begin(field, name)?;
    write_value(values, sink, &field.ty, v, depth)?;
    sink.field_end()
}

/// One value of a declared type.
pub fn write_value<'d, I, S>(
    values: &mut I,
    sink: &mut S,
    ty: &'d TypeDesc<I::Class>,
    v: I::Value,
    depth: i64,
) -> Result<(), I::Error>
where
    I: Inspect<'d>,
    S: Sink<I::Value, I::Field, Error = I::Error>,
{
    match &ty.kind {
        Kind::Scalar(kind) => {
            if sink.native() {
                if let Some(p) = values.primitive(*kind, v) {
                    return sink.primitive(*kind, p);
                }
            }
            sink.value(*kind, v)
        }
        Kind::Struct(_) => {
            let depth = depth - 1;
            if depth <= 0 {
                return Err(values.error(CoreError::DepthLimit));
            }
            if values.is_union(v)? {
                write_union(values, sink, v, depth)
            } else {
                write_struct(values, sink, v, depth)
            }
        }
        Kind::List(element) => {
            let len = values.list_len(v)?;
            let e = element
                .as_deref()
                .ok_or_else(|| values.error(CoreError::MissingElementType))?;
            sink.list_begin(Sequence::List, e.code, len)?;
            write_items(values, sink, e, v, len, depth)?;
            sink.list_end(Sequence::List)
        }
        Kind::Set(element) => {
            let e = element
                .as_deref()
                .ok_or_else(|| values.error(CoreError::MissingElementType))?;
            if sink.native() {
                if let Some((elements, size)) = values.set_elements(v) {
                    sink.list_begin(Sequence::Set, e.code, size)?;
                    values.each_set_element(elements, |values, item| {
                        write_value(values, sink, e, item, depth)
                    })?;
                    return sink.list_end(Sequence::Set);
                }
            }
            let items = sink.host(|| values.set_items(v))?;
            let len = values.list_len(items)?;
            sink.list_begin(Sequence::Set, e.code, len)?;
            write_items(values, sink, e, items, len, depth)?;
            sink.list_end(Sequence::Set)
        }
        Kind::Map(key, value) => {
            values.map_check(v)?;
            let (k, vt) = key
                .as_deref()
                .zip(value.as_deref())
                .ok_or_else(|| values.error(CoreError::MissingKeyOrValueType))?;
            sink.map_begin(k.code, vt.code, values.map_size(v))?;
            let native = sink.native();
            values.each_pair(v, native, |values, key, item| {
                write_value(values, sink, k, key, depth)?;
                write_value(values, sink, vt, item, depth)
            })?;
            sink.map_end()
        }
        Kind::Unknown => Err(values.error(CoreError::UnknownWriteType(ty.code))),
    }
}

/// A list's items, each read again as it is written: host code run by a nested write may change the list.
fn write_items<'d, I, S>(
    values: &mut I,
    sink: &mut S,
    e: &'d TypeDesc<I::Class>,
    list: I::Value,
    len: usize,
    depth: i64,
) -> Result<(), I::Error>
where
    I: Inspect<'d>,
    S: Sink<I::Value, I::Field, Error = I::Error>,
{
    for i in 0..len {
        let item = values.list_item(list, i)?;
        write_value(values, sink, e, item, depth)?;
    }
    Ok(())
}

/// An encoder is a sink of its own: it writes every primitive, and nothing else (a value it cannot encode, such as
/// a nil inside a container, is [`CoreError::Unencodable`]).
impl<V, F, E: Encoder> Sink<V, F> for E {
    type Error = CoreError;

    fn native(&self) -> bool {
        true
    }

    fn host<T>(&mut self, f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
        f()
    }

    fn struct_begin(&mut self, _obj: V) -> Result<i64, CoreError> {
        Ok(Encoder::struct_begin(self))
    }

    fn struct_end(&mut self, saved: i64) -> Result<(), CoreError> {
        Encoder::struct_end(self, saved);
        Ok(())
    }

    fn field_begin<C>(
        &mut self,
        field: &FieldDef<C, F>,
        _name: Option<V>,
    ) -> Result<(), CoreError> {
        Encoder::field_begin(self, field.ty.code, field.id)
    }

    fn field_end(&mut self) -> Result<(), CoreError> {
        Encoder::field_end(self);
        Ok(())
    }

    fn field_stop(&mut self) -> Result<(), CoreError> {
        Encoder::field_stop(self);
        Ok(())
    }

    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), CoreError> {
        Encoder::map_begin(self, key, value, size)
    }

    fn map_end(&mut self) -> Result<(), CoreError> {
        Encoder::map_end(self);
        Ok(())
    }

    fn list_begin(&mut self, _seq: Sequence, element: i64, size: usize) -> Result<(), CoreError> {
        Encoder::list_begin(self, element, size)
    }

    fn list_end(&mut self, _seq: Sequence) -> Result<(), CoreError> {
        Encoder::list_end(self);
        Ok(())
    }

    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) -> Result<(), CoreError> {
        Encoder::primitive(self, kind, p);
        Ok(())
    }

    fn value(&mut self, _kind: Scalar, _v: V) -> Result<(), CoreError> {
        Err(CoreError::Unencodable)
    }
}
