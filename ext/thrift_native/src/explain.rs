//! The facts behind `ThriftNative.explain(protocol)` (lib/thrift_native/explain.rb words them): for one protocol
//! object, which path its struct reads and writes and its own reads and writes take right now, decided by the very
//! checks the fast paths make (the exact classes, the guards, the transport's buffers), so that the answer cannot
//! drift from what the code does.

use magnus::{Error, RHash, Ruby, Value};
use rb_sys::VALUE;

use crate::protocols::plain_binary;
use crate::ruby::rb;
use crate::struct_codec;
use crate::thrift::thrift;
use crate::transports::io::WriteTarget;
use crate::transports::layered::LayeredBuffer;
use crate::transports::memory_buffer::{self, MemoryBuffer};
use crate::transports::string_io;

/// The ivar of the buffer `trans` is read from in place, if it is.
fn read_place(trans: VALUE) -> Option<&'static str> {
    if MemoryBuffer::plain(trans).is_some() {
        return Some("@buf");
    }
    if LayeredBuffer::plain(trans).is_some() {
        return Some("@rbuf");
    }
    string_io::read_place(trans)
}

/// The ivar of the buffer `trans`'s writes are appended to in place, if they are.
fn write_place(trans: VALUE) -> Option<&'static str> {
    match WriteTarget::of(trans)? {
        WriteTarget::String { .. } if memory_buffer::plain_write_buffer(trans).is_some() => {
            Some("@buf")
        }
        WriteTarget::String { .. } if thrift().http_client_transport == rb::heap_class(trans) => {
            Some("@outbuf")
        }
        WriteTarget::String { .. } => Some("@wbuf"),
        WriteTarget::StringIo(_) => string_io::write_place(trans),
    }
}

fn name(v: Option<&'static str>) -> Value {
    // SAFETY: nil, or a new String on this stack.
    unsafe { rb::value(v.map_or(rb::QNIL, |s| rb::utf8_string(s.as_bytes()))) }
}

/// `{through:, transport:, structs:, reads:, writes:, plain_binary:}`: the protocol a struct read or write reads (a
/// decorator seen through), its transport, the encoding of the struct fast path it takes where the transport lends
/// its buffer (nil: the protocol's methods per value), the ivars of the buffers read and written in place (nil: the
/// transport's methods), and why an exact Thrift::BinaryProtocol keeps its Ruby methods (nil while it does not).
pub fn facts(ruby: &Ruby, _rb_self: Value, protocol: Value) -> Result<RHash, Error> {
    use magnus::rb_sys::AsRawValue;
    let (through, trans, encoding) = struct_codec::fast_path(protocol.as_raw());
    let hash = ruby.hash_new();
    // SAFETY: `through` and `trans` are the protocol or objects it holds, alive on this stack.
    let (through, trans_value) = unsafe { (rb::value(through), rb::value(trans)) };
    hash.aset(ruby.to_symbol("through"), through)?;
    hash.aset(ruby.to_symbol("transport"), trans_value)?;
    hash.aset(ruby.to_symbol("structs"), name(encoding))?;
    hash.aset(ruby.to_symbol("reads"), name(read_place(trans)))?;
    hash.aset(ruby.to_symbol("writes"), name(write_place(trans)))?;
    hash.aset(
        ruby.to_symbol("plain_binary"),
        name(plain_binary::disabled_reason()),
    )?;
    Ok(hash)
}
