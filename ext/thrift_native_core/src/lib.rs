//! Thrift wire codecs and gzip framing with no Ruby in them.
//!
//! Everything here works on byte slices, so it is tested with `cargo test` and fuzzed without a Ruby. The Ruby
//! binding (`ext/thrift_native`) moves bytes between Ruby Strings and these functions.

pub mod binary;
pub mod compact;
pub mod error;
pub mod gzip;
pub mod uuid;

pub use error::CoreError;
