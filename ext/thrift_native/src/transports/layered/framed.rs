//! `Thrift::FramedTransport`'s native methods. A frame is a 4-byte big-endian size, then that many bytes; with
//! `@read` (or `@write`) false the transport passes reads (or writes) through to the transport beneath.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, Ruby, Value};
use rb_sys::VALUE;

use super::{
    flush_beneath, inner_read_all, is_byte_buffer, write_beneath, Class, LayeredBuffer, FLUSH_M,
    READ, READ_BYTE_M, WRITE_M,
};
use crate::ruby::names::{FLUSH, GETBYTE, READ as READ_NAME, READ_ALL, READ_BYTE, UNPACK1, WRITE};
use crate::ruby::{rb, registry};
use crate::thrift::{bytes, errors, thrift};
use crate::transports::buffer::ReadBuffer;
use crate::transports::memory_buffer::MemoryBuffer;
use crate::transports::socket::{FrameRead, PlainSocket};

fn framed() -> &'static Class {
    &super::FRAMED
}

/// `read_frame`: the size, `@index = 0`, then `@rbuf` = the frame (a new String; from a plain socket, the spent
/// `@rbuf` refilled where it may be, see `spent_rbuf`, and a small frame read with its size in one read, see
/// `PlainSocket::read_frame`).
pub(super) fn read_frame(ruby: &Ruby, c: &'static Class, this: VALUE) -> Result<(), Error> {
    let inner = c.inner(this);
    let index_before = c.index.get(this);
    if let Some(mut mb) = MemoryBuffer::plain(inner) {
        let size = mb.read_with(ruby, 4, |b| {
            u32::from_be_bytes(b.try_into().expect("4 bytes"))
        })?;
        if size == 0 {
            refuse_zero_frame(c, this, index_before)?;
        }
        c.store_index(this, 0);
        let frame = mb.read_all(ruby, size as usize)?;
        return c.set_rbuf(this, frame);
    }
    let socket = PlainSocket::of(inner);
    // The spent `@rbuf` the header (and then the frame) is read into, from a plain socket.
    let spent = socket.and_then(|_| super::spent_rbuf(c, this));
    let read_at_once = match socket {
        Some(socket) => socket
            .read_frame(spent, super::MAX_CHUNK, || c.store_index(this, 0))
            .inspect_err(|_| spent.into_iter().for_each(rb::empty_refillable_string))?,
        None => None,
    };
    let size = match (read_at_once, socket) {
        (Some(FrameRead::Whole(frame)), _) => return c.set_rbuf(this, frame),
        (Some(FrameRead::Size(0)), _) => {
            refuse_zero_frame(c, this, index_before).inspect_err(|_| {
                // The spent `@rbuf` holds the header's bytes now: emptied, as after any failed refill.
                spent.into_iter().for_each(rb::empty_refillable_string)
            })?;
            rb::integer(0)
        }
        (Some(FrameRead::Size(size)), _) => rb::integer(size.into()),
        (None, Some(socket)) => {
            let header = super::socket_refill(socket, 4, spent, true)?;
            // SAFETY: `header` is a String of at least 4 bytes (read_all's loop), copied out at once.
            let b = unsafe { rb::str_bytes(header) };
            rb::integer(i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
        }
        (None, None) => {
            let header = rb::funcall(inner, READ_ALL.get(), &[rb::integer(4)])?;
            rb::funcall(header, UNPACK1.get(), &[rb::binary_string(b"N")])?
        }
    };
    if rb::fixnum_value(size) == Some(0) {
        refuse_zero_frame(c, this, index_before)
            .inspect_err(|_| spent.into_iter().for_each(rb::empty_refillable_string))?;
    }
    c.store_index(this, 0);
    let in_one_chunk = rb::fixnum_value(size)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=super::MAX_CHUNK).contains(n));
    let frame = match (in_one_chunk, PlainSocket::of(inner)) {
        // The frame read into the spent `@rbuf` (the header's bytes were copied out of it).
        (Some(n), Some(socket)) => {
            super::socket_refill(socket, n, super::still_spent(c, this, spent), true)
        }
        _ => inner_read_all(ruby, inner, size),
    };
    match frame {
        Ok(frame) => c.set_rbuf(this, frame),
        Err(e) => {
            // `@index` is 0 already: the header's bytes in `@rbuf` must not read as the frame.
            super::still_spent(c, this, spent)
                .into_iter()
                .for_each(rb::empty_refillable_string);
            Err(e)
        }
    }
}

/// A zero-length frame, where the library refuses one (THRIFT-6155, `Thrift::zero_frame`): its exception, with `@index`
/// (`index_before`, or 0) and `@rbuf` (as it is, or "") left as its `read_frame` leaves them; a spent `@rbuf` a socket's
/// header was read into is emptied by the caller, as after any failed refill. Elsewhere nothing: the frame is taken
/// as it is, as the library takes it.
fn refuse_zero_frame(c: &'static Class, this: VALUE, index_before: VALUE) -> Result<(), Error> {
    let Some(refusal) = &thrift().zero_frame else {
        return Ok(());
    };
    if refusal.index_kept {
        c.index.set(this, index_before)?;
    } else {
        c.store_index(this, 0);
    }
    if !refusal.rbuf_kept {
        c.set_rbuf(this, rb::binary_string(&[]))?;
    }
    // SAFETY: the message is a String pinned at load time.
    let message = unsafe { rb::str_bytes(refusal.message) };
    Err(errors::transport(
        thrift().transport_end_of_file,
        &String::from_utf8_lossy(message),
    ))
}

/// `rbuf.getbyte(i)`: the byte, or nil past the end; an odd `@rbuf` answers as Ruby makes it answer.
fn getbyte(rbuf: VALUE, i: usize) -> Result<VALUE, Error> {
    if is_byte_buffer(rbuf) {
        // SAFETY: `rbuf` is a String; the byte is copied out at once.
        let b = unsafe { rb::str_bytes(rbuf) }.get(i).copied();
        return Ok(b.map_or(rb::QNIL, |b| rb::integer(b.into())));
    }
    rb::funcall(rbuf, GETBYTE.get(), &[rb::integer(i as i64)])
}

/// `@rbuf.slice(start, n) || ""`.
pub(super) fn slice(rbuf: VALUE, start: usize, n: usize) -> Result<VALUE, Error> {
    if is_byte_buffer(rbuf) {
        // SAFETY: `rbuf` is a String.
        let len = unsafe { rb::str_len(rbuf) };
        if start > len {
            return Ok(rb::binary_string(&[]));
        }
        return Ok(rb::str_subseq(rbuf, start, n.min(len - start)));
    }
    let piece = rb::funcall(
        rbuf,
        crate::ruby::names::SLICE.get(),
        &[rb::integer(start as i64), rb::integer(n as i64)],
    )?;
    Ok(if rb::is_nil(piece) {
        rb::binary_string(&[])
    } else {
        piece
    })
}

/// `read(sz)`: the rest of the current frame up to `sz` bytes (a new frame first when it is used up).
fn read(ruby: &Ruby, rb_self: Value, sz: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), framed());
    let n = match rb::fixnum_value(sz.as_raw()) {
        Some(n) if c.owns(this) => n,
        _ => return c.original(READ, this, &[sz.as_raw()]).map(rb::returned),
    };
    if !rb::truthy(c.read.get(this)) {
        return rb::funcall(c.inner(this), READ_NAME.get(), &[sz.as_raw()]).map(rb::returned);
    }
    if n <= 0 {
        return Ok(rb::returned(rb::binary_string(&[])));
    }
    let Some(b) = LayeredBuffer::load(c, this) else {
        return c.original(READ, this, &[sz.as_raw()]).map(rb::returned);
    };
    let mut index = b.index;
    if index >= b.bytes.len() {
        read_frame(ruby, c, this)?;
        index = 0;
    }
    let n = n as usize;
    c.store_index(this, index + n);
    slice(c.rbuf.get(this), index, n).map(rb::returned)
}

fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), framed());
    if !c.owns(this) {
        return c.original(READ_BYTE_M, this, &[]).map(rb::returned);
    }
    if !rb::truthy(c.read.get(this)) {
        return rb::funcall(c.inner(this), READ_BYTE.get(), &[]).map(rb::returned);
    }
    let Some(b) = LayeredBuffer::load(c, this) else {
        return c.original(READ_BYTE_M, this, &[]).map(rb::returned);
    };
    let mut index = b.index;
    if index >= b.bytes.len() {
        read_frame(ruby, c, this)?;
        index = 0;
    }
    c.store_index(this, index + 1);
    getbyte(c.rbuf.get(this), index).map(rb::returned)
}

/// `write(buf, sz = nil)`: `buf` re-tagged BINARY in place, then its first `sz` bytes (all of it) appended to
/// `@wbuf`; returns `@wbuf`.
fn write(_ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), framed());
    let raw: Vec<VALUE> = args.iter().map(|a| a.as_raw()).collect();
    let sz = raw.get(1).copied().unwrap_or(rb::QNIL);
    let plain_sz = rb::truthy(sz).then(|| rb::fixnum_value(sz));
    if !c.owns(this) || args.is_empty() || args.len() > 2 || plain_sz == Some(None) {
        return c.original(WRITE_M, this, &raw).map(rb::returned);
    }
    if !rb::truthy(c.write.get(this)) {
        return rb::funcall(c.inner(this), WRITE.get(), &raw[..1]).map(rb::returned);
    }
    let buf = bytes::force_binary_encoding(raw[0])?;
    let wbuf = c.wbuf.get(this);
    if !is_byte_buffer(wbuf) || !rb::is_string(buf) {
        return c.original(WRITE_M, this, &raw).map(rb::returned);
    }
    // SAFETY: `buf` is a String.
    let len = unsafe { rb::str_len(buf) };
    // `buf[0...sz]`: a negative sz counts from the end.
    let n = match plain_sz.flatten() {
        None => len,
        Some(sz) if sz >= 0 => (sz as usize).min(len),
        Some(sz) => len.saturating_sub(sz.unsigned_abs() as usize),
    };
    rb::str_cat_prefix(wbuf, buf, n)?;
    Ok(rb::returned(wbuf))
}

/// `flush`: the frame (size and `@wbuf`) in one `@transport.write`, then `@transport.flush`, then a new `@wbuf` (or
/// the same one emptied, see `renewed_wbuf`), which it answers.
pub(super) fn flush(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let (this, c) = (rb_self.as_raw(), framed());
    if !c.owns(this) {
        return c.original(FLUSH_M, this, &[]).map(rb::returned);
    }
    let inner = c.inner(this);
    if !rb::truthy(c.write.get(this)) {
        return rb::funcall(inner, FLUSH.get(), &[]).map(rb::returned);
    }
    let wbuf = c.wbuf.get(this);
    if !is_byte_buffer(wbuf) {
        return c.original(FLUSH_M, this, &[]).map(rb::returned);
    }
    // SAFETY: `wbuf` is a String on this stack; the bytes are copied before anything else happens.
    let payload = unsafe { rb::str_bytes(wbuf) };
    let size = (payload.len() as u32).to_be_bytes();
    // `@wbuf` itself goes to no Ruby code: a transport's `write` gets a frame String of its own.
    match crate::transports::memory_buffer::plain_write_buffer(inner) {
        // MemoryBufferTransport#write would append the frame's bytes to its buffer: no frame String needed.
        Some(buf) => {
            rb::str_cat(buf, &size)?;
            rb::str_cat_str(buf, wbuf)?;
        }
        None => {
            let mut frame = Vec::with_capacity(4 + payload.len());
            frame.extend_from_slice(&size);
            frame.extend_from_slice(payload);
            match PlainSocket::of(inner) {
                // The frame's bytes, with no String.
                Some(socket) => socket.write_bytes(&frame)?,
                None => drop(write_beneath(inner, rb::binary_string(&frame))?),
            }
        }
    }
    flush_beneath(inner)?;
    super::renewed_wbuf(c, this, wbuf).map(rb::returned)
}

pub(super) fn init(ruby: &Ruby, c: &'static Class) -> Result<(), Error> {
    // SAFETY: the class is pinned at load time.
    let class =
        RClass::from_value(unsafe { rb::value(c.class()) }).expect("FramedTransport is a class");
    registry::define_method(ruby, class, "read", magnus::method!(read, 1))?;
    registry::define_method(ruby, class, "read_byte", magnus::method!(read_byte, 0))?;
    super::define_shared(ruby, class, c)?;
    registry::define_method(ruby, class, "write", magnus::method!(write, -1))?;
    registry::define_method(ruby, class, "flush", magnus::method!(flush, 0))?;
    Ok(())
}
