//! The protocols' native methods: `binary` (BinaryProtocolAccelerated), `compact` (CompactProtocol), `json`
//! (JsonProtocol, pure Ruby in every thrift), and what the first two share (`shared`: message headers, UUIDs, the
//! protocol's `@trans`).

pub mod binary;
pub mod compact;
pub mod json;
pub mod shared;
