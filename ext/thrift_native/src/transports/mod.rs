//! The transports whose bytes the fast paths read and write in place: `memory_buffer` (MemoryBufferTransport),
//! `layered` (FramedTransport and BufferedTransport), and those that keep them in StringIOs (`string_io`): `header`
//! (thrift master's HeaderTransport), `http_client` (HTTPClientTransport), `io_stream` (IOStreamTransport); `buffer`
//! is the trait they share, and `io` is how a protocol reaches any transport (in place, or through its Ruby
//! methods). `socket` serves the calls those transports make on a Thrift::Socket or Thrift::UNIXSocket beneath them.

pub mod buffer;
pub mod header;
pub mod http_client;
pub mod io;
pub mod io_stream;
pub mod layered;
pub mod memory_buffer;
pub mod socket;
pub mod string_io;

/// The BaseTransport methods a transport that lends a StringIO reads with (its own `read` beneath them): while they
/// are the library's, a read of n bytes through them is the StringIO's next n bytes.
const BASE_READS: &[&str] = &["read_all", "read_byte", "read_into_buffer"];

use magnus::{Error, Ruby};

/// Defines the transports' native methods and registers their guards.
pub fn init(ruby: &Ruby) -> Result<(), Error> {
    memory_buffer::init(ruby)?;
    layered::init(ruby)?;
    socket::init(ruby)?;
    string_io::init();
    http_client::init();
    io_stream::init();
    header::init(ruby)
}
