//! How a protocol reaches its transport: straight into a plain MemoryBufferTransport's buffer, or into an exact
//! FramedTransport's or BufferedTransport's buffers (the fast path), or through the transport's Ruby methods exactly
//! as the C accelerator calls them (the dispatch path).

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{IVAR_RBUF, READ_ALL, READ_BYTE, READ_INTO_BUFFER, WRITE};
use crate::ruby::rb;
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};
use crate::transports::buffer::InPlace;
use crate::transports::header::fast::StringIoTarget;
use crate::transports::layered::{self, LayeredBuffer};
use crate::transports::memory_buffer::{self, MemoryBuffer};
use thrift_native_core::compact::VarintStep;
use thrift_native_core::wire::WireInput;
use thrift_native_core::{uuid, CoreError};

/// An [`Input`] as the core's header decoders (`binary::read_field_header`, ...) read it:
/// the same decoders the core's tests and fuzz targets drive.
pub struct Wire<'a> {
    ruby: &'a Ruby,
    source: &'a mut Input,
}

impl<'a> Wire<'a> {
    pub fn new(ruby: &'a Ruby, source: &'a mut Input) -> Self {
        Wire { ruby, source }
    }
}

impl WireInput for Wire<'_> {
    type Error = Error;

    #[inline(always)]
    fn read_byte(&mut self) -> Result<u8, Error> {
        self.source.read_byte(self.ruby).map(|b| b as u8)
    }

    #[inline(always)]
    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        self.source.read_array(self.ruby)
    }

    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, Error> {
        self.source.read_varint::<R>(self.ruby)
    }

    fn error(&self, e: CoreError) -> Error {
        errors::from_core(self.ruby, e)
    }
}

/// A transport's buffer as the struct codec's fast path reads it: a plain MemoryBufferTransport's, or an exact
/// FramedTransport's or BufferedTransport's read buffer.
pub trait FastBuffer: Sized {
    /// The buffer of `trans`, when the fast path may read it.
    fn plain(trans: VALUE) -> Option<Self>;
    /// Picks the buffer up again after Ruby code ran (which may have changed the transport); false when the fast
    /// path may no longer read it.
    #[inline(always)]
    fn resume(&mut self, trans: VALUE) -> bool {
        match Self::plain(trans) {
            Some(b) => {
                *self = b;
                true
            }
            None => false,
        }
    }
    /// Hands the read position to the transport, for a buffer that keeps its own (before Ruby code that reads the
    /// transport, and at the end).
    #[inline(always)]
    fn commit(&mut self) {}
    /// Bytes known to remain in the message (for reservations); None when more may come from a refill.
    fn remaining(&self) -> Option<usize>;
    fn read_byte(&mut self, ruby: &Ruby) -> Result<u8, Error>;
    /// `protocol`: whose `@rbuf` a refill reads into, as the C accelerator's `read_into_buffer(@rbuf, N)`.
    fn read_array<const N: usize>(
        &mut self,
        ruby: &Ruby,
        protocol: VALUE,
    ) -> Result<[u8; N], Error>;
    fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error>;
    fn read_with<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        make: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error>;
}

impl FastBuffer for MemoryBuffer {
    #[inline(always)]
    fn plain(trans: VALUE) -> Option<Self> {
        MemoryBuffer::plain(trans)
    }
    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        Some(self.available())
    }
    #[inline(always)]
    fn read_byte(&mut self, ruby: &Ruby) -> Result<u8, Error> {
        MemoryBuffer::read_byte(self, ruby)
    }
    #[inline(always)]
    fn read_array<const N: usize>(
        &mut self,
        ruby: &Ruby,
        _protocol: VALUE,
    ) -> Result<[u8; N], Error> {
        MemoryBuffer::read_array(self, ruby)
    }
    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error> {
        MemoryBuffer::read_varint::<R>(self, ruby)
    }
    #[inline(always)]
    fn read_with<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        make: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        MemoryBuffer::read_with(self, ruby, n, make)
    }
}

/// FramedTransport's, BufferedTransport's and HeaderTransport's read buffers, refilled through the transport.
impl<B: InPlace> FastBuffer for B {
    #[inline(always)]
    fn plain(trans: VALUE) -> Option<Self> {
        <B as InPlace>::plain(trans)
    }
    fn resume(&mut self, trans: VALUE) -> bool {
        InPlace::resume(self, trans)
    }
    fn commit(&mut self) {
        InPlace::commit(self)
    }
    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn read_byte(&mut self, _ruby: &Ruby) -> Result<u8, Error> {
        InPlace::read_byte(self)
    }
    #[inline(always)]
    fn read_array<const N: usize>(
        &mut self,
        _ruby: &Ruby,
        protocol: VALUE,
    ) -> Result<[u8; N], Error> {
        InPlace::read_array(self, rb::ivar_get(protocol, IVAR_RBUF.get()))
    }
    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error> {
        InPlace::read_varint::<R>(self, ruby)
    }
    #[inline(always)]
    fn read_with<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        make: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        InPlace::read_with(self, ruby, n, make)
    }
}

/// Where a protocol's reads come from.
pub enum Input {
    Buffer(MemoryBuffer),
    /// A FramedTransport's or BufferedTransport's read buffer; refills go through the transport's methods.
    Layered {
        buf: LayeredBuffer,
        protocol: VALUE,
    },
    Transport {
        trans: VALUE,
        protocol: VALUE,
    },
}

impl Input {
    /// Decided once per protocol call: nothing between here and the end of the call runs Ruby code on the fast path.
    /// `trans_slot` is the protocol class's `@trans` slot.
    #[inline(always)]
    pub fn of(protocol: VALUE, trans_slot: &IvarSlot) -> Input {
        let trans = trans_slot.get(protocol);
        if let Some(mb) = MemoryBuffer::plain(trans) {
            return Input::Buffer(mb);
        }
        match LayeredBuffer::plain(trans) {
            Some(buf) => Input::Layered { buf, protocol },
            None => Input::Transport { trans, protocol },
        }
    }

    /// N bytes, as `trans.read_into_buffer(@rbuf, N)` followed by a look at `@rbuf`'s first N bytes.
    #[inline(always)]
    pub fn read_array<const N: usize>(&mut self, ruby: &Ruby) -> Result<[u8; N], Error> {
        match self {
            Input::Buffer(mb) => mb.read_array(ruby),
            Input::Layered { buf, protocol } => {
                InPlace::read_array(buf, rb::ivar_get(*protocol, IVAR_RBUF.get()))
            }
            Input::Transport { trans, protocol } => {
                read_into_rbuf(*trans, rb::ivar_get(*protocol, IVAR_RBUF.get()))
            }
        }
    }

    /// A signed byte, as `(char)FIX2INT(trans.read_byte)`.
    #[inline(always)]
    pub fn read_byte(&mut self, ruby: &Ruby) -> Result<i8, Error> {
        match self {
            Input::Buffer(mb) => mb.read_byte(ruby).map(|b| b as i8),
            Input::Layered { buf, .. } => InPlace::read_byte(buf).map(|b| b as i8),
            Input::Transport { trans, .. } => {
                let b = rb::funcall(*trans, READ_BYTE.get(), &[])?;
                Ok(rb::num2int(b)? as i8)
            }
        }
    }

    /// A compact varint: decoded from the buffer in one go on the fast path, else one `trans.read_byte` per byte
    /// as the C accelerator reads it.
    #[inline(always)]
    pub fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error> {
        match self {
            Input::Buffer(mb) => mb.read_varint::<R>(ruby),
            Input::Layered { buf, .. } => InPlace::read_varint::<R>(buf, ruby),
            Input::Transport { .. } => {
                let mut reader = R::default();
                loop {
                    let b = self.read_byte(ruby)? as u8;
                    if let Some(v) = reader.step(b).map_err(|e| errors::from_core(ruby, e))? {
                        return Ok(v);
                    }
                }
            }
        }
    }

    /// `trans.read_all(n)`: a BINARY String of n bytes.
    pub fn read_all(&mut self, ruby: &Ruby, n: usize) -> Result<VALUE, Error> {
        match self {
            Input::Buffer(mb) => mb.read_all(ruby, n),
            Input::Layered { buf, .. } => buf.read_all(ruby, n),
            Input::Transport { trans, .. } => {
                rb::funcall(*trans, READ_ALL.get(), &[rb::integer(n as i64)])
            }
        }
    }

    /// `trans.read_all(16)` as UUID text (lowercase, dashed, ASCII-8BIT). On the fast path the text is made straight
    /// from the buffer's bytes.
    pub fn read_uuid(&mut self, ruby: &Ruby) -> Result<VALUE, Error> {
        match self {
            Input::Buffer(mb) => mb.read_with(ruby, 16, uuid_text),
            Input::Layered { buf, .. } if buf.available() >= 16 => {
                InPlace::read_with(buf, ruby, 16, uuid_text)
            }
            Input::Layered { .. } | Input::Transport { .. } => {
                let data = self.read_all(ruby, 16)?;
                uuid_text_of(data)
            }
        }
    }

    /// `Bytes.convert_to_string(trans.read_all(n))`; on the fast path the UTF-8 String is made directly.
    pub fn read_utf8(&mut self, ruby: &Ruby, n: usize) -> Result<VALUE, Error> {
        match self {
            Input::Buffer(mb) => mb.read_with(ruby, n, rb::utf8_string),
            Input::Layered { buf, .. } if buf.available() >= n => {
                InPlace::read_with(buf, ruby, n, rb::utf8_string)
            }
            Input::Layered { .. } | Input::Transport { .. } => {
                bytes::convert_to_string(self.read_all(ruby, n)?)
            }
        }
    }
}

/// `trans.read_into_buffer(rbuf, N)`, then `rbuf`'s first N bytes (`rbuf`: the protocol's `@rbuf`). As the C
/// accelerator, the length is not re-checked: bytes a short `@rbuf` lacks read as zero.
pub fn read_into_rbuf<const N: usize>(trans: VALUE, rbuf: VALUE) -> Result<[u8; N], Error> {
    rb::funcall(
        trans,
        READ_INTO_BUFFER.get(),
        &[rbuf, rb::integer(N as i64)],
    )?;
    let mut out = [0u8; N];
    if rb::is_string(rbuf) {
        // SAFETY: `rbuf` is a String on the caller's stack; the slice is dropped before any Ruby call.
        let have = unsafe { rb::str_bytes(rbuf) };
        let n = have.len().min(N);
        out[..n].copy_from_slice(&have[..n]);
    }
    Ok(out)
}

/// The UUID text (lowercase, dashed, ASCII-8BIT) of 16 bytes.
fn uuid_text(b: &[u8]) -> VALUE {
    let b: &[u8; 16] = b.try_into().expect("read_with hands over exactly 16 bytes");
    rb::binary_string(&uuid::format(b))
}

/// The UUID text of 16 bytes a transport returned; anything else is INVALID_DATA (the C accelerator would read
/// past the end of a shorter String).
fn uuid_text_of(data: VALUE) -> Result<VALUE, Error> {
    if rb::is_string(data) {
        // SAFETY: `data` is a String; the slice is dropped before the allocation.
        let bytes = unsafe { rb::str_bytes(data) };
        if let Ok(b) = <&[u8; 16]>::try_from(bytes) {
            let text = uuid::format(b);
            return Ok(rb::binary_string(&text));
        }
    }
    Err(errors::protocol(
        thrift().codes.invalid_data,
        "Invalid UUID data length",
    ))
}

/// The String a protocol's (or the struct codec's) writes may append to directly: a plain MemoryBufferTransport's
/// `@buf`, an exact FramedTransport's or BufferedTransport's `@wbuf` (what their `write` appends to).
#[inline(always)]
pub fn fast_write_buffer(trans: VALUE) -> Option<VALUE> {
    memory_buffer::plain_write_buffer(trans).or_else(|| layered::write_buffer(trans))
}

/// Where the struct codec's fast path appends: a transport's String buffer, or a HeaderTransport's StringIO.
#[derive(Clone, Copy)]
pub enum WriteTarget {
    String(VALUE),
    StringIo(StringIoTarget),
}

impl WriteTarget {
    #[inline(always)]
    pub fn of(trans: VALUE) -> Option<Self> {
        match fast_write_buffer(trans) {
            Some(buf) => Some(WriteTarget::String(buf)),
            None => StringIoTarget::of(trans).map(WriteTarget::StringIo),
        }
    }

    /// The target again after Ruby code ran.
    pub fn resume(self, trans: VALUE) -> Option<Self> {
        match self {
            WriteTarget::String(_) => Self::of(trans),
            WriteTarget::StringIo(t) => t.resume().map(WriteTarget::StringIo),
        }
    }

    #[inline(always)]
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            WriteTarget::String(buf) => rb::str_cat(*buf, bytes),
            WriteTarget::StringIo(t) => t.append(bytes),
        }
    }
}

/// Where a protocol's writes go.
#[derive(Clone, Copy)]
pub enum Output {
    Buffer(VALUE),
    Transport(VALUE),
}

impl Output {
    #[inline(always)]
    pub fn of(protocol: VALUE, trans_slot: &IvarSlot) -> Output {
        let trans = trans_slot.get(protocol);
        match fast_write_buffer(trans) {
            Some(buf) => Output::Buffer(buf),
            None => Output::Transport(trans),
        }
    }

    /// Appends the bytes, or `trans.write(fresh BINARY String)`.
    #[inline(always)]
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        match *self {
            Output::Buffer(buf) => rb::str_cat(buf, bytes),
            Output::Transport(trans) => {
                let s = rb::binary_string(bytes);
                rb::funcall(trans, WRITE.get(), &[s]).map(drop)
            }
        }
    }

    /// Appends a String's bytes, or `trans.write` of a fresh BINARY copy of them (the C accelerator's `WRITE`).
    pub fn write_copy_of(&self, s: VALUE) -> Result<(), Error> {
        match *self {
            Output::Buffer(buf) => rb::str_cat_str(buf, s),
            Output::Transport(_) => {
                // SAFETY: `s` is a String; rb_str_new (in `write`) copies the bytes before any Ruby code can run,
                // as the fast path's `read_with` does.
                self.write(unsafe { rb::str_bytes(s) })
            }
        }
    }

    /// Appends a String's bytes, or `trans.write(s)` with that very object.
    pub fn write_string_object(&self, s: VALUE) -> Result<(), Error> {
        match *self {
            Output::Buffer(buf) => rb::str_cat_str(buf, s),
            Output::Transport(trans) => rb::funcall(trans, WRITE.get(), &[s]).map(drop),
        }
    }
}
