//! `Thrift::BufferedTransport`'s native methods: reads refill `@rbuf` with `@transport.read(DEFAULT_BUFFER)` (more
//! for a larger `read`), writes gather in `@wbuf` until `flush`.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, Ruby, Value};
use rb_sys::VALUE;

use super::framed::slice;
use super::{
    flush_beneath, is_byte_buffer, write_beneath, Class, LayeredBuffer, FLUSH_M, MAX_CHUNK, READ,
    READ_BYTE_M, WRITE_M,
};
use crate::ruby::names::{GETBYTE, READ as READ_NAME};
use crate::ruby::{rb, registry};
use crate::thrift::bytes;
use crate::thrift::thrift;
use crate::transports::memory_buffer::MemoryBuffer;
use crate::transports::socket::PlainSocket;

fn buffered() -> &'static Class {
    &super::BUFFERED
}

/// `@rbuf = @transport.read(want)`: natively from a plain MemoryBufferTransport (whose `read` raises EOFError, after
/// consuming what is left, when fewer bytes remain); from any other transport through its `read`, asking for at most
/// 1 MiB (a transport's `read` may always answer fewer bytes), so that a huge `read` allocates nothing ahead.
fn fill(ruby: &Ruby, c: &'static Class, this: VALUE, want: usize) -> Result<(), Error> {
    let inner = c.inner(this);
    let rbuf = match MemoryBuffer::plain(inner) {
        Some(mut mb) => mb.read(ruby, want)?,
        None => {
            let want = want.min(MAX_CHUNK.max(thrift().buffered_default));
            match PlainSocket::of(inner) {
                Some(socket) if want > 0 => {
                    super::socket_refill(socket, want, super::spent_rbuf(c, this), false)?
                }
                _ => rb::funcall(inner, READ_NAME.get(), &[rb::integer(want as i64)])?,
            }
        }
    };
    c.set_rbuf(this, rbuf)
}

/// The refill of `read_byte` and `read_into_buffer`: `DEFAULT_BUFFER` bytes, `@index = 0`.
pub(super) fn refill(ruby: &Ruby, c: &'static Class, this: VALUE) -> Result<(), Error> {
    fill(ruby, c, this, thrift().buffered_default)?;
    c.store_index(this, 0);
    Ok(())
}

/// `read(sz)`:
///
/// ```ruby
/// @index += sz
/// ret = @rbuf.slice(@index - sz, sz) || ""
/// if ret.length == 0
///   @rbuf = @transport.read([sz, DEFAULT_BUFFER].max); @index = sz
///   ret = @rbuf.slice(0, sz) || ""
/// end
/// ```
fn read(ruby: &Ruby, rb_self: Value, sz: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), buffered());
    let n = rb::fixnum_value(sz.as_raw()).and_then(|n| usize::try_from(n).ok());
    let (Some(n), true) = (n, c.owns(this)) else {
        return c.original(READ, this, &[sz.as_raw()]).map(rb::returned);
    };
    let Some(b) = LayeredBuffer::load(c, this) else {
        return c.original(READ, this, &[sz.as_raw()]).map(rb::returned);
    };
    let start = b.index;
    c.store_index(this, start + n);
    if n > 0 && start < b.bytes.len() {
        return slice(b.rbuf, start, n).map(rb::returned);
    }
    fill(ruby, c, this, n.max(thrift().buffered_default))?;
    c.store_index(this, n);
    slice(c.rbuf.get(this), 0, n).map(rb::returned)
}

fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), buffered());
    let b = if c.owns(this) {
        LayeredBuffer::load(c, this)
    } else {
        None
    };
    let Some(b) = b else {
        return c.original(READ_BYTE_M, this, &[]).map(rb::returned);
    };
    let mut index = b.index;
    if index >= b.bytes.len() {
        refill(ruby, c, this)?;
        index = 0;
    }
    c.store_index(this, index + 1);
    let rbuf = c.rbuf.get(this);
    if is_byte_buffer(rbuf) {
        // SAFETY: `rbuf` is a String; the byte is copied out at once.
        let byte = unsafe { rb::str_bytes(rbuf) }.get(index).copied();
        return Ok(rb::returned(
            byte.map_or(rb::QNIL, |b| rb::integer(b.into())),
        ));
    }
    rb::funcall(rbuf, GETBYTE.get(), &[rb::integer(index as i64)]).map(rb::returned)
}

/// `write(buf)`: `@wbuf << Bytes.force_binary_encoding(buf)` (re-tagging `buf` in place); returns `@wbuf`.
fn write(_ruby: &Ruby, rb_self: Value, buf: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), buffered());
    let wbuf = c.wbuf.get(this);
    if !c.owns(this) || !is_byte_buffer(wbuf) {
        return c.original(WRITE_M, this, &[buf.as_raw()]).map(rb::returned);
    }
    let buf = bytes::force_binary_encoding(buf.as_raw())?;
    if !rb::is_string(buf) {
        return c.original(WRITE_M, this, &[buf]).map(rb::returned);
    }
    rb::str_cat_str(wbuf, buf)?;
    Ok(rb::returned(wbuf))
}

/// `flush`: `@transport.write(@wbuf)` and a new `@wbuf` unless it is empty, then `@transport.flush`.
pub(super) fn flush(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), buffered());
    let wbuf = c.wbuf.get(this);
    if !c.owns(this) || !is_byte_buffer(wbuf) {
        return c.original(FLUSH_M, this, &[]).map(rb::returned);
    }
    let inner = c.inner(this);
    // SAFETY: `wbuf` is a String.
    if unsafe { rb::str_len(wbuf) } > 0 {
        match crate::transports::memory_buffer::plain_write_buffer(inner) {
            // What MemoryBufferTransport#write does with it: its bytes appended to the buffer.
            Some(buf) => rb::str_cat_str(buf, wbuf)?,
            None => match PlainSocket::of(inner) {
                // A copy of the bytes (the GVL is released while they are written, and `@wbuf` is Ruby's), in
                // place of the frozen copy IO#write would make of `@wbuf`.
                Some(socket) => {
                    // SAFETY: `wbuf` is a String on this stack; its bytes are copied before anything else runs.
                    let copy = unsafe { rb::str_bytes(wbuf) }.to_vec();
                    socket.write_bytes(&copy)?
                }
                None => {
                    // `@wbuf` itself went to Ruby code, which may keep it: a new one, as the library makes.
                    write_beneath(inner, wbuf)?;
                    c.set_wbuf(this, rb::binary_string(&[]))?;
                    return flush_beneath(inner).map(rb::returned);
                }
            },
        }
        super::renewed_wbuf(c, this, wbuf)?;
    }
    flush_beneath(inner).map(rb::returned)
}

pub(super) fn init(ruby: &Ruby, c: &'static Class) -> Result<(), Error> {
    // SAFETY: the class is pinned at load time.
    let class =
        RClass::from_value(unsafe { rb::value(c.class()) }).expect("BufferedTransport is a class");
    registry::define_method(ruby, class, "read", magnus::method!(read, 1))?;
    registry::define_method(ruby, class, "read_byte", magnus::method!(read_byte, 0))?;
    super::define_shared(ruby, class, c)?;
    registry::define_method(ruby, class, "write", magnus::method!(write, 1))?;
    registry::define_method(ruby, class, "flush", magnus::method!(flush, 0))?;
    Ok(())
}
