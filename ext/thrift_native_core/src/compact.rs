//! Thrift's compact encoding: zigzag LEB128 varints with their byte limits, little-endian doubles, and the mapping
//! between Thrift types (`Thrift::Types`) and the 4-bit compact types of field and container headers.

use crate::ttype;
use crate::wire::{FieldHeader, ListHeader, MapHeader, Rules, Varint32Rule, VarintStep, WireInput};
use crate::CoreError;

/// The longest varints: 5 bytes for 32 bits, 10 for 64.
pub const MAX_VARINT32_BYTES: usize = 5;
pub const MAX_VARINT64_BYTES: usize = 10;

/// Compact types (the low nibble of a field header, or a container's element types).
pub mod ctype {
    pub const STOP: u8 = 0x00;
    pub const BOOLEAN_TRUE: u8 = 0x01;
    pub const BOOLEAN_FALSE: u8 = 0x02;
    pub const BYTE: u8 = 0x03;
    pub const I16: u8 = 0x04;
    pub const I32: u8 = 0x05;
    pub const I64: u8 = 0x06;
    pub const DOUBLE: u8 = 0x07;
    pub const BINARY: u8 = 0x08;
    pub const LIST: u8 = 0x09;
    pub const SET: u8 = 0x0a;
    pub const MAP: u8 = 0x0b;
    pub const STRUCT: u8 = 0x0c;
    pub const UUID: u8 = 0x0d;
}

/// The compact type written for a Thrift type. STOP and unknown types are INVALID_DATA, as in the C accelerator
/// (pure Ruby maps STOP to 0).
pub fn compact_type_of(t: i64) -> Result<u8, CoreError> {
    let c = match u8::try_from(t).unwrap_or(u8::MAX) {
        ttype::BOOL => ctype::BOOLEAN_TRUE,
        ttype::BYTE => ctype::BYTE,
        ttype::I16 => ctype::I16,
        ttype::I32 => ctype::I32,
        ttype::I64 => ctype::I64,
        ttype::DOUBLE => ctype::DOUBLE,
        ttype::STRING => ctype::BINARY,
        ttype::LIST => ctype::LIST,
        ttype::SET => ctype::SET,
        ttype::MAP => ctype::MAP,
        ttype::STRUCT => ctype::STRUCT,
        ttype::UUID => ctype::UUID,
        _ => return Err(CoreError::UnknownCompactType(t)),
    };
    Ok(c)
}

/// The Thrift type of a compact type read off the wire (`c` is a nibble, 0..=15).
pub fn thrift_type_of(c: u8) -> Result<u8, CoreError> {
    let t = match c {
        ctype::STOP => ttype::STOP,
        ctype::BOOLEAN_TRUE | ctype::BOOLEAN_FALSE => ttype::BOOL,
        ctype::BYTE => ttype::BYTE,
        ctype::I16 => ttype::I16,
        ctype::I32 => ttype::I32,
        ctype::I64 => ttype::I64,
        ctype::DOUBLE => ttype::DOUBLE,
        ctype::BINARY => ttype::STRING,
        ctype::LIST => ttype::LIST,
        ctype::SET => ttype::SET,
        ctype::MAP => ttype::MAP,
        ctype::STRUCT => ttype::STRUCT,
        ctype::UUID => ttype::UUID,
        _ => return Err(CoreError::UnknownCompactType(c.into())),
    };
    Ok(t)
}

#[inline(always)]
pub fn zigzag32(n: i32) -> u32 {
    ((n << 1) ^ (n >> 31)) as u32
}

#[inline(always)]
pub fn zigzag64(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

#[inline(always)]
pub fn unzigzag32(n: u32) -> i32 {
    ((n >> 1) as i32) ^ -((n & 1) as i32)
}

#[inline(always)]
pub fn unzigzag64(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// A LEB128 varint: its bytes and how many of them are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Varint {
    bytes: [u8; MAX_VARINT64_BYTES],
    len: usize,
}

impl Varint {
    #[inline(always)]
    pub fn new(mut n: u64) -> Self {
        let mut bytes = [0u8; MAX_VARINT64_BYTES];
        let mut len = 0;
        while n & !0x7f != 0 {
            bytes[len] = (n as u8 & 0x7f) | 0x80;
            n >>= 7;
            len += 1;
        }
        bytes[len] = n as u8;
        Varint {
            bytes,
            len: len + 1,
        }
    }

    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A 32-bit varint: at most 5 bytes, the 5th without the continuation bit and (`REFUSE_OVERFLOW`, thrift master)
/// with no bits beyond 32; else they are dropped, as the C accelerator before master did.
#[derive(Debug, Default)]
pub struct Varint32Reader<const REFUSE_OVERFLOW: bool = true> {
    value: u32,
    read: u32,
}

impl<const REFUSE_OVERFLOW: bool> VarintStep for Varint32Reader<REFUSE_OVERFLOW> {
    type Output = u32;

    #[inline(always)]
    fn step(&mut self, b: u8) -> Result<Option<u32>, CoreError> {
        if self.read < (MAX_VARINT32_BYTES - 1) as u32 {
            self.value |= u32::from(b & 0x7f) << (7 * self.read);
            self.read += 1;
            return Ok((b & 0x80 == 0).then_some(self.value));
        }
        if b & 0x80 != 0 {
            return Err(CoreError::VarintTooLong32);
        }
        if REFUSE_OVERFLOW && b & !0x0f != 0 {
            return Err(CoreError::VarintOverflow32);
        }
        Ok(Some(self.value | (u32::from(b & 0x0f) << 28)))
    }
}

/// A 64-bit varint: at most 10 bytes; bits of the 10th beyond 64 are dropped.
#[derive(Debug, Default)]
pub struct Varint64Reader {
    value: u64,
    read: u32,
}

impl VarintStep for Varint64Reader {
    type Output = u64;

    #[inline(always)]
    fn step(&mut self, b: u8) -> Result<Option<u64>, CoreError> {
        self.value |= u64::from(b & 0x7f) << (7 * self.read);
        self.read += 1;
        if b & 0x80 == 0 {
            Ok(Some(self.value))
        } else if self.read as usize == MAX_VARINT64_BYTES {
            Err(CoreError::VarintTooLong64)
        } else {
            Ok(None)
        }
    }
}

/// Decodes a varint from the front of `bytes`, returning the outcome and how many bytes reading it byte by byte
/// would have consumed: the varint's length, the bytes up to the one that broke a limit, or all of them when they
/// end first (then the outcome is `Eof`).
#[inline(always)]
pub fn decode_varint<R: VarintStep>(bytes: &[u8]) -> (Result<R::Output, CoreError>, usize) {
    let mut reader = R::default();
    for (i, &b) in bytes.iter().enumerate() {
        match reader.step(b) {
            Ok(Some(v)) => return (Ok(v), i + 1),
            Ok(None) => {}
            Err(e) => return (Err(e), i + 1),
        }
    }
    let eof = CoreError::Eof {
        needed: bytes.len() + 1,
        available: bytes.len(),
    };
    (Err(eof), bytes.len())
}

/// A field header: the delta form `delta << 4 | type` when `0 < id - last <= 15`, else the type byte followed by
/// the zigzag varint of the id.
#[inline(always)]
pub fn field_header(compact_type: u8, id: i16, last: i64) -> ([u8; 4], usize) {
    let mut out = [0u8; 4];
    let delta = i64::from(id) - last;
    if delta > 0 && delta <= 15 {
        out[0] = ((delta as u8) << 4) | (compact_type & 0x0f);
        return (out, 1);
    }
    out[0] = compact_type & 0x0f;
    let v = Varint::new(zigzag32(id.into()).into());
    out[1..1 + v.len].copy_from_slice(v.as_bytes());
    (out, 1 + v.len)
}

/// A varint32 under the loaded thrift's `rules` ([`Varint32Rule`]), before it is cut to 32 bits.
#[inline(always)]
fn read_varint32_whole<I: WireInput>(input: &mut I, rules: Rules) -> Result<u64, I::Error> {
    match rules.varint32 {
        Varint32Rule::Refusing => input.read_varint::<Varint32Reader<true>>().map(u64::from),
        Varint32Rule::Dropping => input.read_varint::<Varint32Reader<false>>().map(u64::from),
        Varint32Rule::Wide => input.read_varint::<Varint64Reader>(),
    }
}

/// A varint32 under the loaded thrift's `rules` ([`Varint32Rule`]).
#[inline(always)]
pub fn read_varint32<I: WireInput>(input: &mut I, rules: Rules) -> Result<u32, I::Error> {
    Ok(read_varint32_whole(input, rules)? as u32)
}

/// A byte string's length (varint32); above INT32_MAX it is BinarySizeLimit, whatever the version (the C
/// accelerator before master asked `read_all` for up to 4 GiB, before 0.24 for any 64-bit length, which a transport
/// may allocate ahead of the bytes).
#[inline(always)]
pub fn read_size<I: WireInput>(input: &mut I, rules: Rules) -> Result<usize, I::Error> {
    let n = read_varint32_whole(input, rules)?;
    if n > i32::MAX as u64 {
        return Err(input.error(CoreError::BinarySizeLimit));
    }
    Ok(n as usize)
}

/// A container's size (varint32); above INT32_MAX it is ContainerSizeLimit (master), the unsigned value (thrift
/// 0.24, whose varint32 is a uint32), or (before 0.24) the negative int32 of its bits.
#[inline(always)]
fn read_container_size<I: WireInput>(input: &mut I, rules: Rules) -> Result<i64, I::Error> {
    let n = read_varint32(input, rules)?;
    if n > i32::MAX as u32 {
        if !rules.negative_sizes.compact {
            return Err(input.error(CoreError::ContainerSizeLimit));
        }
        if rules.varint32 == Varint32Rule::Dropping {
            return Ok(i64::from(n));
        }
    }
    Ok(i64::from(n as i32))
}

/// `read_i16` as the C accelerator reads it: the zigzag varint32 truncated to 16 bits.
#[inline(always)]
pub fn read_i16<I: WireInput>(input: &mut I, rules: Rules) -> Result<i16, I::Error> {
    Ok(unzigzag32(read_varint32(input, rules)?) as i16)
}

#[inline(always)]
pub fn read_i32<I: WireInput>(input: &mut I, rules: Rules) -> Result<i32, I::Error> {
    Ok(unzigzag32(read_varint32(input, rules)?))
}

#[inline(always)]
pub fn read_i64<I: WireInput>(input: &mut I) -> Result<i64, I::Error> {
    Ok(unzigzag64(input.read_varint::<Varint64Reader>()?))
}

/// A field header as the compact protocol reads it, with the id of the previous field of the same struct in
/// `last_field` (updated here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactField {
    pub header: FieldHeader,
    /// A bool field's value, which the compact encoding carries in the header's type.
    pub bool_value: Option<bool>,
}

#[inline(always)]
pub fn read_field_header<I: WireInput>(
    input: &mut I,
    last_field: &mut i64,
) -> Result<CompactField, I::Error> {
    read_field_header_in(input, last_field, Rules::MASTER)
}

/// The Thrift type of a compact type under `rules` (before thrift 0.23, the C accelerator took compact type 13 for
/// an unknown one).
#[inline(always)]
pub fn thrift_type_in(c: u8, rules: Rules) -> Result<u8, CoreError> {
    if c == ctype::UUID && !rules.uuid {
        return Err(CoreError::UnknownCompactType(c.into()));
    }
    thrift_type_of(c)
}

/// [`read_field_header`] under the loaded thrift's `rules` (UUID, the id's varint).
#[inline(always)]
pub fn read_field_header_in<I: WireInput>(
    input: &mut I,
    last_field: &mut i64,
    rules: Rules,
) -> Result<CompactField, I::Error> {
    let byte = input.read_byte()?;
    let compact_type = byte & 0x0f;
    if compact_type == ctype::STOP {
        return Ok(CompactField {
            header: FieldHeader::STOP,
            bool_value: None,
        });
    }
    let delta = i64::from(byte >> 4);
    let id = if delta == 0 {
        i64::from(read_i16(input, rules)?)
    } else {
        *last_field + delta
    };
    *last_field = id;
    let bool_value = match compact_type {
        ctype::BOOLEAN_TRUE => Some(true),
        ctype::BOOLEAN_FALSE => Some(false),
        _ => None,
    };
    let ttype = thrift_type_in(compact_type, rules).map_err(|e| input.error(e))?;
    Ok(CompactField {
        header: FieldHeader {
            ttype: ttype as i8,
            id,
        },
        bool_value,
    })
}

/// Whether a map header's value type is looked up before its key type (`read_map_header`).
pub const VALUE_TYPE_FIRST: bool = cfg!(target_arch = "x86_64");

/// A map header: the size, then (unless it is 0) one byte with the key and value compact types, under the loaded
/// thrift's `rules` (UUID, the size).
#[inline(always)]
pub fn read_map_header<I: WireInput>(input: &mut I, rules: Rules) -> Result<MapHeader, I::Error> {
    let size = read_container_size(input, rules)?;
    let types = if size == 0 { 0 } else { input.read_byte()? };
    let key_type = |input: &mut I| thrift_type_in(types >> 4, rules).map_err(|e| input.error(e));
    let value_type =
        |input: &mut I| thrift_type_in(types & 0x0f, rules).map_err(|e| input.error(e));
    // Which unknown type is named when both are: the C accelerator looks both up among `rb_ary_new3`'s arguments,
    // in the order its compiler evaluates them: gcc for x86_64 the value type first, for aarch64 the key type first
    // (the order of the source and of pure Ruby).
    let (key, value) = if VALUE_TYPE_FIRST {
        let value = value_type(input)?;
        (key_type(input)?, value)
    } else {
        (key_type(input)?, value_type(input)?)
    };
    Ok(MapHeader {
        key: key as i8,
        value: value as i8,
        size,
    })
}

/// A list or set header: one byte with the size (15: a varint follows) and the element's compact type, under the
/// loaded thrift's `rules` (UUID, the size).
#[inline(always)]
pub fn read_list_header<I: WireInput>(input: &mut I, rules: Rules) -> Result<ListHeader, I::Error> {
    let byte = input.read_byte()?;
    let mut size = i64::from(byte >> 4);
    if size == 15 {
        size = read_container_size(input, rules)?;
    }
    let element = thrift_type_in(byte & 0x0f, rules).map_err(|e| input.error(e))?;
    Ok(ListHeader {
        element: element as i8,
        size,
    })
}

/// The list header's bytes: the short form for fewer than 15 elements.
pub fn list_header(compact_type: u8, size: u32) -> ([u8; 6], usize) {
    let mut out = [0u8; 6];
    if size < 15 {
        out[0] = ((size as u8) << 4) | (compact_type & 0x0f);
        return (out, 1);
    }
    out[0] = 0xf0 | (compact_type & 0x0f);
    let v = Varint::new(size.into());
    out[1..1 + v.len].copy_from_slice(v.as_bytes());
    (out, 1 + v.len)
}

/// The map header's bytes: a lone 0 when empty, else the size and the key and value compact types.
pub fn map_header(key_type: u8, value_type: u8, size: u32) -> ([u8; 6], usize) {
    let mut out = [0u8; 6];
    if size == 0 {
        return (out, 1);
    }
    let v = Varint::new(size.into());
    out[..v.len].copy_from_slice(v.as_bytes());
    out[v.len] = (key_type << 4) | (value_type & 0x0f);
    (out, v.len + 1)
}

pub fn encode_double(f: f64) -> [u8; 8] {
    f.to_le_bytes()
}

pub fn decode_double(b: [u8; 8]) -> f64 {
    f64::from_le_bytes(b)
}

#[cfg(test)]
mod tests;
