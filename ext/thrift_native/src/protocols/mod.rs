//! The protocols' native methods: `binary` (BinaryProtocolAccelerated), `plain_binary` (BinaryProtocol, pure Ruby in
//! every thrift), `compact` (CompactProtocol), `json` (JsonProtocol, pure Ruby in every thrift), and what the first
//! two share (`shared`: message headers, UUIDs, the
//! protocol's `@trans`), and `message_name` (how `read_message_begin`'s readers read the name for the RPC code).

pub mod binary;
pub mod compact;
pub mod json;
pub mod message_name;
pub mod plain_binary;
pub mod shared;
