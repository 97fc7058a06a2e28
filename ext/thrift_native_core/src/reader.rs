//! [`Reader`]: a cursor over a byte slice, the header source (`WireInput`) of the core's own decoder, its tests and
//! the fuzz targets.

use byteorder::{BigEndian, ByteOrder};

use crate::binary::read_size;
use crate::compact::{decode_varint, MAX_VARINT64_BYTES};
use crate::wire::{VarintStep, WireInput};
use crate::CoreError;

/// A cursor over bytes that have been received but not yet consumed.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], pos: usize) -> Self {
        Reader {
            bytes,
            pos: pos.min(bytes.len()),
        }
    }

    /// How far into the bytes the next read starts.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The bytes not yet consumed.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// The next `n` bytes, consumed; on a short input nothing is consumed.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CoreError> {
        if n > self.remaining() {
            return Err(CoreError::Eof {
                needed: n,
                available: self.remaining(),
            });
        }
        let slice = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N], CoreError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn read_i8(&mut self) -> Result<i8, CoreError> {
        Ok(self.take(1)?[0] as i8)
    }

    pub fn read_i16(&mut self) -> Result<i16, CoreError> {
        Ok(BigEndian::read_i16(self.take(2)?))
    }

    pub fn read_i32(&mut self) -> Result<i32, CoreError> {
        Ok(BigEndian::read_i32(self.take(4)?))
    }

    pub fn read_i64(&mut self) -> Result<i64, CoreError> {
        Ok(BigEndian::read_i64(self.take(8)?))
    }

    pub fn read_double(&mut self) -> Result<f64, CoreError> {
        Ok(BigEndian::read_f64(self.take(8)?))
    }

    /// An i32 length that must not be negative, as read by `read_binary` and the container headers.
    pub fn read_size(&mut self) -> Result<usize, CoreError> {
        read_size(self)
    }
}

/// A byte slice as a header source: a short read consumes nothing and is `Eof`.
impl WireInput for Reader<'_> {
    type Error = CoreError;

    fn read_byte(&mut self) -> Result<u8, CoreError> {
        Ok(self.take(1)?[0])
    }

    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], CoreError> {
        Reader::read_array(self)
    }

    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, CoreError> {
        let rest = self.rest();
        let take = rest.len().min(MAX_VARINT64_BYTES);
        let (result, consumed) = decode_varint::<R>(&rest[..take]);
        self.take(consumed)?;
        result
    }

    fn error(&self, e: CoreError) -> CoreError {
        e
    }
}
