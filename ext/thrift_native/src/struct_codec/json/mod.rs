//! The JSON fast paths of `Struct#read/#write` and `Union#read/#write` through an exact `Thrift::JsonProtocol`
//! (its methods, its contexts', its lookahead reader's and BaseProtocol's `skip` as the library defines them) over a
//! plain MemoryBufferTransport or an exact Framed or BufferedTransport: `write.rs` writes with the core's `JsonOut`,
//! `read.rs` reads with its `JsonIn`.
//!
//! The protocol keeps its state in Ruby objects: its contexts (`@context`, and the `@contexts` stack) and, reading,
//! the byte its `@reader` holds. The native code keeps them natively, starting from the context the struct is
//! written or read in and storing that one's flags back at the end; whenever the protocol's Ruby methods take over
//! (a value or step left to them, a failure, a transport no longer plain) they are shown as Ruby objects, as the
//! Ruby methods would have left them (`crate::protocols::json::state`).

mod read;
mod write;

pub use read::JsonSource;
pub use write::JsonEncoder;
