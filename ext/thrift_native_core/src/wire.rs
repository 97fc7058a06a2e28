//! Field and container headers of both encodings, read from any byte source.
//!
//! The source is a byte slice ([`binary::Reader`](crate::binary::Reader)) in the core's own decoder, its tests and
//! the fuzz targets; in the Ruby binding it is a `MemoryBufferTransport`'s buffer or a transport's Ruby methods
//! (the protocols' `read_*_begin` and the struct codec). All go through the functions of `binary` and `compact` that
//! take a [`WireInput`], so the headers the fuzzers check are read by the same code that decodes Ruby's structs.

use crate::compact::VarintStep;
use crate::CoreError;

/// Where header bytes come from. Reads consume what they read; the error type is the source's own (a Ruby
/// exception in the binding), and [`WireInput::error`] turns a decoding error into it.
pub trait WireInput {
    type Error;
    fn read_byte(&mut self) -> Result<u8, Self::Error>;
    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], Self::Error>;
    /// A compact varint, consuming what reading it byte by byte would consume.
    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, Self::Error>;
    fn error(&self, e: CoreError) -> Self::Error;
}

/// A field header: its Thrift type (`ttype`) and id. The STOP header has type 0 and id 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldHeader {
    /// Signed, as the binary encoding's type byte is read (`read_byte`).
    pub ttype: i8,
    /// Wider than i16: a compact delta adds up to 15 to the previous id.
    pub id: i64,
}

impl FieldHeader {
    pub const STOP: FieldHeader = FieldHeader { ttype: 0, id: 0 };

    pub fn is_stop(&self) -> bool {
        self.ttype == 0
    }
}

/// A map header: key type, value type, size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapHeader {
    pub key: i8,
    pub value: i8,
    pub size: usize,
}

/// A list or set header: element type, size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHeader {
    pub element: i8,
    pub size: usize,
}

/// A byte slice as a header source: a short read consumes nothing and is `Eof`.
impl WireInput for crate::binary::Reader<'_> {
    type Error = CoreError;

    fn read_byte(&mut self) -> Result<u8, CoreError> {
        Ok(self.take(1)?[0])
    }

    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], CoreError> {
        crate::binary::Reader::read_array(self)
    }

    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, CoreError> {
        let rest = self.rest();
        let take = rest.len().min(crate::compact::MAX_VARINT64_BYTES);
        let (result, consumed) = crate::compact::decode_varint::<R>(&rest[..take]);
        self.take(consumed)?;
        result
    }

    fn error(&self, e: CoreError) -> CoreError {
        e
    }
}
