//! Whole structs decoded by a schema, in either encoding, into plain Rust values, and encoded back.
//!
//! The Ruby binding's struct codec (`ext/thrift_native/src/struct_codec.rs`) builds Ruby objects as it reads and
//! keeps the C accelerator's call sequence; it reads every field and container header through the same `binary` and
//! `compact` functions as this module. Here the algorithm runs without a Ruby (fields matched by id and type,
//! everything else skipped as `BaseProtocol#skip` skips it, struct nesting limited), so that tests and fuzzers
//! drive decoding end to end: no panic, memory bounded by the input, and what decodes encodes back to the same
//! values in both encodings.

use crate::binary::{self, Reader};
use crate::compact::{self, ctype};
use crate::wire::{FieldHeader, ListHeader, MapHeader, WireInput};
use crate::{ttype, CoreError};

/// `Thrift::Struct`'s default `read(prot, depth)`: a struct nested this deep (counting the outermost) is refused.
pub const DEFAULT_DEPTH: i64 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Binary,
    Compact,
}

/// A field's type, as a generated struct's `FIELDS` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schema {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    /// `string` and `binary` (the same bytes on the wire).
    String,
    Uuid,
    Struct(StructSchema),
    List(Box<Schema>),
    Set(Box<Schema>),
    Map(Box<Schema>, Box<Schema>),
}

impl Schema {
    /// The Thrift type code (`Thrift::Types`).
    pub fn ttype(&self) -> u8 {
        match self {
            Schema::Bool => ttype::BOOL,
            Schema::Byte => ttype::BYTE,
            Schema::I16 => ttype::I16,
            Schema::I32 => ttype::I32,
            Schema::I64 => ttype::I64,
            Schema::Double => ttype::DOUBLE,
            Schema::String => ttype::STRING,
            Schema::Uuid => ttype::UUID,
            Schema::Struct(_) => ttype::STRUCT,
            Schema::List(_) => ttype::LIST,
            Schema::Set(_) => ttype::SET,
            Schema::Map(..) => ttype::MAP,
        }
    }
}

/// A struct's fields: id and type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StructSchema {
    pub fields: Vec<(i16, Schema)>,
}

impl StructSchema {
    fn field(&self, id: i64) -> Option<(i16, &Schema)> {
        self.fields
            .iter()
            .find(|(fid, _)| i64::from(*fid) == id)
            .map(|(fid, s)| (*fid, s))
    }
}

/// A decoded value. Containers carry the schema's element types, so that a value encodes without its schema.
#[derive(Debug, Clone)]
pub enum Value {
    /// What Ruby reads as nil: a container whose element types differ from the schema's (its elements skipped).
    /// As a struct field it is no field at all; inside a container it cannot be encoded.
    Nil,
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    String(Vec<u8>),
    Uuid([u8; 16]),
    /// Fields in the order first read; a repeated id keeps its last value, as an instance variable would.
    Struct(Vec<(i16, Value)>),
    List(u8, Vec<Value>),
    Set(u8, Vec<Value>),
    /// Pairs as read (a Ruby Hash would keep the last of equal keys).
    Map(u8, u8, Vec<(Value, Value)>),
}

/// Doubles compare by their bits, so that NaN equals itself and 0.0 differs from -0.0: equal means encodes alike.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Byte(a), Byte(b)) => a == b,
            (I16(a), I16(b)) => a == b,
            (I32(a), I32(b)) => a == b,
            (I64(a), I64(b)) => a == b,
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Uuid(a), Uuid(b)) => a == b,
            (Struct(a), Struct(b)) => a == b,
            (List(ta, a), List(tb, b)) | (Set(ta, a), Set(tb, b)) => ta == tb && a == b,
            (Map(ka, va, a), Map(kb, vb, b)) => ka == kb && va == vb && a == b,
            _ => false,
        }
    }
}

impl Value {
    /// How many values this one is made of (itself included); decoding reads at least one byte for each.
    pub fn nodes(&self) -> usize {
        1 + match self {
            Value::Struct(fields) => fields.iter().map(|(_, v)| v.nodes()).sum(),
            Value::List(_, items) | Value::Set(_, items) => items.iter().map(Value::nodes).sum(),
            Value::Map(_, _, pairs) => pairs.iter().map(|(k, v)| k.nodes() + v.nodes()).sum(),
            _ => 0,
        }
    }

    fn ttype(&self) -> Option<u8> {
        Some(match self {
            Value::Nil => return None,
            Value::Bool(_) => ttype::BOOL,
            Value::Byte(_) => ttype::BYTE,
            Value::I16(_) => ttype::I16,
            Value::I32(_) => ttype::I32,
            Value::I64(_) => ttype::I64,
            Value::Double(_) => ttype::DOUBLE,
            Value::String(_) => ttype::STRING,
            Value::Uuid(_) => ttype::UUID,
            Value::Struct(_) => ttype::STRUCT,
            Value::List(..) => ttype::LIST,
            Value::Set(..) => ttype::SET,
            Value::Map(..) => ttype::MAP,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Wire(#[from] CoreError),
    /// A struct nested deeper than the depth given (DEPTH_LIMIT in Ruby). Skipping counts containers too, where
    /// Ruby's recursive `skip` would run until the stack ends.
    #[error("Maximum recursion depth exceeded")]
    DepthLimit,
    /// `skip` of a type code that has no encoding (`BaseProtocol#skip`: INVALID_DATA).
    #[error("Invalid data")]
    InvalidData,
}

/// Decodes one struct from the front of `bytes`; returns it and how many bytes it took. `depth` is `read`'s
/// (DEFAULT_DEPTH unless a caller passes its own).
pub fn decode(
    bytes: &[u8],
    encoding: Encoding,
    schema: &StructSchema,
    depth: i64,
) -> Result<(Value, usize), DecodeError> {
    match encoding {
        Encoding::Binary => {
            let mut p = BinaryIn(Reader::new(bytes, 0));
            let v = read_struct(&mut p, schema, depth)?;
            Ok((v, p.0.position()))
        }
        Encoding::Compact => {
            let mut p = CompactIn {
                input: Reader::new(bytes, 0),
                last_field: 0,
                pending_bool: None,
            };
            let v = read_struct(&mut p, schema, depth)?;
            Ok((v, p.input.position()))
        }
    }
}

/// The reads a struct decoder needs, in one encoding.
trait Protocol {
    /// Starts a struct; returns what `struct_end` puts back.
    fn struct_begin(&mut self) -> i64 {
        0
    }
    fn struct_end(&mut self, _saved: i64) {}
    fn field(&mut self) -> Result<FieldHeader, CoreError>;
    fn map(&mut self) -> Result<MapHeader, CoreError>;
    fn list(&mut self) -> Result<ListHeader, CoreError>;
    fn bool(&mut self) -> Result<bool, CoreError>;
    fn byte(&mut self) -> Result<i8, CoreError>;
    fn i16(&mut self) -> Result<i16, CoreError>;
    fn i32(&mut self) -> Result<i32, CoreError>;
    fn i64(&mut self) -> Result<i64, CoreError>;
    fn double(&mut self) -> Result<f64, CoreError>;
    fn string(&mut self) -> Result<&[u8], CoreError>;
    fn uuid(&mut self) -> Result<[u8; 16], CoreError>;
    fn remaining(&self) -> usize;
}

struct BinaryIn<'a>(Reader<'a>);

impl Protocol for BinaryIn<'_> {
    fn field(&mut self) -> Result<FieldHeader, CoreError> {
        binary::read_field_header(&mut self.0)
    }
    fn map(&mut self) -> Result<MapHeader, CoreError> {
        binary::read_map_header(&mut self.0)
    }
    fn list(&mut self) -> Result<ListHeader, CoreError> {
        binary::read_list_header(&mut self.0)
    }
    fn bool(&mut self) -> Result<bool, CoreError> {
        Ok(self.0.read_i8()? != 0)
    }
    fn byte(&mut self) -> Result<i8, CoreError> {
        self.0.read_i8()
    }
    fn i16(&mut self) -> Result<i16, CoreError> {
        self.0.read_i16()
    }
    fn i32(&mut self) -> Result<i32, CoreError> {
        self.0.read_i32()
    }
    fn i64(&mut self) -> Result<i64, CoreError> {
        self.0.read_i64()
    }
    fn double(&mut self) -> Result<f64, CoreError> {
        self.0.read_double()
    }
    fn string(&mut self) -> Result<&[u8], CoreError> {
        let n = binary::read_size(&mut self.0)?;
        self.0.take(n)
    }
    fn uuid(&mut self) -> Result<[u8; 16], CoreError> {
        self.0.read_array()
    }
    fn remaining(&self) -> usize {
        self.0.remaining()
    }
}

struct CompactIn<'a> {
    input: Reader<'a>,
    /// The id of the previous field of the struct being read.
    last_field: i64,
    /// A bool field's value, from its header, until the field's value is read.
    pending_bool: Option<bool>,
}

impl Protocol for CompactIn<'_> {
    fn struct_begin(&mut self) -> i64 {
        std::mem::replace(&mut self.last_field, 0)
    }
    fn struct_end(&mut self, saved: i64) {
        self.last_field = saved;
    }
    fn field(&mut self) -> Result<FieldHeader, CoreError> {
        let f = compact::read_field_header(&mut self.input, &mut self.last_field)?;
        if f.bool_value.is_some() {
            self.pending_bool = f.bool_value;
        }
        Ok(f.header)
    }
    fn map(&mut self) -> Result<MapHeader, CoreError> {
        compact::read_map_header(&mut self.input)
    }
    fn list(&mut self) -> Result<ListHeader, CoreError> {
        compact::read_list_header(&mut self.input)
    }
    fn bool(&mut self) -> Result<bool, CoreError> {
        // A bool field's value came with its header; a container element is a byte of its own.
        match self.pending_bool.take() {
            Some(b) => Ok(b),
            None => Ok(self.input.read_byte()? == ctype::BOOLEAN_TRUE),
        }
    }
    fn byte(&mut self) -> Result<i8, CoreError> {
        self.input.read_i8()
    }
    fn i16(&mut self) -> Result<i16, CoreError> {
        compact::read_i16(&mut self.input)
    }
    fn i32(&mut self) -> Result<i32, CoreError> {
        compact::read_i32(&mut self.input)
    }
    fn i64(&mut self) -> Result<i64, CoreError> {
        compact::read_i64(&mut self.input)
    }
    fn double(&mut self) -> Result<f64, CoreError> {
        Ok(compact::decode_double(self.input.read_array()?))
    }
    fn string(&mut self) -> Result<&[u8], CoreError> {
        let n = compact::read_size(&mut self.input, CoreError::BinarySizeLimit)?;
        self.input.take(n)
    }
    fn uuid(&mut self) -> Result<[u8; 16], CoreError> {
        self.input.read_array()
    }
    fn remaining(&self) -> usize {
        self.input.remaining()
    }
}

fn read_struct<P: Protocol>(
    p: &mut P,
    schema: &StructSchema,
    depth: i64,
) -> Result<Value, DecodeError> {
    let saved = p.struct_begin();
    let mut fields: Vec<(i16, Value)> = Vec::new();
    loop {
        let header = p.field()?;
        if header.is_stop() {
            break;
        }
        match schema
            .field(header.id)
            .filter(|(_, s)| i64::from(s.ttype()) == i64::from(header.ttype))
        {
            Some((id, s)) => {
                let v = read_value(p, s, depth)?;
                let slot = fields.iter().position(|(fid, _)| *fid == id);
                match (slot, v) {
                    // Ruby sets the field to nil: unset.
                    (Some(i), Value::Nil) => drop(fields.remove(i)),
                    (None, Value::Nil) => {}
                    (Some(i), v) => fields[i].1 = v,
                    (None, v) => fields.push((id, v)),
                }
            }
            None => skip(p, header.ttype, depth)?,
        }
    }
    p.struct_end(saved);
    Ok(Value::Struct(fields))
}

/// Room for a container's elements: its declared size, but never more than one per byte left (each element takes
/// at least one byte), so that a declared size reserves nothing the input does not back.
fn capacity<P: Protocol>(p: &P, size: usize) -> usize {
    size.min(p.remaining())
}

fn read_value<P: Protocol>(p: &mut P, s: &Schema, depth: i64) -> Result<Value, DecodeError> {
    Ok(match s {
        Schema::Bool => Value::Bool(p.bool()?),
        Schema::Byte => Value::Byte(p.byte()?),
        Schema::I16 => Value::I16(p.i16()?),
        Schema::I32 => Value::I32(p.i32()?),
        Schema::I64 => Value::I64(p.i64()?),
        Schema::Double => Value::Double(p.double()?),
        Schema::String => Value::String(p.string()?.to_vec()),
        Schema::Uuid => Value::Uuid(p.uuid()?),
        Schema::Struct(fields) => {
            if depth - 1 <= 0 {
                return Err(DecodeError::DepthLimit);
            }
            read_struct(p, fields, depth - 1)?
        }
        Schema::List(e) | Schema::Set(e) => {
            let header = p.list()?;
            if i64::from(header.element) != i64::from(e.ttype()) {
                for _ in 0..header.size {
                    skip(p, header.element, depth)?;
                }
                return Ok(Value::Nil);
            }
            let mut items = Vec::with_capacity(capacity(p, header.size));
            for _ in 0..header.size {
                items.push(read_value(p, e, depth)?);
            }
            if matches!(s, Schema::Set(_)) {
                Value::Set(e.ttype(), items)
            } else {
                Value::List(e.ttype(), items)
            }
        }
        Schema::Map(k, v) => {
            let header = p.map()?;
            let matches = i64::from(header.key) == i64::from(k.ttype())
                && i64::from(header.value) == i64::from(v.ttype());
            // An empty map is read whatever its types say (the compact encoding sends none).
            if header.size > 0 && !matches {
                for _ in 0..header.size {
                    skip(p, header.key, depth)?;
                    skip(p, header.value, depth)?;
                }
                return Ok(Value::Nil);
            }
            let mut pairs = Vec::with_capacity(capacity(p, header.size));
            for _ in 0..header.size {
                let key = read_value(p, k, depth)?;
                let value = read_value(p, v, depth)?;
                pairs.push((key, value));
            }
            Value::Map(k.ttype(), v.ttype(), pairs)
        }
    })
}

/// `BaseProtocol#skip(type)`, with UUID as thrift master skips it, and every nested struct or container counted
/// against `depth`.
fn skip<P: Protocol>(p: &mut P, t: i8, depth: i64) -> Result<(), DecodeError> {
    let nested = || {
        if depth - 1 <= 0 {
            Err(DecodeError::DepthLimit)
        } else {
            Ok(depth - 1)
        }
    };
    match u8::try_from(t).unwrap_or(u8::MAX) {
        ttype::BOOL => drop(p.bool()?),
        ttype::BYTE => drop(p.byte()?),
        ttype::I16 => drop(p.i16()?),
        ttype::I32 => drop(p.i32()?),
        ttype::I64 => drop(p.i64()?),
        ttype::DOUBLE => drop(p.double()?),
        ttype::STRING => drop(p.string()?),
        ttype::UUID => drop(p.uuid()?),
        ttype::STRUCT => {
            let depth = nested()?;
            let saved = p.struct_begin();
            loop {
                let header = p.field()?;
                if header.is_stop() {
                    break;
                }
                skip(p, header.ttype, depth)?;
            }
            p.struct_end(saved);
        }
        ttype::MAP => {
            let depth = nested()?;
            let header = p.map()?;
            for _ in 0..header.size {
                skip(p, header.key, depth)?;
                skip(p, header.value, depth)?;
            }
        }
        ttype::SET | ttype::LIST => {
            let depth = nested()?;
            let header = p.list()?;
            for _ in 0..header.size {
                skip(p, header.element, depth)?;
            }
        }
        _ => return Err(DecodeError::InvalidData),
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// Only a struct is encoded on its own.
    #[error("not a struct")]
    NotAStruct,
    /// A nil inside a container (Ruby's writer would raise too).
    #[error("nil in a container")]
    NilElement,
    /// A byte string or container longer than an i32 size.
    #[error("size over INT32_MAX")]
    TooLong,
}

/// Encodes a struct value, appending to `out`.
pub fn encode(value: &Value, encoding: Encoding, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let Value::Struct(fields) = value else {
        return Err(EncodeError::NotAStruct);
    };
    match encoding {
        Encoding::Binary => encode_binary_struct(fields, out),
        Encoding::Compact => encode_compact_struct(fields, out),
    }
}

fn size32(n: usize) -> Result<u32, EncodeError> {
    i32::try_from(n)
        .map(|n| n as u32)
        .map_err(|_| EncodeError::TooLong)
}

fn element_type(v: &Value) -> Result<u8, EncodeError> {
    v.ttype().ok_or(EncodeError::NilElement)
}

fn encode_binary_struct(fields: &[(i16, Value)], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    for (id, v) in fields {
        let Some(t) = v.ttype() else { continue };
        out.push(t);
        out.extend_from_slice(&binary::encode_i16(*id));
        encode_binary_value(v, out)?;
    }
    out.push(ttype::STOP);
    Ok(())
}

fn encode_binary_value(v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Value::Nil => return Err(EncodeError::NilElement),
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Byte(n) => out.push(*n as u8),
        Value::I16(n) => out.extend_from_slice(&binary::encode_i16(*n)),
        Value::I32(n) => out.extend_from_slice(&binary::encode_i32(*n)),
        Value::I64(n) => out.extend_from_slice(&binary::encode_i64(*n)),
        Value::Double(f) => out.extend_from_slice(&binary::encode_double(*f)),
        Value::String(bytes) => {
            out.extend_from_slice(&binary::encode_i32(size32(bytes.len())? as i32));
            out.extend_from_slice(bytes);
        }
        Value::Uuid(bytes) => out.extend_from_slice(bytes),
        Value::Struct(fields) => encode_binary_struct(fields, out)?,
        Value::List(t, items) | Value::Set(t, items) => {
            out.push(*t);
            out.extend_from_slice(&binary::encode_i32(size32(items.len())? as i32));
            for item in items {
                element_type(item)?;
                encode_binary_value(item, out)?;
            }
        }
        Value::Map(k, v, pairs) => {
            out.extend_from_slice(&[*k, *v]);
            out.extend_from_slice(&binary::encode_i32(size32(pairs.len())? as i32));
            for (key, value) in pairs {
                encode_binary_value(key, out)?;
                encode_binary_value(value, out)?;
            }
        }
    }
    Ok(())
}

/// The compact type of a Thrift type code that a value carries (always one that has one).
fn compact_type(t: u8) -> u8 {
    compact::compact_type_of(t.into()).unwrap_or(ctype::STOP)
}

fn encode_compact_struct(fields: &[(i16, Value)], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let mut last = 0i64;
    for (id, v) in fields {
        let compact = match v {
            Value::Nil => continue,
            Value::Bool(true) => ctype::BOOLEAN_TRUE,
            Value::Bool(false) => ctype::BOOLEAN_FALSE,
            v => compact_type(element_type(v)?),
        };
        let (header, n) = compact::field_header(compact, *id, last);
        out.extend_from_slice(&header[..n]);
        last = (*id).into();
        if !matches!(v, Value::Bool(_)) {
            encode_compact_value(v, out)?;
        }
    }
    out.push(ctype::STOP);
    Ok(())
}

fn encode_compact_value(v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let varint =
        |n: u64, out: &mut Vec<u8>| out.extend_from_slice(compact::Varint::new(n).as_bytes());
    match v {
        Value::Nil => return Err(EncodeError::NilElement),
        Value::Bool(b) => out.push(if *b {
            ctype::BOOLEAN_TRUE
        } else {
            ctype::BOOLEAN_FALSE
        }),
        Value::Byte(n) => out.push(*n as u8),
        Value::I16(n) => varint(compact::zigzag32((*n).into()).into(), out),
        Value::I32(n) => varint(compact::zigzag32(*n).into(), out),
        Value::I64(n) => varint(compact::zigzag64(*n), out),
        Value::Double(f) => out.extend_from_slice(&compact::encode_double(*f)),
        Value::String(bytes) => {
            varint(size32(bytes.len())?.into(), out);
            out.extend_from_slice(bytes);
        }
        Value::Uuid(bytes) => out.extend_from_slice(bytes),
        Value::Struct(fields) => encode_compact_struct(fields, out)?,
        Value::List(t, items) | Value::Set(t, items) => {
            let (header, n) = compact::list_header(compact_type(*t), size32(items.len())?);
            out.extend_from_slice(&header[..n]);
            for item in items {
                encode_compact_value(item, out)?;
            }
        }
        Value::Map(k, v, pairs) => {
            let (header, n) =
                compact::map_header(compact_type(*k), compact_type(*v), size32(pairs.len())?);
            out.extend_from_slice(&header[..n]);
            for (key, value) in pairs {
                encode_compact_value(key, out)?;
                encode_compact_value(value, out)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `S` of the tests: what pure Ruby's BinaryProtocol and CompactProtocol wrote for it (thrift 0.14,
    /// write_struct_begin ... write_field_stop by hand) is below.
    fn schema() -> StructSchema {
        StructSchema {
            fields: vec![
                (1, Schema::I32),
                (2, Schema::String),
                (3, Schema::List(Box::new(Schema::Bool))),
                (
                    4,
                    Schema::Map(Box::new(Schema::String), Box::new(Schema::I64)),
                ),
                (5, Schema::Bool),
                (
                    20,
                    Schema::Struct(StructSchema {
                        fields: vec![(1, Schema::Double)],
                    }),
                ),
                (-3, Schema::I16),
            ],
        }
    }

    fn value() -> Value {
        Value::Struct(vec![
            (1, Value::I32(42)),
            (2, Value::String(b"hi".to_vec())),
            (
                3,
                Value::List(ttype::BOOL, vec![Value::Bool(true), Value::Bool(false)]),
            ),
            (
                4,
                Value::Map(
                    ttype::STRING,
                    ttype::I64,
                    vec![(Value::String(b"a".to_vec()), Value::I64(-1))],
                ),
            ),
            (5, Value::Bool(true)),
            (20, Value::Struct(vec![(1, Value::Double(1.5))])),
            (-3, Value::I16(-300)),
        ])
    }

    const BINARY: &[u8] = &[
        0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a, 0x0b, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x68,
        0x69, 0x0f, 0x00, 0x03, 0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x00, 0x0d, 0x00, 0x04, 0x0b,
        0x0a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x61, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0x02, 0x00, 0x05, 0x01, 0x0c, 0x00, 0x14, 0x04, 0x00, 0x01, 0x3f, 0xf8,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0xff, 0xfd, 0xfe, 0xd4, 0x00,
    ];

    const COMPACT: &[u8] = &[
        0x15, 0x54, 0x18, 0x02, 0x68, 0x69, 0x19, 0x21, 0x01, 0x02, 0x1b, 0x01, 0x86, 0x01, 0x61,
        0x01, 0x11, 0xfc, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x04, 0x05,
        0xd7, 0x04, 0x00,
    ];

    fn both() -> [(Encoding, &'static [u8]); 2] {
        [(Encoding::Binary, BINARY), (Encoding::Compact, COMPACT)]
    }

    fn encoded(v: &Value, encoding: Encoding) -> Vec<u8> {
        let mut out = Vec::new();
        encode(v, encoding, &mut out).unwrap();
        out
    }

    #[test]
    fn decodes_and_encodes_the_bytes_pure_ruby_writes() {
        for (encoding, bytes) in both() {
            assert_eq!(
                decode(bytes, encoding, &schema(), DEFAULT_DEPTH),
                Ok((value(), bytes.len())),
                "{encoding:?}"
            );
            assert_eq!(encoded(&value(), encoding), bytes, "{encoding:?}");
        }
    }

    #[test]
    fn fields_the_schema_lacks_or_types_it_disagrees_with_are_skipped() {
        let only_some = StructSchema {
            fields: vec![
                (2, Schema::I32),
                (20, Schema::Struct(StructSchema::default())),
            ],
        };
        for (encoding, bytes) in both() {
            assert_eq!(
                decode(bytes, encoding, &only_some, DEFAULT_DEPTH),
                Ok((
                    Value::Struct(vec![(20, Value::Struct(vec![]))]),
                    bytes.len()
                ))
            );
        }
    }

    #[test]
    fn a_container_of_other_element_types_is_skipped_and_leaves_its_field_unset() {
        let mut s = schema();
        s.fields[2].1 = Schema::List(Box::new(Schema::Byte));
        s.fields[3].1 = Schema::Map(Box::new(Schema::String), Box::new(Schema::I32));
        let Value::Struct(mut expected) = value() else {
            unreachable!()
        };
        expected.remove(3);
        expected.remove(2);
        for (encoding, bytes) in both() {
            assert_eq!(
                decode(bytes, encoding, &s, DEFAULT_DEPTH),
                Ok((Value::Struct(expected.clone()), bytes.len()))
            );
        }
    }

    #[test]
    fn a_repeated_field_keeps_its_first_place_and_last_value() {
        let s = StructSchema {
            fields: vec![(1, Schema::Byte), (2, Schema::Byte)],
        };
        let bytes = [3, 0, 1, 7, 3, 0, 2, 8, 3, 0, 1, 9, 0];
        assert_eq!(
            decode(&bytes, Encoding::Binary, &s, DEFAULT_DEPTH),
            Ok((
                Value::Struct(vec![(1, Value::Byte(9)), (2, Value::Byte(8))]),
                bytes.len()
            ))
        );
    }

    #[test]
    fn nesting_is_limited_as_read_depth_limits_it() {
        // struct N { 1: N } nested 3 deep: depth 3 refuses the third level, as Struct#read(prot, 3) does.
        fn nested(levels: usize) -> StructSchema {
            let mut s = StructSchema::default();
            for _ in 0..levels {
                s = StructSchema {
                    fields: vec![(1, Schema::Struct(s))],
                };
            }
            s
        }
        let bytes = [12, 0, 1, 12, 0, 1, 0, 0, 0];
        assert_eq!(
            decode(&bytes, Encoding::Binary, &nested(3), 3).map(|(_, n)| n),
            Ok(bytes.len())
        );
        assert_eq!(
            decode(&bytes, Encoding::Binary, &nested(3), 2),
            Err(DecodeError::DepthLimit)
        );
        // Skipping counts containers too: 100 000 nested lists stop at the limit, not at the end of the stack.
        let mut deep = vec![15, 0, 1];
        deep.extend(std::iter::repeat_n([15, 0, 0, 0, 1], 100_000).flatten());
        assert_eq!(
            decode(
                &deep,
                Encoding::Binary,
                &StructSchema::default(),
                DEFAULT_DEPTH
            ),
            Err(DecodeError::DepthLimit)
        );
    }

    #[test]
    fn bad_input_gets_the_contract_errors() {
        let s = schema();
        // An unknown type code to skip; STOP as a list's element type.
        assert_eq!(
            decode(&[0x7f, 0, 9, 0], Encoding::Binary, &s, DEFAULT_DEPTH),
            Err(DecodeError::InvalidData)
        );
        assert_eq!(
            decode(
                &[0x19, 0x10],
                Encoding::Compact,
                &StructSchema::default(),
                DEFAULT_DEPTH
            ),
            Err(DecodeError::InvalidData)
        );
        assert_eq!(
            decode(
                &[0x0b, 0, 2, 0xff, 0xff, 0xff, 0xff],
                Encoding::Binary,
                &s,
                DEFAULT_DEPTH
            ),
            Err(DecodeError::Wire(CoreError::NegativeSize))
        );
        assert_eq!(
            decode(&[0x1e], Encoding::Compact, &s, DEFAULT_DEPTH),
            Err(DecodeError::Wire(CoreError::UnknownCompactType(14)))
        );
        for (encoding, bytes) in both() {
            for cut in 0..bytes.len() {
                assert!(
                    matches!(
                        decode(&bytes[..cut], encoding, &s, DEFAULT_DEPTH),
                        Err(DecodeError::Wire(CoreError::Eof { .. }))
                    ),
                    "{encoding:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn a_declared_size_reserves_no_more_than_the_input_backs() {
        // A list<i32> declaring i32::MAX elements, then 8 bytes: Eof after two elements, no 8 GB reservation.
        let s = StructSchema {
            fields: vec![(1, Schema::List(Box::new(Schema::I32)))],
        };
        let mut bytes = vec![15, 0, 1, 8, 0x7f, 0xff, 0xff, 0xff];
        bytes.extend([0; 8]);
        assert_eq!(
            decode(&bytes, Encoding::Binary, &s, DEFAULT_DEPTH),
            Err(DecodeError::Wire(CoreError::Eof {
                needed: 4,
                available: 0
            }))
        );
    }

    #[test]
    fn values_cross_encodings() {
        let v = value();
        for encoding in [Encoding::Binary, Encoding::Compact] {
            let bytes = encoded(&v, encoding);
            assert_eq!(
                decode(&bytes, encoding, &schema(), DEFAULT_DEPTH),
                Ok((v.clone(), bytes.len()))
            );
        }
        let nil_inside = Value::Struct(vec![(3, Value::List(ttype::BOOL, vec![Value::Nil]))]);
        assert_eq!(
            encode(&nil_inside, Encoding::Compact, &mut Vec::new()),
            Err(EncodeError::NilElement)
        );
    }
}
