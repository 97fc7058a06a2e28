//! How a protocol reaches its transport: straight into a plain MemoryBufferTransport's buffer, into an exact
//! FramedTransport's or BufferedTransport's buffers, into the StringIOs of an exact HTTPClientTransport,
//! IOStreamTransport or HeaderTransport, or an HTTPClientTransport's request buffer (the fast path), or through the
//! transport's Ruby methods exactly as the C accelerator calls them (the dispatch path).

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{READ_ALL, READ_BYTE, WRITE};
use crate::ruby::rb;
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};
use crate::transports::buffer::{protocol_rbuf, read_into_rbuf, ReadBuffer, Shortfall};
use crate::transports::http_client;
use crate::transports::layered::{self, LayeredBuffer};
use crate::transports::memory_buffer::{self, MemoryBuffer};
use crate::transports::string_io::{StringIoBuffer, StringIoTarget};
use thrift_native_core::wire::VarintStep;
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

/// Where a protocol's reads come from.
pub enum Input {
    Buffer(MemoryBuffer),
    /// A FramedTransport's or BufferedTransport's read buffer; refills go through the transport's methods.
    Layered {
        buf: LayeredBuffer,
        protocol: VALUE,
    },
    /// A StringIO a transport lends (an HTTP response, a request body, a HeaderTransport's frame); a read past its
    /// end goes through the transport's methods.
    StringIo {
        buf: StringIoBuffer,
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
        if let Some(buf) = LayeredBuffer::plain(trans) {
            return Input::Layered { buf, protocol };
        }
        match StringIoBuffer::plain(trans) {
            Some(buf) => Input::StringIo { buf, protocol },
            None => Input::Transport { trans, protocol },
        }
    }

    /// N bytes, as `trans.read_into_buffer(@rbuf, N)` followed by a look at `@rbuf`'s first N bytes.
    #[inline(always)]
    pub fn read_array<const N: usize>(&mut self, ruby: &Ruby) -> Result<[u8; N], Error> {
        match self {
            // A memory buffer has no refill (past its end is EOFError), so no `@rbuf` to read into.
            Input::Buffer(mb) => mb.read_array(ruby, rb::QNIL),
            Input::Layered { buf, protocol } => buf.read_array(ruby, *protocol),
            Input::StringIo { buf, protocol } => buf.read_array(ruby, *protocol),
            Input::Transport { trans, protocol } => {
                read_into_rbuf(*trans, protocol_rbuf(*protocol))
            }
        }
    }

    /// A signed byte, as `(char)FIX2INT(trans.read_byte)`.
    #[inline(always)]
    pub fn read_byte(&mut self, ruby: &Ruby) -> Result<i8, Error> {
        match self {
            Input::Buffer(mb) => mb.read_byte(ruby).map(|b| b as i8),
            Input::Layered { buf, .. } => buf.read_byte(ruby).map(|b| b as i8),
            Input::StringIo { buf, .. } => buf.read_byte(ruby).map(|b| b as i8),
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
            Input::Layered { buf, .. } => buf.read_varint::<R>(ruby),
            Input::StringIo { buf, .. } => buf.read_varint::<R>(ruby),
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
            Input::StringIo { buf, .. } if buf.available() >= n => {
                buf.read_with(ruby, n, rb::binary_string)
            }
            Input::StringIo { buf, .. } => buf.past_end(ruby, Shortfall::Bytes, |trans| {
                rb::funcall(trans, READ_ALL.get(), &[rb::integer(n as i64)])
            }),
            Input::Transport { trans, .. } => {
                rb::funcall(*trans, READ_ALL.get(), &[rb::integer(n as i64)])
            }
        }
    }

    /// `f` over the next `n` bytes when the buffer holds them, moving past them as `read_all(n)` or `read_utf8(n)`
    /// would there; None (nothing read) when such a read would call the transport.
    pub fn read_in_buffer<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<Result<R, Error>> {
        match self {
            Input::Buffer(mb) if mb.available() >= n && n <= i32::MAX as usize => {
                Some(mb.read_with(ruby, n, f))
            }
            Input::Layered { buf, .. } if buf.available() >= n => Some(buf.read_with(ruby, n, f)),
            Input::StringIo { buf, .. } if buf.available() >= n => Some(buf.read_with(ruby, n, f)),
            _ => None,
        }
    }

    /// `trans.read_all(16)` as UUID text (lowercase, dashed, ASCII-8BIT). On the fast path the text is made straight
    /// from the buffer's bytes.
    pub fn read_uuid(&mut self, ruby: &Ruby) -> Result<VALUE, Error> {
        match self {
            Input::Buffer(mb) => mb.read_with(ruby, 16, uuid_text),
            Input::Layered { buf, .. } if buf.available() >= 16 => {
                buf.read_with(ruby, 16, uuid_text)
            }
            Input::StringIo { buf, .. } if buf.available() >= 16 => {
                buf.read_with(ruby, 16, uuid_text)
            }
            Input::Layered { .. } | Input::StringIo { .. } | Input::Transport { .. } => {
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
                buf.read_with(ruby, n, rb::utf8_string)
            }
            Input::StringIo { buf, .. } if buf.available() >= n => {
                buf.read_with(ruby, n, rb::utf8_string)
            }
            Input::Layered { .. } | Input::StringIo { .. } | Input::Transport { .. } => {
                bytes::convert_to_string(self.read_all(ruby, n)?)
            }
        }
    }
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

/// The String a transport's `write` appends its argument's bytes to, when the fast path may append to it directly: a
/// plain MemoryBufferTransport's `@buf`, an exact FramedTransport's or BufferedTransport's `@wbuf`, an exact
/// HTTPClientTransport's `@outbuf`; with what that `write` returns (nil for the memory buffer, else the String).
#[inline(always)]
fn string_target(trans: VALUE) -> Option<(VALUE, VALUE)> {
    if let Some(buf) = memory_buffer::plain_write_buffer(trans) {
        return Some((buf, rb::QNIL));
    }
    layered::write_buffer(trans)
        .or_else(|| http_client::write_buffer(trans))
        .map(|buf| (buf, buf))
}

/// Where the fast paths append: a transport's String buffer, or a StringIO a transport lends.
#[derive(Clone, Copy)]
pub enum WriteTarget {
    /// `answer`: what the transport's `write` returns.
    String {
        buf: VALUE,
        answer: VALUE,
    },
    StringIo(StringIoTarget),
}

impl WriteTarget {
    #[inline(always)]
    pub fn of(trans: VALUE) -> Option<Self> {
        match string_target(trans) {
            Some((buf, answer)) => Some(WriteTarget::String { buf, answer }),
            None => StringIoTarget::of(trans).map(WriteTarget::StringIo),
        }
    }

    /// The target again after Ruby code ran.
    pub fn resume(self, trans: VALUE) -> Option<Self> {
        match self {
            WriteTarget::String { .. } => Self::of(trans),
            WriteTarget::StringIo(t) => t.resume().map(WriteTarget::StringIo),
        }
    }

    #[inline(always)]
    pub fn append(&self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            WriteTarget::String { buf, .. } => rb::str_cat(*buf, bytes),
            WriteTarget::StringIo(t) => t.append(bytes),
        }
    }

    /// Appends String `s`'s bytes.
    #[inline(always)]
    pub fn append_str(&self, s: VALUE) -> Result<(), Error> {
        match self {
            WriteTarget::String { buf, .. } => rb::str_cat_str(*buf, s),
            WriteTarget::StringIo(t) => t.append_str(s),
        }
    }

    /// What the transport's `write` of `n` bytes would have returned: nil (a memory buffer), its String buffer, or
    /// the count a StringIO's `write` answers.
    #[inline(always)]
    pub fn answer(&self, n: usize) -> VALUE {
        match self {
            WriteTarget::String { answer, .. } => *answer,
            WriteTarget::StringIo(_) => rb::integer(n as i64),
        }
    }
}

/// Where a protocol's writes go.
#[derive(Clone, Copy)]
pub enum Output {
    Target(WriteTarget),
    Transport(VALUE),
}

impl Output {
    #[inline(always)]
    pub fn of(protocol: VALUE, trans_slot: &IvarSlot) -> Output {
        let trans = trans_slot.get(protocol);
        match WriteTarget::of(trans) {
            Some(target) => Output::Target(target),
            None => Output::Transport(trans),
        }
    }

    /// Appends the bytes, or `trans.write(fresh BINARY String)`.
    #[inline(always)]
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        match *self {
            Output::Target(t) => t.append(bytes),
            Output::Transport(trans) => {
                let s = rb::binary_string(bytes);
                rb::funcall(trans, WRITE.get(), &[s]).map(drop)
            }
        }
    }

    /// Appends a String's bytes, or `trans.write` of a fresh BINARY copy of them (the C accelerator's `WRITE`).
    pub fn write_copy_of(&self, s: VALUE) -> Result<(), Error> {
        match *self {
            Output::Target(t) => t.append_str(s),
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
            Output::Target(t) => t.append_str(s),
            Output::Transport(trans) => rb::funcall(trans, WRITE.get(), &[s]).map(drop),
        }
    }
}
