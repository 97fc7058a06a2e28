//! The Ruby around the codec in an RPC call: `client.rs`, `Thrift::Client`'s methods (the client's half of a call).

mod client;

use magnus::{Error, Ruby};

/// Defines the native methods of the RPC classes.
pub fn init(ruby: &Ruby) -> Result<(), Error> {
    client::init(ruby)
}
