//! The struct codec's binary encoding: [`BinaryIn`] reads headers and scalars from a [`Host`]'s bytes,
//! [`BinaryOut`] writes them.

use super::read::{bytes_value, Host, Source, Values};
use super::write::Encoder;
use super::{FieldBegin, ListBegin, MapBegin, Primitive, Scalar, Sequence};
use crate::binary::{self, read_field_header, read_list_header, read_map_header, read_size_in};
use crate::wire::Rules;

/// The binary encoding read from a host's bytes.
#[derive(Debug)]
pub struct BinaryIn<H> {
    pub host: H,
    /// The loaded thrift's: negative sizes let through before 0.24.
    rules: Rules,
}

impl<H> BinaryIn<H> {
    pub fn new(host: H) -> Self {
        BinaryIn::with_rules(host, Rules::MASTER)
    }

    pub fn with_rules(host: H, rules: Rules) -> Self {
        BinaryIn { host, rules }
    }
}

impl<H: Host, V: Values<Error = H::Error>> Source<V> for BinaryIn<H> {
    fn remaining(&self) -> Option<usize> {
        self.host.remaining()
    }

    #[inline(always)]
    fn field_begin(&mut self) -> Result<FieldBegin, H::Error> {
        read_field_header(&mut self.host).map(FieldBegin::from)
    }

    #[inline(always)]
    fn map_begin(&mut self) -> Result<MapBegin, H::Error> {
        read_map_header(&mut self.host, self.rules).map(MapBegin::from)
    }

    #[inline(always)]
    fn list_begin(&mut self, _seq: Sequence) -> Result<ListBegin, H::Error> {
        read_list_header(&mut self.host, self.rules).map(ListBegin::from)
    }

    #[inline(always)]
    fn scalar(&mut self, kind: Scalar, values: &mut V) -> Result<V::Value, H::Error> {
        let h = &mut self.host;
        Ok(match kind {
            Scalar::Bool => values.bool(h.read_byte()? != 0),
            Scalar::Byte => values.byte(h.read_byte()? as i8),
            Scalar::I16 => values.i16(binary::decode_i16(h.read_array()?)),
            Scalar::I32 => values.i32(binary::decode_i32(h.read_array()?)),
            Scalar::I64 => values.i64(binary::decode_i64(h.read_array()?)),
            Scalar::Double => values.double(binary::decode_double(h.read_array()?)),
            Scalar::String | Scalar::Binary => {
                let n = read_size_in(h, self.rules)?;
                bytes_value(h, kind, n, values)?
            }
            Scalar::Uuid => bytes_value(h, kind, 16, values)?,
        })
    }
}

/// The binary encoding written into a buffer of its own.
#[derive(Debug, Default)]
pub struct BinaryOut {
    pub out: Vec<u8>,
}

impl BinaryOut {
    pub fn new(out: Vec<u8>) -> Self {
        BinaryOut { out }
    }
}

impl Encoder for BinaryOut {
    #[inline(always)]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    #[inline(always)]
    fn struct_begin(&mut self) -> i64 {
        0
    }

    #[inline(always)]
    fn struct_end(&mut self, _saved: i64) {}

    /// The type byte and the i16 id, as BinaryProtocol writes them (the low bits of what it is given).
    #[inline(always)]
    fn field_begin(&mut self, ttype: i64, id: i64) -> Result<(), crate::CoreError> {
        self.out.push(ttype as u8);
        self.out.extend_from_slice(&binary::encode_i16(id as i16));
        Ok(())
    }

    #[inline(always)]
    fn field_stop(&mut self) {
        self.out.push(0);
    }

    #[inline(always)]
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), crate::CoreError> {
        self.out.extend_from_slice(&[key as u8, value as u8]);
        self.out.extend_from_slice(&binary::encode_i32(size as i32));
        Ok(())
    }

    #[inline(always)]
    fn list_begin(&mut self, element: i64, size: usize) -> Result<(), crate::CoreError> {
        self.out.push(element as u8);
        self.out.extend_from_slice(&binary::encode_i32(size as i32));
        Ok(())
    }

    #[inline(always)]
    fn primitive(&mut self, _kind: Scalar, p: Primitive<'_>) {
        let out = &mut self.out;
        match p {
            Primitive::Bool(b) => out.push(u8::from(b)),
            Primitive::Byte(n) => out.push(n as u8),
            Primitive::I16(n) => out.extend_from_slice(&binary::encode_i16(n)),
            Primitive::I32(n) => out.extend_from_slice(&binary::encode_i32(n)),
            Primitive::I64(n) => out.extend_from_slice(&binary::encode_i64(n)),
            Primitive::Double(f) => out.extend_from_slice(&binary::encode_double(f)),
            Primitive::Bytes(b) => {
                out.extend_from_slice(&binary::encode_i32(b.len() as i32));
                out.extend_from_slice(b);
            }
            Primitive::Uuid(b) => out.extend_from_slice(&b),
        }
    }
}
