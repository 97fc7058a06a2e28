//! Thrift wire codecs and gzip framing with no Ruby in them.
//!
//! Everything here works on byte slices (or, for the headers of `wire`, on any byte source), so it is tested with
//! `cargo test` and fuzzed without a Ruby. The Ruby binding (`ext/thrift_native`) moves bytes between Ruby Strings
//! and these functions; `schema` runs the struct decoding algorithm on plain Rust values for tests and fuzzing.

pub mod binary;
pub mod codec;
pub mod compact;
pub mod error;
pub mod gzip;
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
