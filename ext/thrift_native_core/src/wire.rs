//! Field and container headers of both encodings, read from any byte source.
//!
//! The source is a byte slice ([`Reader`](crate::reader::Reader)) in the core's own decoder, its tests and
//! the fuzz targets; in the Ruby binding it is a transport's buffer read in place or a transport's Ruby methods
//! (the protocols' `read_*_begin` and the struct codec). All go through the functions of `binary` and `compact` that
//! take a [`WireInput`], so the headers the fuzzers check are read by the same code that decodes Ruby's structs.

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

/// A map header: key type, value type, size. The size is negative only where [`Rules::negative_sizes`] lets one
/// through, and beyond INT32_MAX only under [`Varint32Rule::Dropping`] (thrift 0.24's compact encoding, which
/// answers a size as the unsigned 32-bit value it read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapHeader {
    pub key: i8,
    pub value: i8,
    pub size: i64,
}

/// A list or set header: element type, size (negative or beyond INT32_MAX as in [`MapHeader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHeader {
    pub element: i8,
    pub size: i64,
}

/// Where the C accelerators of thrift versions read the same bytes differently, what the loaded one does. The
/// binding probes the loaded thrift for them; [`Rules::MASTER`] is thrift master's, which the core's own decoders
/// apply unless told otherwise (`BinaryIn::new`, `plain::decode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Compact type 13 is UUID (thrift 0.23 on); before, it is an unknown type.
    pub uuid: bool,
    /// A negative container size is answered as it is, and a negative binary string length reads as empty (the
    /// binary encoding before thrift 0.24, whose `read_all` answered "" for it); a compact container size beyond
    /// INT32_MAX is then the negative int32 of its bits (the compact encoding before master). Else NegativeSize
    /// and ContainerSizeLimit.
    pub negative_sizes: NegativeSizes,
    /// How a compact varint32 (an i16, i32, size or field id) is read.
    pub varint32: Varint32Rule,
}

/// How the C accelerators of thrift versions read a compact varint32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Varint32Rule {
    /// Before thrift 0.24: as a varint64 (whose 10-byte limit is kept: the old loop had none), then its low 32
    /// bits; a byte string's length whole (so that beyond INT32_MAX it is BinarySizeLimit).
    Wide,
    /// thrift 0.24: at most 5 bytes, the 5th byte's bits beyond 32 dropped; a container size is the unsigned value
    /// (the struct decoder refuses one beyond INT32_MAX, as FIX2INT did, with [`CoreError::IntOutOfRange`]).
    ///
    /// [`CoreError::IntOutOfRange`]: crate::CoreError::IntOutOfRange
    Dropping,
    /// thrift master (THRIFT-6145): at most 5 bytes, bits beyond 32 refused.
    Refusing,
}

/// Which encodings let a negative size through (see [`Rules::negative_sizes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NegativeSizes {
    pub binary: bool,
    pub compact: bool,
}

impl Rules {
    pub const MASTER: Rules = Rules {
        uuid: true,
        negative_sizes: NegativeSizes {
            binary: false,
            compact: false,
        },
        varint32: Varint32Rule::Refusing,
    };
}

/// One step of reading a varint byte by byte, as the C accelerator does through `trans.read_byte`.
pub trait VarintStep: Default {
    type Output;
    /// Takes the next byte: `Some(value)` when it was the last one, `None` when more follow.
    fn step(&mut self, b: u8) -> Result<Option<Self::Output>, CoreError>;
}
