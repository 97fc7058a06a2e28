//! thrift_native without Ruby: the binary, compact and JSON encodings (`binary`, `compact`, `json`; `wire`: the
//! headers both binary and compact read, `reader`: a slice as their source), the struct codec (`codec`), UUID text,
//! gzip and THeader framing.
//!
//! Everything here is generic over where bytes come from and what values are made of, so `cargo test` and the fuzz
//! targets run it with byte slices and plain Rust values (`plain`), and the Ruby binding (`ext/thrift_native`)
//! runs the same code with a transport's String and Ruby objects.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod binary;
pub mod codec;
pub mod compact;
pub mod error;
pub mod gzip;
pub mod header;
pub mod json;
pub mod plain;
pub mod reader;
pub mod uuid;
pub mod wire;

pub use error::CoreError;

/// Thrift types (`Thrift::Types`), the same numbers in every thrift version; UUID (16) is master's.
pub mod ttype {
    pub const STOP: u8 = 0;
    pub const BOOL: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const DOUBLE: u8 = 4;
    pub const I16: u8 = 6;
    pub const I32: u8 = 8;
    pub const I64: u8 = 10;
    pub const STRING: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const MAP: u8 = 13;
    pub const SET: u8 = 14;
    pub const LIST: u8 = 15;
    pub const UUID: u8 = 16;
}
