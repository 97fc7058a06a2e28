//! `Thrift::FramedTransport` and `Thrift::BufferedTransport`, transports over a transport (`@transport`): a read
//! buffer (`@rbuf` at `@index`) refilled from the transport beneath, and a write buffer (`@wbuf`).
//!
//! Their read and write methods are native here, with the Ruby library's semantics byte for byte and call for call
//! (the methods are the same from thrift 0.14 to master): `framed.rs` and `buffered.rs`. They work natively on an
//! exact instance while none of the class's methods has been redefined and its ivars are as the library sets them
//! up; otherwise (a subclass, a singleton class, a monkey patch, odd ivars) they run the Ruby library's own method,
//! captured at load time.
//!
//! [`LayeredBuffer`] is the protocols' and the struct codec's view of the read buffer, [`write_buffer`] of the
//! write buffer: bytes within the buffer are read and written in place; a read that needs a refill calls the
//! transport's method exactly as the C accelerator calls it (`read_into_buffer`, `read_byte`, `read_all`).

mod buffered;
mod framed;

use std::sync::atomic::{AtomicUsize, Ordering};

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{
    FLUSH, IVAR_INDEX, IVAR_RBUF, IVAR_READ, IVAR_TRANSPORT, IVAR_WBUF, IVAR_WRITE, READ_ALL,
    READ_INTO_BUFFER, WRITE,
};
use crate::ruby::rb;
use crate::thrift::bytes;
use crate::thrift::thrift;
use crate::transports::buffer::{HeldBytes, ReadBuffer, Shortfall};
use crate::transports::socket::{self, PlainSocket};

/// The methods whose change sends a class back to the Ruby library's: the native ones (all but the last), and
/// FramedTransport's private `read_frame`, which the native methods do the work of.
const WATCHED: [&str; 7] = [
    "read",
    "read_byte",
    "read_into_buffer",
    "read_all",
    "write",
    "flush",
    "read_frame",
];
/// The methods defined natively on both classes, in the order of [`Class::originals`].
pub const NATIVE_METHODS: [&str; 6] = {
    let mut names = [""; 6];
    let mut i = 0;
    while i < names.len() {
        names[i] = WATCHED[i];
        i += 1;
    }
    names
};
const READ: usize = 0;
const READ_BYTE_M: usize = 1;
const READ_INTO_BUFFER_M: usize = 2;
const READ_ALL_M: usize = 3;
const WRITE_M: usize = 4;
const FLUSH_M: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Framed,
    Buffered,
}

/// One of the two classes: its ivars, whether its methods are still ours, and the Ruby methods to fall back to.
pub struct Class {
    layer: Layer,
    class: AtomicUsize,
    guard: Guard,
    transport: IvarSlot,
    rbuf: IvarSlot,
    wbuf: IvarSlot,
    index: IvarSlot,
    /// FramedTransport's `@read` and `@write` flags.
    read: IvarSlot,
    write: IvarSlot,
    /// The Ruby library's methods `NATIVE_METHODS`, before ours were defined.
    originals: Originals<{ NATIVE_METHODS.len() }>,
}

impl Class {
    const fn new(layer: Layer) -> Self {
        Class {
            layer,
            class: AtomicUsize::new(0),
            guard: Guard::new(),
            transport: IvarSlot::new(),
            rbuf: IvarSlot::new(),
            wbuf: IvarSlot::new(),
            index: IvarSlot::new(),
            read: IvarSlot::new(),
            write: IvarSlot::new(),
            originals: Originals::new(NATIVE_METHODS),
        }
    }

    fn class(&self) -> VALUE {
        self.class.load(Ordering::Relaxed) as VALUE
    }

    /// True when `this` may be handled natively: an exact, unfrozen instance of a class whose methods are ours.
    #[inline(always)]
    fn owns(&self, this: VALUE) -> bool {
        rb::is_exact_instance(this, self.class()) && self.guard.intact() && !rb::is_frozen(this)
    }

    /// The Ruby library's own method `NATIVE_METHODS[method]`, called on `this`.
    fn original(&self, method: usize, this: VALUE, args: &[VALUE]) -> Result<VALUE, Error> {
        self.originals.call(method, this, args)
    }

    fn inner(&self, this: VALUE) -> VALUE {
        self.transport.get(this)
    }

    /// `@index = n`.
    #[inline(always)]
    fn store_index(&self, this: VALUE, n: usize) {
        self.index
            .set_immediate_unfrozen(this, rb::integer(n as i64));
    }

    fn set_rbuf(&self, this: VALUE, v: VALUE) -> Result<(), Error> {
        self.rbuf.set(this, v)
    }

    fn set_wbuf(&self, this: VALUE, v: VALUE) -> Result<(), Error> {
        self.wbuf.set(this, v)
    }
}

static FRAMED: Class = Class::new(Layer::Framed);
static BUFFERED: Class = Class::new(Layer::Buffered);

/// The class `this` is exactly an instance of, if one of the two.
#[inline(always)]
fn class_of(this: VALUE) -> Option<&'static Class> {
    let class = rb::heap_class(this)?;
    if class == FRAMED.class() {
        Some(&FRAMED)
    } else if class == BUFFERED.class() {
        Some(&BUFFERED)
    } else {
        None
    }
}

/// `trans.flush` where dispatch would run our own method (an exact, unfrozen instance of one of the two while their
/// methods are ours): that method's work, without the call. None for any other transport.
pub fn flush_owned(trans: VALUE) -> Option<Result<VALUE, Error>> {
    use magnus::rb_sys::AsRawValue;
    let c = class_of(trans)?;
    if !c.owns(trans) {
        return None;
    }
    let ruby = Ruby::get().expect("called from a Ruby thread");
    // SAFETY: `trans` is a live object of the caller's frame.
    let this = unsafe { rb::value(trans) };
    let flushed = match c.layer {
        Layer::Framed => framed::flush(&ruby, this),
        Layer::Buffered => buffered::flush(&ruby, this),
    };
    Some(flushed.map(|v| v.as_raw()))
}

/// `trans.read_into_buffer(buffer, size)` where dispatch would run our own method (as [`flush_owned`]): that
/// method's work, without the call (a protocol's refill of its `@rbuf`). None for any other transport.
pub fn read_into_buffer_owned(
    trans: VALUE,
    buffer: VALUE,
    size: VALUE,
) -> Option<Result<VALUE, Error>> {
    let c = class_of(trans)?;
    if !c.owns(trans) {
        return None;
    }
    let ruby = Ruby::get().expect("called from a Ruby thread");
    Some(read_into_buffer(
        &ruby,
        c,
        trans,
        &[buffer, size],
        c.refill(),
    ))
}

/// The class `trans` is exactly an instance of, when it is handled natively and (a FramedTransport) the direction's
/// flag (`@read` or `@write`) is on.
#[inline(always)]
fn native_class(trans: VALUE, flag: fn(&Class) -> &IvarSlot) -> Option<&'static Class> {
    let class = class_of(trans)?;
    if !class.owns(trans) || (class.layer == Layer::Framed && !rb::truthy(flag(class).get(trans))) {
        return None;
    }
    Some(class)
}

/// A String the native methods may treat as the library's byte buffers: BINARY, so that `length` counts bytes.
#[inline(always)]
fn is_byte_buffer(v: VALUE) -> bool {
    bytes::is_binary_string(v)
}

/// The read buffer of an exact FramedTransport (reading through it) or BufferedTransport: `@rbuf` from `@index`.
///
/// Valid until Ruby code runs: the caller picks the transport's state up again afterwards (`plain`). `rbuf`, held
/// here on the stack, keeps its bytes where `bytes` says meanwhile (see [`HeldBytes`]).
pub struct LayeredBuffer {
    class: &'static Class,
    trans: VALUE,
    rbuf: VALUE,
    bytes: HeldBytes,
    /// Ruby's `@index`, which may lie past the end (a short `read` moves it there).
    index: usize,
}

impl LayeredBuffer {
    /// The fast paths' view of `trans`, when it is an exact instance handled natively, reading through its buffer.
    #[inline(always)]
    pub fn plain(trans: VALUE) -> Option<Self> {
        Self::load(native_class(trans, |c| &c.read)?, trans)
    }

    /// `@rbuf` and `@index`, when they are what the library keeps there: a BINARY String and a non-negative Fixnum.
    #[inline(always)]
    fn load(class: &'static Class, trans: VALUE) -> Option<Self> {
        let rbuf = class.rbuf.get(trans);
        if !is_byte_buffer(rbuf) {
            return None;
        }
        let index = usize::try_from(rb::fixnum_value(class.index.get(trans))?).ok()?;
        Some(LayeredBuffer {
            class,
            trans,
            rbuf,
            // SAFETY: `rbuf` is a String, held by this buffer on the stack.
            bytes: unsafe { HeldBytes::of(rbuf) },
            index,
        })
    }

    /// Bytes in the buffer, not yet read.
    #[inline(always)]
    pub fn available(&self) -> usize {
        self.bytes.len().saturating_sub(self.index)
    }

    /// `trans.read_all(n)` as a BINARY String (from the buffer without a call when the bytes are there).
    pub fn read_all(&mut self, ruby: &Ruby, n: usize) -> Result<VALUE, Error> {
        if n <= self.available() {
            return self.read_with(ruby, n, rb::binary_string);
        }
        self.past_end(ruby, Shortfall::Bytes, |trans| {
            rb::funcall(trans, READ_ALL.get(), &[rb::integer(n as i64)])
        })
    }

    /// After Ruby code ran: the transport's state as it left it. If it is no longer plain (a refill put something
    /// odd in `@rbuf`), the buffer is empty, so every later read goes through the transport's methods.
    fn reload(&mut self) {
        match Self::load(self.class, self.trans) {
            Some(b) => *self = b,
            None => {
                self.bytes = HeldBytes::EMPTY;
                self.index = 0;
            }
        }
    }
}

/// A refill is the transport's method (FramedTransport#read_frame or BufferedTransport's read beneath, through
/// `read_byte`, `read_into_buffer`, `read_all`).
impl ReadBuffer for LayeredBuffer {
    #[inline(always)]
    fn plain(trans: VALUE) -> Option<Self> {
        LayeredBuffer::plain(trans)
    }

    #[inline(always)]
    fn unread(&self) -> &[u8] {
        self.bytes.from(self.index)
    }

    /// `@index` is stored at once, so there is never a position to hand over.
    #[inline(always)]
    fn advance(&mut self, n: usize) -> Result<(), Error> {
        self.index += n;
        self.class.store_index(self.trans, self.index);
        Ok(())
    }

    #[inline(always)]
    fn read_into_buffer(trans: VALUE, args: &[VALUE; 2]) -> Result<VALUE, Error> {
        match read_into_buffer_owned(trans, args[0], args[1]) {
            Some(read) => read,
            None => rb::funcall(trans, READ_INTO_BUFFER.get(), args),
        }
    }

    fn past_end<T>(
        &mut self,
        _ruby: &Ruby,
        _wanted: Shortfall,
        refill: impl FnOnce(VALUE) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let result = refill(self.trans);
        self.reload();
        result
    }
}

/// The write buffer (`@wbuf`) of an exact FramedTransport (writing through it) or BufferedTransport, for appending
/// to it in place.
#[inline(always)]
pub fn write_buffer(trans: VALUE) -> Option<VALUE> {
    let wbuf = native_class(trans, |c| &c.write)?.wbuf.get(trans);
    is_byte_buffer(wbuf).then_some(wbuf)
}

/// How many bytes a refill reads from a socket (or any Ruby transport) in one `read_all` call at most: a declared
/// frame size allocates nothing ahead of the bytes received.
const MAX_CHUNK: usize = 1 << 20;

/// The largest spent `@rbuf` a socket refill reads into again (see [`spent_rbuf`]).
const REFILL_IN_PLACE_CAPACITY: usize = 64 << 10;

/// The `@rbuf` a refill from a plain socket is about to replace, when the socket's bytes may be read into it instead
/// of into a new String (the library's `@rbuf = @transport.read...`): a BINARY String (readpartial keeps its
/// encoding, so it stays what a new one would be) that readpartial may fill and whose buffer is small. Its bytes
/// are spent: `@index` lies at or past its end (BufferedTransport's `read(0)` refills before that, and its unread
/// bytes must stay where a failed refill leaves them). Slices taken from it earlier are Strings of their own, which
/// Ruby copies out before the buffer is written (`rb_str_modify`). What the buffer fast paths hold of it
/// (`HeldBytes`) they read again after the refill, as after any Ruby call.
fn spent_rbuf(c: &'static Class, this: VALUE) -> Option<VALUE> {
    let rbuf = c.rbuf.get(this);
    if !is_byte_buffer(rbuf) || !rb::is_refillable_string(rbuf, REFILL_IN_PLACE_CAPACITY) {
        return None;
    }
    let index = rb::fixnum_value(c.index.get(this))?;
    // SAFETY: `rbuf` is a String.
    (index >= 0 && index as usize >= unsafe { rb::str_len(rbuf) }).then_some(rbuf)
}

/// `@wbuf = Bytes.empty_byte_buffer` after a flush that handed `wbuf` to no Ruby code (its bytes went to a plain
/// socket or MemoryBufferTransport): `wbuf` itself emptied, keeping its buffer for the next message, where it is a
/// BINARY String that may be written (not frozen, not locked) of a buffer no larger than a refill's; else a new
/// String, as the library makes. What a caller kept of `@wbuf` (`write` answers it) then reads empty, where the
/// library's would still hold the flushed bytes (README, deliberate differences).
fn renewed_wbuf(c: &'static Class, this: VALUE, wbuf: VALUE) -> Result<VALUE, Error> {
    if c.wbuf.get(this) == wbuf
        && is_byte_buffer(wbuf)
        && rb::is_refillable_string(wbuf, REFILL_IN_PLACE_CAPACITY)
    {
        // SAFETY: protected; `wbuf` is an unfrozen, unlocked String on this stack: rb_str_modify makes a shared one
        // independent (allocating), after which rb_str_set_len may shorten it.
        magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_str_modify(wbuf);
            rb_sys::rb_str_set_len(wbuf, 0);
            rb::QNIL
        })?;
        return Ok(wbuf);
    }
    let fresh = rb::binary_string(&[]);
    c.set_wbuf(this, fresh)?;
    Ok(fresh)
}

/// `spent`, the String a frame's header was read into, when it is still `@rbuf` and may still be filled.
fn still_spent(c: &'static Class, this: VALUE, spent: Option<VALUE>) -> Option<VALUE> {
    spent
        .filter(|&s| c.rbuf.get(this) == s && rb::is_refillable_string(s, REFILL_IN_PLACE_CAPACITY))
}

/// `socket.read_all(size)` (`all`) or `socket.read(size)`, into the spent `@rbuf` when there is one. A failure
/// leaves that String empty, so that no byte of the failed refill reads as data and the next read refills again
/// (the library's `@rbuf` would still hold the spent bytes, which a FramedTransport, its `@index` already 0 after
/// the header, serves again: stale bytes, not a frame).
fn socket_refill(
    socket: PlainSocket,
    size: usize,
    spent: Option<VALUE>,
    all: bool,
) -> Result<VALUE, Error> {
    let read = match (spent, all) {
        (None, true) => return socket.read_all(size),
        (None, false) => return socket.read(size),
        (Some(_), true) => socket.read_all_into(size, spent),
        (Some(spent), false) => socket.read_into(size, spent),
    };
    read.inspect_err(|_| spent.into_iter().for_each(rb::empty_refillable_string))
}

/// `inner.read_all(size)`: natively from a plain MemoryBufferTransport, else through its method (or, for a plain
/// Thrift::Socket, what its method does), in chunks of at most 1 MiB (appended into one String) when `size` is larger.
pub(super) fn inner_read_all(ruby: &Ruby, inner: VALUE, size: VALUE) -> Result<VALUE, Error> {
    if let Some(n) = rb::fixnum_value(size).and_then(|n| usize::try_from(n).ok()) {
        if let Some(mut mb) = crate::transports::memory_buffer::MemoryBuffer::plain(inner) {
            return mb.read_all(ruby, n);
        }
        if n > MAX_CHUNK {
            let buf = rb::binary_string(&[]);
            let mut got = 0;
            while got < n {
                let want = (n - got).min(MAX_CHUNK);
                let chunk = read_all_beneath(inner, want)?;
                rb::check_type(chunk, rb_sys::ruby_value_type::RUBY_T_STRING)?;
                rb::str_cat_str(buf, chunk)?;
                // SAFETY: `chunk` is a String.
                got += unsafe { rb::str_len(chunk) };
            }
            return Ok(buf);
        }
    }
    if let (Some(n), Some(socket)) = (positive(size), PlainSocket::of(inner)) {
        return socket.read_all(n);
    }
    rb::funcall(inner, READ_ALL.get(), &[size])
}

/// `inner.read_all(n)`, for `n` > 0.
pub(super) fn read_all_beneath(inner: VALUE, n: usize) -> Result<VALUE, Error> {
    match PlainSocket::of(inner) {
        Some(socket) => socket.read_all(n),
        None => rb::funcall(inner, READ_ALL.get(), &[rb::integer(n as i64)]),
    }
}

/// `inner.write(s)` of a BINARY String.
pub(super) fn write_beneath(inner: VALUE, s: VALUE) -> Result<VALUE, Error> {
    match PlainSocket::of(inner) {
        Some(socket) => socket.write(s),
        None => rb::funcall(inner, WRITE.get(), &[s]),
    }
}

/// `inner.flush`: nothing to call when it is a plain socket's, which does nothing (and answers nil).
pub(super) fn flush_beneath(inner: VALUE) -> Result<VALUE, Error> {
    if socket::flush_does_nothing(inner) {
        return Ok(rb::QNIL);
    }
    rb::funcall(inner, FLUSH.get(), &[])
}

fn positive(size: VALUE) -> Option<usize> {
    rb::fixnum_value(size)
        .filter(|n| *n > 0)
        .map(|n| n as usize)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    for (class, value) in [
        (&FRAMED, t.framed_transport),
        (&BUFFERED, t.buffered_transport),
    ] {
        class.class.store(value as usize, Ordering::Relaxed);
        class.transport.configure(value, IVAR_TRANSPORT.get());
        class.rbuf.configure(value, IVAR_RBUF.get());
        class.wbuf.configure(value, IVAR_WBUF.get());
        class.index.configure(value, IVAR_INDEX.get());
        class.read.configure(value, IVAR_READ.get());
        class.write.configure(value, IVAR_WRITE.get());
        class.originals.keep(ruby, value, false)?;
        class.guard.watch(value, Watch::Methods(&WATCHED));
    }
    framed::init(ruby, &FRAMED)?;
    buffered::init(ruby, &BUFFERED)
}

impl Class {
    /// The class's refill: FramedTransport#read_frame, or BufferedTransport's `@transport.read(4096)`.
    fn refill(&self) -> Refill {
        match self.layer {
            Layer::Framed => framed::read_frame,
            Layer::Buffered => buffered::refill,
        }
    }

    /// True while the class reads through its buffer (FramedTransport's `@read`; BufferedTransport always).
    fn reading(&self, this: VALUE) -> bool {
        self.layer == Layer::Buffered || rb::truthy(self.read.get(this))
    }
}

fn class_for<const IS_FRAMED: bool>() -> &'static Class {
    if IS_FRAMED {
        &FRAMED
    } else {
        &BUFFERED
    }
}

/// `read_into_buffer(buffer, size)`: `size` bytes into `buffer` from index 0, across refills.
fn read_into_buffer_method<const IS_FRAMED: bool>(
    ruby: &Ruby,
    rb_self: magnus::Value,
    buffer: magnus::Value,
    size: magnus::Value,
) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let (this, c) = (rb_self.as_raw(), class_for::<IS_FRAMED>());
    let args = [buffer.as_raw(), size.as_raw()];
    if !c.owns(this) {
        return c
            .original(READ_INTO_BUFFER_M, this, &args)
            .map(rb::returned);
    }
    read_into_buffer(ruby, c, this, &args, c.refill()).map(rb::returned)
}

/// `read_all(size)` (BaseTransport's): from the buffer natively; across a refill, BaseTransport's own method.
fn read_all_method<const IS_FRAMED: bool>(
    _ruby: &Ruby,
    rb_self: magnus::Value,
    size: magnus::Value,
) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let (this, c) = (rb_self.as_raw(), class_for::<IS_FRAMED>());
    if c.owns(this) && c.reading(this) {
        if let Some(v) = read_all_in_buffer(c, this, size.as_raw()) {
            return Ok(rb::returned(v));
        }
    }
    c.original(READ_ALL_M, this, &[size.as_raw()])
        .map(rb::returned)
}

/// Defines the methods both classes share.
fn define_shared(ruby: &Ruby, class: magnus::RClass, c: &'static Class) -> Result<(), Error> {
    let framed = c.layer == Layer::Framed;
    let (read_into_buffer, read_all) = if framed {
        (
            magnus::method!(read_into_buffer_method::<true>, 2),
            magnus::method!(read_all_method::<true>, 1),
        )
    } else {
        (
            magnus::method!(read_into_buffer_method::<false>, 2),
            magnus::method!(read_all_method::<false>, 1),
        )
    };
    crate::ruby::registry::define_method(ruby, class, "read_into_buffer", read_into_buffer)?;
    crate::ruby::registry::define_method(ruby, class, "read_all", read_all)
}

/// How a class refills `@rbuf` (FramedTransport#read_frame, or BufferedTransport's `@transport.read(4096)`),
/// leaving `@index` at 0.
type Refill = fn(&Ruby, &'static Class, VALUE) -> Result<(), Error>;

/// `@rbuf.length` (`@rbuf.size` for BufferedTransport), whatever `@rbuf` is.
fn rbuf_length(c: &'static Class, rbuf: VALUE) -> Result<i64, Error> {
    if is_byte_buffer(rbuf) {
        // SAFETY: `rbuf` is a String.
        return Ok(unsafe { rb::str_len(rbuf) } as i64);
    }
    let method = match c.layer {
        Layer::Framed => crate::ruby::names::LENGTH.get(),
        Layer::Buffered => crate::ruby::names::SIZE.get(),
    };
    rb::to_i64(rb::funcall(rbuf, method, &[])?)
}

/// `read_into_buffer(buffer, size)` of both classes, as the Ruby loop does it:
///
/// ```ruby
/// while i < size
///   refill if @index >= @rbuf.length
///   Bytes.set_string_byte(buffer, i, Bytes.get_string_byte(@rbuf, @index))
///   @index += 1; i += 1
/// end
/// ```
///
/// Runs of bytes are copied at once; where Ruby's `setbyte` would raise (the buffer is full, or a refill brought an
/// empty frame) it is called, so that it raises its own error.
fn read_into_buffer(
    ruby: &Ruby,
    c: &'static Class,
    this: VALUE,
    args: &[VALUE; 2],
    refill: Refill,
) -> Result<VALUE, Error> {
    use crate::ruby::names::{GETBYTE, SETBYTE};
    let (buffer, size) = (args[0], args[1]);
    let size = rb::fixnum_value(size).filter(|_| rb::is_string(buffer) && !rb::is_frozen(buffer));
    let (Some(size), Some(b)) = (size, LayeredBuffer::load(c, this)) else {
        return c.original(READ_INTO_BUFFER_M, this, args);
    };
    if buffer == b.rbuf {
        return c.original(READ_INTO_BUFFER_M, this, args);
    }
    let (mut index, mut rbuf, mut i) = (b.index, b.rbuf, 0usize);
    while (i as i64) < size {
        if index as i64 >= rbuf_length(c, rbuf)? {
            c.store_index(this, index);
            refill(ruby, c, this)?;
            rbuf = c.rbuf.get(this);
            index = 0;
        }
        // SAFETY: `buffer` is a String on the caller's stack.
        let capacity = unsafe { rb::str_len(buffer) };
        let available = if is_byte_buffer(rbuf) {
            // SAFETY: `rbuf` is a String.
            unsafe { rb::str_len(rbuf) }.saturating_sub(index)
        } else {
            0
        };
        if available == 0 || i >= capacity {
            // One step the Ruby way: getbyte (nil past the end), then setbyte, which raises where it must.
            c.store_index(this, index);
            let byte = rb::funcall(rbuf, GETBYTE.get(), &[rb::integer(index as i64)])?;
            rb::funcall(buffer, SETBYTE.get(), &[rb::integer(i as i64), byte])?;
            index += 1;
            i += 1;
            continue;
        }
        let k = available.min(size as usize - i).min(capacity - i);
        // SAFETY: protected; rb_str_modify makes `buffer` independent and writable (it is not frozen). Then
        // `capacity` >= i + k bytes of it are written from `rbuf`'s bytes (another String, `available` >= k of
        // them from `index`); nothing runs Ruby code in between.
        magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_str_modify(buffer);
            rb::QNIL
        })?;
        // SAFETY: as above: `buffer` is writable with `capacity` bytes, `rbuf` holds `available` from `index`.
        unsafe {
            let src = rb::str_bytes(rbuf).as_ptr().add(index);
            let dst = (rb::str_bytes(buffer).as_ptr() as *mut u8).add(i);
            std::ptr::copy_nonoverlapping(src, dst, k);
        }
        index += k;
        i += k;
    }
    c.store_index(this, index);
    Ok(rb::integer(i as i64))
}

/// `read_all(size)` when the bytes are all in the buffer (and 0 bytes): a new String, without a refill. None when
/// the Ruby method must run (across a refill, a negative or odd size).
fn read_all_in_buffer(c: &'static Class, this: VALUE, size: VALUE) -> Option<VALUE> {
    let n = usize::try_from(rb::fixnum_value(size)?).ok()?;
    if n == 0 {
        return Some(rb::binary_string(&[]));
    }
    let mut b = LayeredBuffer::load(c, this)?;
    if n > b.available() {
        return None;
    }
    let s = rb::binary_string(&b.unread()[..n]);
    b.advance(n).ok()?;
    Some(s)
}
