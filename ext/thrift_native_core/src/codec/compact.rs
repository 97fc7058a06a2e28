//! The struct codec's compact encoding: [`CompactIn`] reads headers and scalars from a [`Host`]'s bytes,
//! [`CompactOut`] writes them. Field ids are deltas from the previous field of the same struct (kept here per
//! struct, saved and restored around nested ones), and a bool field's value travels in its header's type.

use super::read::{bytes_value, Host, Source, Values};
use super::write::Encoder;
use super::{FieldBegin, ListBegin, MapBegin, Primitive, Scalar, Sequence};
use crate::compact::{
    self, compact_type_of, ctype, read_field_header_in, read_list_header, read_map_header,
    read_size, zigzag32, zigzag64, Varint,
};
use crate::wire::Rules;
use crate::{ttype, CoreError};

/// The compact encoding read from a host's bytes.
#[derive(Debug)]
pub struct CompactIn<H> {
    pub host: H,
    /// The id of the previous field of the struct being read.
    last_field: i64,
    /// The loaded thrift's: UUID, sizes, varint32 overflow.
    rules: Rules,
}

impl<H> CompactIn<H> {
    pub fn new(host: H) -> Self {
        CompactIn::with_rules(host, Rules::MASTER)
    }

    pub fn with_rules(host: H, rules: Rules) -> Self {
        CompactIn {
            host,
            last_field: 0,
            rules,
        }
    }
}

impl<H: Host, V: Values<Error = H::Error>> Source<V> for CompactIn<H> {
    fn remaining(&self) -> Option<usize> {
        self.host.remaining()
    }

    #[inline(always)]
    fn struct_begin(&mut self) -> Result<i64, H::Error> {
        Ok(std::mem::replace(&mut self.last_field, 0))
    }

    #[inline(always)]
    fn struct_end(&mut self, saved: i64) -> Result<(), H::Error> {
        self.last_field = saved;
        Ok(())
    }

    #[inline(always)]
    fn field_begin(&mut self) -> Result<FieldBegin, H::Error> {
        let f = read_field_header_in(&mut self.host, &mut self.last_field, self.rules)?;
        if let Some(b) = f.bool_value {
            self.host.put_bool(b)?;
        }
        Ok(FieldBegin::from(f.header))
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
            // A bool field's value came with its header; a container element is a byte of its own.
            Scalar::Bool => match h.take_bool()? {
                Some(b) => values.bool(b),
                None => values.bool(h.read_byte()? == ctype::BOOLEAN_TRUE),
            },
            Scalar::Byte => values.byte(h.read_byte()? as i8),
            Scalar::I16 => values.i16(compact::read_i16(h, self.rules)?),
            Scalar::I32 => values.i32(compact::read_i32(h, self.rules)?),
            Scalar::I64 => values.i64(compact::read_i64(h)?),
            Scalar::Double => values.double(compact::decode_double(h.read_array()?)),
            Scalar::String | Scalar::Binary => {
                let n = read_size(h, self.rules)?;
                bytes_value(h, kind, n, values)?
            }
            Scalar::Uuid => bytes_value(h, kind, 16, values)?,
        })
    }
}

/// The compact encoding written into a buffer of its own.
#[derive(Debug, Default)]
pub struct CompactOut {
    pub out: Vec<u8>,
    /// The id of the previous field of the struct being written.
    last_field: i64,
    /// A bool field whose header waits for its value.
    bool_field: Option<i64>,
}

impl CompactOut {
    pub fn new(out: Vec<u8>) -> Self {
        CompactOut {
            out,
            last_field: 0,
            bool_field: None,
        }
    }

    #[inline(always)]
    fn header(&mut self, compact_type: u8, id: i64) {
        let last = std::mem::replace(&mut self.last_field, id);
        let (header, len) = compact::field_header(compact_type, id as i16, last);
        if len == 1 {
            // The common case, a delta: one byte, no slice to copy.
            self.out.push(header[0]);
        } else {
            self.out.extend_from_slice(&header[..len]);
        }
    }

    #[inline(always)]
    fn varint(&mut self, n: u64) {
        if n < 0x80 {
            self.out.push(n as u8);
            return;
        }
        self.out.extend_from_slice(Varint::new(n).as_bytes());
    }
}

impl Encoder for CompactOut {
    #[inline(always)]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    #[inline(always)]
    fn struct_begin(&mut self) -> i64 {
        std::mem::replace(&mut self.last_field, 0)
    }

    #[inline(always)]
    fn struct_end(&mut self, saved: i64) {
        self.last_field = saved;
    }

    /// A bool field's header waits for its value ([`Encoder::primitive`]); any other is written now.
    #[inline(always)]
    fn field_begin(&mut self, ttype: i64, id: i64) -> Result<(), CoreError> {
        if ttype == i64::from(ttype::BOOL) {
            self.bool_field = Some(id);
            return Ok(());
        }
        let compact_type = compact_type_of(ttype)?;
        self.header(compact_type, id);
        Ok(())
    }

    #[inline(always)]
    fn field_stop(&mut self) {
        self.out.push(ctype::STOP);
    }

    /// The size is written before the types are looked at, as the C accelerator does.
    #[inline(always)]
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), CoreError> {
        if size == 0 {
            self.out.push(0);
            return Ok(());
        }
        self.varint(size as u64);
        let k = compact_type_of(key)?;
        let v = compact_type_of(value)?;
        self.out.push((k << 4) | v);
        Ok(())
    }

    #[inline(always)]
    fn list_begin(&mut self, element: i64, size: usize) -> Result<(), CoreError> {
        let e = compact_type_of(element)?;
        let (header, n) = compact::list_header(e, size as u32);
        self.out.extend_from_slice(&header[..n]);
        Ok(())
    }

    #[inline(always)]
    fn primitive(&mut self, _kind: Scalar, p: Primitive<'_>) {
        match p {
            Primitive::Bool(b) => {
                let compact_type = if b {
                    ctype::BOOLEAN_TRUE
                } else {
                    ctype::BOOLEAN_FALSE
                };
                match self.bool_field.take() {
                    Some(id) => self.header(compact_type, id),
                    None => self.out.push(compact_type),
                }
            }
            Primitive::Byte(n) => self.out.push(n as u8),
            Primitive::I16(n) => self.varint(zigzag32(n.into()).into()),
            Primitive::I32(n) => self.varint(zigzag32(n).into()),
            Primitive::I64(n) => self.varint(zigzag64(n)),
            Primitive::Double(f) => self.out.extend_from_slice(&compact::encode_double(f)),
            Primitive::Bytes(b) => {
                self.varint(b.len() as u64);
                self.out.extend_from_slice(b);
            }
            Primitive::Uuid(b) => self.out.extend_from_slice(&b),
        }
    }
}
