//! The transports whose bytes the fast paths read and write in place: `memory_buffer` (MemoryBufferTransport),
//! `layered` (FramedTransport and BufferedTransport), `header` (thrift master's HeaderTransport); `buffer` is the
//! trait they share, and `io` is how a protocol reaches any transport (in place, or through its Ruby methods).
//! `socket` serves the calls those transports make on a Thrift::Socket or Thrift::UNIXSocket beneath them.

pub mod buffer;
pub mod header;
pub mod io;
pub mod layered;
pub mod memory_buffer;
pub mod socket;

use magnus::{Error, Ruby};

/// Defines the transports' native methods and registers their guards.
pub fn init(ruby: &Ruby) -> Result<(), Error> {
    memory_buffer::init(ruby)?;
    layered::init(ruby)?;
    socket::init(ruby)?;
    header::init(ruby)
}
