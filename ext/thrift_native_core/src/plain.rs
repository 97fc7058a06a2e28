//! The struct codec over plain Rust values and byte slices: what the cargo tests and the fuzz targets drive, so that
//! they run the decoder and encoder the Ruby binding runs, with plain values where the binding has Ruby objects.

use std::marker::PhantomData;

use crate::codec::binary::{BinaryIn, BinaryOut};
use crate::codec::compact::{CompactIn, CompactOut};
use crate::codec::{
    check_depth, read_struct, write_struct, write_union, Build, Container, Encoder, FieldDef, Host,
    Inspect, Primitive, Ran, Scalar, StructDef, TypeDesc, Values, DEFAULT_DEPTH,
};
use crate::json::{Context, JsonIn, JsonRules, JsonSlice};
use crate::reader::Reader;
use crate::wire::VarintStep;
use crate::wire::{Rules, WireInput};
use crate::CoreError;

/// A struct or union type, as a [`Kind::Struct`](crate::codec::Kind::Struct) names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Class(pub Box<Def>);

pub type Def = StructDef<Class, ()>;
pub type Type = TypeDesc<Class>;
pub type Field = FieldDef<Class, ()>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Binary,
    Compact,
}

/// A decoded value.
#[derive(Debug, Clone)]
pub enum Value<'d> {
    /// What a container read with mismatched element types becomes (Ruby: nil). As a field it is no field at all;
    /// inside a container it cannot be encoded.
    Nil,
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    String(Vec<u8>),
    Binary(Vec<u8>),
    Uuid([u8; 16]),
    /// A struct or union: its fields in declaration order, `None` where unset (a union sets at most one).
    Struct(&'d Def, Vec<Option<Value<'d>>>),
    List(Vec<Value<'d>>),
    Set(Vec<Value<'d>>),
    /// Pairs as read (a Ruby Hash would keep the last of equal keys).
    Map(Vec<(Value<'d>, Value<'d>)>),
}

/// Doubles compare by their bits, so that NaN equals itself and 0.0 differs from -0.0: equal means encodes alike.
impl PartialEq for Value<'_> {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Byte(a), Byte(b)) => a == b,
            (I16(a), I16(b)) => a == b,
            (I32(a), I32(b)) => a == b,
            (I64(a), I64(b)) => a == b,
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) | (Binary(a), Binary(b)) => a == b,
            (Uuid(a), Uuid(b)) => a == b,
            (Struct(da, a), Struct(db, b)) => std::ptr::eq(*da, *db) && a == b,
            (List(a), List(b)) | (Set(a), Set(b)) => a == b,
            (Map(a), Map(b)) => a == b,
            _ => false,
        }
    }
}

impl<'d> Value<'d> {
    /// A struct of `def` with no field set.
    pub fn empty(def: &'d Def) -> Self {
        Value::Struct(def, vec![None; def.fields().len()])
    }

    /// How many values this one is made of (itself included); decoding reads at least one byte for each.
    pub fn nodes(&self) -> usize {
        1 + match self {
            Value::Struct(_, fields) => fields.iter().flatten().map(Value::nodes).sum(),
            Value::List(items) | Value::Set(items) => items.iter().map(Value::nodes).sum(),
            Value::Map(pairs) => pairs.iter().map(|(k, v)| k.nodes() + v.nodes()).sum(),
            _ => 0,
        }
    }
}

/// Decodes one struct or union of type `def` from the front of `bytes`; returns it and how many bytes it took.
/// `depth` is `read`'s (a depth below 1 is refused at once, as `Struct#read(prot, 0)` refuses it).
pub fn decode<'d>(
    bytes: &[u8],
    encoding: Encoding,
    def: &'d Def,
    depth: i64,
) -> Result<(Value<'d>, usize), CoreError> {
    decode_with(bytes, encoding, def, depth, Rules::MASTER)
}

/// [`decode`] under an older thrift's `rules` (negative sizes, varint32 overflow, UUID).
pub fn decode_with<'d>(
    bytes: &[u8],
    encoding: Encoding,
    def: &'d Def,
    depth: i64,
    rules: Rules,
) -> Result<(Value<'d>, usize), CoreError> {
    let depth = check_depth(depth)?;
    let host = SliceHost::new(bytes);
    let target = (def, vec![None; def.fields().len()]);
    let mut b = PlainBuilder::default();
    match encoding {
        Encoding::Binary => {
            let mut src = BinaryIn::with_rules(host, rules);
            let v = read_struct(&mut src, &mut b, target, def, depth)?;
            Ok((v, src.host.reader.position()))
        }
        Encoding::Compact => {
            let mut src = CompactIn::with_rules(host, rules);
            let v = read_struct(&mut src, &mut b, target, def, depth)?;
            Ok((v, src.host.reader.position()))
        }
    }
}

/// Decodes one struct or union of type `def` from the front of `bytes` as `Thrift::JsonProtocol` reads it at the top
/// level; returns it and how many bytes it took (a byte still held past the struct counts as taken).
pub fn decode_json<'d>(
    bytes: &[u8],
    def: &'d Def,
    depth: i64,
    rules: JsonRules,
) -> Result<(Value<'d>, usize), CoreError> {
    let depth = check_depth(depth)?;
    let json = JsonIn::new(Context::Top, None, rules);
    let mut src = JsonSlice::new(bytes, json);
    let target = (def, vec![None; def.fields().len()]);
    let v = read_struct(&mut src, &mut PlainBuilder::default(), target, def, depth)?;
    Ok((v, src.position()))
}

/// Encodes a struct or union value, appending to `out` (which keeps what was written before an error).
pub fn encode(value: &Value<'_>, encoding: Encoding, out: &mut Vec<u8>) -> Result<(), CoreError> {
    if !matches!(value, Value::Struct(..)) {
        return Err(CoreError::Unencodable);
    }
    match encoding {
        Encoding::Binary => encode_with(value, BinaryOut::new(std::mem::take(out)), out),
        Encoding::Compact => encode_with(value, CompactOut::new(std::mem::take(out)), out),
    }
}

fn encode_with<E: Encoder>(
    value: &Value<'_>,
    mut sink: E,
    out: &mut Vec<u8>,
) -> Result<(), CoreError> {
    let result = encode_to(value, &mut sink);
    *out = std::mem::take(sink.bytes());
    result
}

/// Encodes a struct or union value with any encoder (the JSON one included), which keeps what was written.
pub fn encode_to<E: Encoder>(value: &Value<'_>, encoder: &mut E) -> Result<(), CoreError> {
    let mut values = PlainValues::default();
    if matches!(value, Value::Struct(def, _) if def.is_union()) {
        write_union(&mut values, encoder, value, DEFAULT_DEPTH)
    } else {
        write_struct(&mut values, encoder, value, DEFAULT_DEPTH)
    }
}

/// A byte slice as an encoding's host: a short read consumes nothing and is `Eof`; the compact bool value is kept
/// here.
#[derive(Debug)]
pub struct SliceHost<'a> {
    pub reader: Reader<'a>,
    bool_value: Option<bool>,
}

impl<'a> SliceHost<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        SliceHost {
            reader: Reader::new(bytes, 0),
            bool_value: None,
        }
    }
}

impl WireInput for SliceHost<'_> {
    type Error = CoreError;

    #[inline(always)]
    fn read_byte(&mut self) -> Result<u8, CoreError> {
        self.reader.read_byte()
    }

    #[inline(always)]
    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], CoreError> {
        self.reader.read_array()
    }

    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, CoreError> {
        self.reader.read_varint::<R>()
    }

    fn error(&self, e: CoreError) -> CoreError {
        e
    }
}

impl Host for SliceHost<'_> {
    fn take_with<R>(&mut self, n: usize, make: impl FnOnce(&[u8]) -> R) -> Result<R, CoreError> {
        self.reader.take(n).map(make)
    }

    fn remaining(&self) -> Option<usize> {
        Some(self.reader.remaining())
    }

    fn put_bool(&mut self, value: bool) -> Result<(), CoreError> {
        self.bool_value = Some(value);
        Ok(())
    }

    fn take_bool(&mut self) -> Result<Option<bool>, CoreError> {
        Ok(self.bool_value.take())
    }
}

/// Builds [`Value`]s.
#[derive(Debug, Default)]
pub struct PlainBuilder<'d>(PhantomData<&'d Def>);

impl<'d> Values for PlainBuilder<'d> {
    type Value = Value<'d>;
    type Error = CoreError;

    fn error(&self, e: CoreError) -> CoreError {
        e
    }
    fn nil(&mut self) -> Value<'d> {
        Value::Nil
    }
    fn bool(&mut self, v: bool) -> Value<'d> {
        Value::Bool(v)
    }
    fn byte(&mut self, v: i8) -> Value<'d> {
        Value::Byte(v)
    }
    fn i16(&mut self, v: i16) -> Value<'d> {
        Value::I16(v)
    }
    fn i32(&mut self, v: i32) -> Value<'d> {
        Value::I32(v)
    }
    fn i64(&mut self, v: i64) -> Value<'d> {
        Value::I64(v)
    }
    fn double(&mut self, v: f64) -> Value<'d> {
        Value::Double(v)
    }
    fn string(&mut self, bytes: &[u8]) -> Value<'d> {
        Value::String(bytes.to_vec())
    }
    fn binary(&mut self, bytes: &[u8]) -> Value<'d> {
        Value::Binary(bytes.to_vec())
    }
    fn uuid(&mut self, bytes: &[u8; 16]) -> Value<'d> {
        Value::Uuid(*bytes)
    }
}

type Fields<'d> = (&'d Def, Vec<Option<Value<'d>>>);

impl<'d> Build<'d> for PlainBuilder<'d> {
    type Class = Class;
    type Field = ();
    type Struct = Fields<'d>;
    type List = Vec<Value<'d>>;
    type Set = Vec<Value<'d>>;
    type Map = Vec<(Value<'d>, Value<'d>)>;

    fn instantiate(&mut self, class: &'d Class) -> Result<(Fields<'d>, &'d Def, Ran), CoreError> {
        let def: &'d Def = &class.0;
        Ok(((def, vec![None; def.fields().len()]), def, Ran::OnlyRust))
    }

    fn struct_begin(&mut self, _s: &mut Fields<'d>, _native: bool) -> Result<(), CoreError> {
        Ok(())
    }

    /// A field read as nil (a skipped container) is unset, as Ruby's ivar would be nil.
    fn set_field(
        &mut self,
        s: &mut Fields<'d>,
        index: usize,
        _field: &'d Field,
        value: Value<'d>,
    ) -> Result<(), CoreError> {
        s.1[index] = (!matches!(value, Value::Nil)).then_some(value);
        Ok(())
    }

    fn struct_end(
        &mut self,
        s: Fields<'d>,
        outcome: Result<(), CoreError>,
    ) -> Result<Value<'d>, CoreError> {
        outcome.map(|()| Value::Struct(s.0, s.1))
    }

    fn list_new(&mut self, reserve: usize) -> Vec<Value<'d>> {
        Vec::with_capacity(reserve)
    }
    fn list_push(&mut self, list: &mut Vec<Value<'d>>, item: Value<'d>) {
        list.push(item);
    }
    fn list_end(&mut self, list: Vec<Value<'d>>) -> Value<'d> {
        Value::List(list)
    }
    fn set_new(&mut self, reserve: usize) -> Result<(Vec<Value<'d>>, Ran), CoreError> {
        Ok((Vec::with_capacity(reserve), Ran::OnlyRust))
    }
    fn set_insert(
        &mut self,
        set: &mut Vec<Value<'d>>,
        item: Value<'d>,
        _fresh: bool,
    ) -> Result<Ran, CoreError> {
        set.push(item);
        Ok(Ran::OnlyRust)
    }
    fn set_end(&mut self, set: Vec<Value<'d>>) -> Value<'d> {
        Value::Set(set)
    }
    fn map_new(&mut self, reserve: usize) -> Self::Map {
        Vec::with_capacity(reserve)
    }
    fn map_insert(
        &mut self,
        map: &mut Self::Map,
        key: Value<'d>,
        value: Value<'d>,
        _fresh: bool,
    ) -> Result<Ran, CoreError> {
        map.push((key, value));
        Ok(Ran::OnlyRust)
    }
    fn map_end(&mut self, map: Self::Map) -> Value<'d> {
        Value::Map(map)
    }

    /// As the C accelerator before thrift 0.23: a list or set to read is refused, anything else read as empty.
    fn negative_size(&mut self, container: Container, matched: bool) -> Result<(), CoreError> {
        if matched && container != Container::Map {
            return Err(CoreError::NegativeContainerSize);
        }
        Ok(())
    }
}

/// Reads [`Value`]s back for the encoder. A union names its set field by itself (the value is its own name).
#[derive(Debug, Default)]
pub struct PlainValues<'v, 'd>(PhantomData<(&'v (), &'d ())>);

static NIL: Value<'static> = Value::Nil;

impl<'v, 'd: 'v> Inspect<'d> for PlainValues<'v, 'd> {
    type Value = &'v Value<'d>;
    type Class = Class;
    type Field = ();
    type Error = CoreError;

    fn error(&self, e: CoreError) -> CoreError {
        e
    }

    fn validate(&mut self, _v: &'v Value<'d>) -> Result<(), CoreError> {
        Ok(())
    }

    fn definition(&mut self, v: &'v Value<'d>) -> Result<&'d Def, CoreError> {
        match v {
            Value::Struct(def, _) => Ok(def),
            _ => Err(CoreError::Unencodable),
        }
    }

    fn is_union(&mut self, v: &'v Value<'d>) -> Result<bool, CoreError> {
        Ok(matches!(v, Value::Struct(def, _) if def.is_union()))
    }

    fn field(&self, obj: &'v Value<'d>, index: usize, _field: &'d Field) -> Option<&'v Value<'d>> {
        match obj {
            Value::Struct(_, fields) => fields.get(index)?.as_ref(),
            _ => None,
        }
    }

    fn union_value(&self, obj: &'v Value<'d>) -> (&'v Value<'d>, &'v Value<'d>) {
        let set = match obj {
            Value::Struct(_, fields) => fields.iter().flatten().next(),
            _ => None,
        };
        (obj, set.unwrap_or(&NIL))
    }

    fn union_field_by_name(&self, _def: &'d Def, name: &'v Value<'d>) -> Option<usize> {
        match name {
            Value::Struct(_, fields) => fields.iter().position(Option::is_some),
            _ => None,
        }
    }

    fn union_field_id(
        &mut self,
        _obj: &'v Value<'d>,
        _name: &'v Value<'d>,
    ) -> Result<Option<i64>, CoreError> {
        Ok(None)
    }

    fn primitive(&self, kind: Scalar, v: &'v Value<'d>) -> Option<Primitive<'_>> {
        let bytes =
            |b: &'v Vec<u8>| (i32::try_from(b.len()).is_ok()).then_some(Primitive::Bytes(b));
        match (kind, v) {
            (Scalar::Bool, Value::Bool(b)) => Some(Primitive::Bool(*b)),
            (Scalar::Byte, Value::Byte(n)) => Some(Primitive::Byte(*n)),
            (Scalar::I16, Value::I16(n)) => Some(Primitive::I16(*n)),
            (Scalar::I32, Value::I32(n)) => Some(Primitive::I32(*n)),
            (Scalar::I64, Value::I64(n)) => Some(Primitive::I64(*n)),
            (Scalar::Double, Value::Double(f)) => Some(Primitive::Double(*f)),
            (Scalar::String, Value::String(b)) | (Scalar::Binary, Value::Binary(b)) => bytes(b),
            (Scalar::Uuid, Value::Uuid(b)) => Some(Primitive::Uuid(*b)),
            _ => None,
        }
    }

    fn list_len(&self, v: &'v Value<'d>) -> Result<usize, CoreError> {
        match v {
            Value::List(items) | Value::Set(items) => Ok(items.len()),
            _ => Err(CoreError::Unencodable),
        }
    }

    fn list_item(&self, list: &'v Value<'d>, i: usize) -> Result<&'v Value<'d>, CoreError> {
        match list {
            Value::List(items) | Value::Set(items) => Ok(items.get(i).unwrap_or(&NIL)),
            _ => Err(CoreError::Unencodable),
        }
    }

    fn map_check(&self, v: &'v Value<'d>) -> Result<(), CoreError> {
        match v {
            Value::Map(_) => Ok(()),
            _ => Err(CoreError::Unencodable),
        }
    }

    fn map_size(&self, v: &'v Value<'d>) -> usize {
        match v {
            Value::Map(pairs) => pairs.len(),
            _ => 0,
        }
    }

    fn each_pair<F>(&mut self, map: &'v Value<'d>, _native: bool, mut f: F) -> Result<(), CoreError>
    where
        F: FnMut(&mut Self, &'v Value<'d>, &'v Value<'d>) -> Result<(), CoreError>,
    {
        if let Value::Map(pairs) = map {
            for (k, v) in pairs {
                f(self, k, v)?;
            }
        }
        Ok(())
    }

    fn set_elements(&self, set: &'v Value<'d>) -> Option<(&'v Value<'d>, usize)> {
        match set {
            Value::Set(items) => Some((set, items.len())),
            _ => None,
        }
    }

    fn set_items(&mut self, set: &'v Value<'d>) -> Result<&'v Value<'d>, CoreError> {
        Ok(set)
    }

    fn each_set_element<F>(&mut self, elements: &'v Value<'d>, mut f: F) -> Result<(), CoreError>
    where
        F: FnMut(&mut Self, &'v Value<'d>) -> Result<(), CoreError>,
    {
        if let Value::Set(items) = elements {
            for item in items {
                f(self, item)?;
            }
        }
        Ok(())
    }
}
