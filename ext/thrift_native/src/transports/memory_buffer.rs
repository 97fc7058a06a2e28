//! `Thrift::MemoryBufferTransport`: native `write`, `read`, `read_all`, `read_byte`, `read_into_buffer`, and the
//! direct buffer access that the protocols' fast path uses.
//!
//! Where the loaded thrift's C accelerator predates master's fixes ([`crate::thrift::contract::Contract`]):
//! `read_byte` is signed, a failed `read_into_buffer` consumes nothing, and `read_all` consumes what remains before
//! EOFError (as BaseTransport#read_all over the C `read` did).
//!
//! The state stays in the Ruby ivars `@buf` (a BINARY String) and `@index` (an Integer), because the Ruby methods
//! that remain (`available`, `peek`, `reset_buffer`, `initialize`) read and write them.

use magnus::rb_sys::{protect, AsRawValue};
use magnus::{Error, RClass, RString, Ruby, TryConvert, Value};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{IVAR_BUF, IVAR_INDEX};
use crate::ruby::{rb, registry};
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};
use crate::transports::buffer::{HeldBytes, ReadBuffer, Shortfall};

/// `@buf` and `@index` of exact MemoryBufferTransport instances.
static BUF: IvarSlot = IvarSlot::new();
static INDEX: IvarSlot = IvarSlot::new();

/// The methods this file defines; redefining any of them on the class turns the fast path off.
pub const NATIVE_METHODS: [&str; 5] =
    ["write", "read", "read_all", "read_byte", "read_into_buffer"];

/// Tripped once Ruby code redefines (or removes) one of the native methods on MemoryBufferTransport itself: from
/// then on the protocols call the transport's methods, as the C accelerator always does.
static GUARD: Guard = Guard::new();

/// True when `trans` is exactly a MemoryBufferTransport (no subclass, no singleton class) whose methods are ours,
/// so that working on its buffer directly is indistinguishable from calling them.
#[inline(always)]
fn is_plain(trans: VALUE) -> bool {
    rb::is_exact_instance(trans, thrift().memory_buffer) && GUARD.intact()
}

/// A plain MemoryBufferTransport's String buffer, for appending to it.
#[inline(always)]
pub fn plain_write_buffer(trans: VALUE) -> Option<VALUE> {
    if !is_plain(trans) {
        return None;
    }
    let buf = BUF.get(trans);
    rb::is_string(buf).then_some(buf)
}

/// A reading position in a MemoryBufferTransport: `@buf` and `@index`, read once, written back on each consume.
///
/// Valid until Ruby code runs: then the caller picks the transport's state up again (`plain`). Until then nothing
/// changes `@buf`'s bytes, and `buf`, held here on the stack, keeps them where `bytes` says (see [`HeldBytes`]).
pub struct MemoryBuffer {
    trans: VALUE,
    buf: VALUE,
    /// `buf`'s bytes, looked up once per String instead of once per read.
    bytes: HeldBytes,
    index: usize,
    /// A frozen transport raises FrozenError when consuming, as `rb_ivar_set` does in the C accelerator.
    frozen: bool,
}

impl MemoryBuffer {
    /// The protocols' fast path: `trans` is a plain MemoryBufferTransport, not frozen, with a String `@buf` and a
    /// non-negative Fixnum `@index`. Otherwise None, and the caller dispatches to the transport's methods.
    #[inline(always)]
    pub fn plain(trans: VALUE) -> Option<Self> {
        if !is_plain(trans) || rb::is_frozen(trans) {
            return None;
        }
        let buf = BUF.get(trans);
        if !rb::is_string(buf) {
            return None;
        }
        let index = rb::fixnum_value(INDEX.get(trans))?;
        Some(Self::at(trans, buf, usize::try_from(index).ok()?))
    }

    /// The native methods' view of any transport object (a subclass too): type errors as Ruby raises them.
    fn of(trans: VALUE) -> Result<Self, Error> {
        // SAFETY: an ivar of `trans`, which is on the caller's stack.
        let buf = unsafe { rb::value(rb::ivar_get(trans, IVAR_BUF.get())) };
        let buf = RString::try_convert(buf)?.as_raw();
        let index = rb::to_i64(rb::ivar_get(trans, IVAR_INDEX.get()))?;
        let mut mb = Self::at(trans, buf, usize::try_from(index).unwrap_or(usize::MAX));
        mb.frozen = rb::is_frozen(trans);
        Ok(mb)
    }

    fn at(trans: VALUE, buf: VALUE, index: usize) -> Self {
        // SAFETY: `buf` is a String, held by this buffer on the stack.
        let bytes = unsafe { HeldBytes::of(buf) };
        MemoryBuffer {
            trans,
            buf,
            bytes,
            index: index.min(bytes.len()),
            frozen: false,
        }
    }

    #[inline(always)]
    pub fn available(&self) -> usize {
        self.bytes.len() - self.index
    }

    /// Holds `buf` (a new String) instead of the one before.
    #[inline(always)]
    fn hold(&mut self, buf: VALUE) {
        self.buf = buf;
        // SAFETY: `buf` is a String, held here from now on.
        self.bytes = unsafe { HeldBytes::of(buf) };
    }

    /// Moves past `n` bytes, dropping the consumed front of the buffer once the index passes
    /// GARBAGE_BUFFER_SIZE (a shared substring, as the C accelerator does, so no bytes are copied).
    #[inline(always)]
    fn consume(&mut self, n: usize) -> Result<(), Error> {
        self.index += n;
        if self.index >= thrift().garbage_buffer_size && !self.frozen {
            self.hold(rb::str_subseq(self.buf, self.index, self.available()));
            self.index = 0;
            rb::ivar_set_unfrozen(self.trans, IVAR_BUF.get(), self.buf);
        }
        self.store_index()
    }

    #[inline(always)]
    fn store_index(&self) -> Result<(), Error> {
        let index = rb::integer(self.index as i64);
        if self.frozen {
            return rb::ivar_set(self.trans, IVAR_INDEX.get(), index);
        }
        INDEX.set_immediate_unfrozen(self.trans, index);
        Ok(())
    }

    /// Moves past `n` bytes ending in the state that `n` calls of `read_byte` (or `read(1)`) leave: each of those
    /// compacts the buffer as soon as the index reaches GARBAGE_BUFFER_SIZE, so the bytes after the last such point
    /// count from 0. The buffer is cut once, where the last of those compactions would have cut it.
    #[inline(always)]
    fn bytewise(&mut self, n: usize) -> Result<(), Error> {
        let size = thrift().garbage_buffer_size.max(1);
        let until_compaction = size.saturating_sub(self.index).max(1);
        if self.frozen || n < until_compaction {
            return self.consume(n);
        }
        let index = (n - until_compaction) % size;
        let cut = self.index + n - index;
        self.hold(rb::str_subseq(self.buf, cut, self.bytes.len() - cut));
        self.index = index;
        rb::ivar_set_unfrozen(self.trans, IVAR_BUF.get(), self.buf);
        self.store_index()
    }

    /// `read` semantics: what remains of `length` bytes, consumed into a new BINARY String, and EOFError (after
    /// consuming them) when that is fewer than `length`.
    pub fn read(&mut self, ruby: &Ruby, length: usize) -> Result<VALUE, Error> {
        c_int_length(length)?;
        let n = length.min(self.available());
        let data = self.read_with(ruby, n, rb::binary_string)?;
        if n < length {
            return Err(errors::eof(ruby));
        }
        Ok(data)
    }

    /// `read_all` semantics: exactly `n` bytes into a new BINARY String, or EOFError with nothing consumed (before
    /// thrift 0.24: with what remained consumed).
    #[inline(always)]
    pub fn read_all(&mut self, ruby: &Ruby, n: usize) -> Result<VALUE, Error> {
        c_int_length(n)?;
        self.read_with(ruby, n, rb::binary_string)
    }
}

/// A MemoryBufferTransport's buffer is all it holds: a read past its end is the EOFError of the transport's own method,
/// after what that method consumes (which differs between thrift versions, [`crate::thrift::contract::Contract`]).
impl ReadBuffer for MemoryBuffer {
    #[inline(always)]
    fn plain(trans: VALUE) -> Option<Self> {
        MemoryBuffer::plain(trans)
    }

    /// Valid until Ruby code runs or the buffer moves on (see the struct's doc).
    #[inline(always)]
    fn unread(&self) -> &[u8] {
        self.bytes.from(self.index)
    }

    #[inline(always)]
    fn advance(&mut self, n: usize) -> Result<(), Error> {
        self.consume(n)
    }

    #[inline(always)]
    fn advance_bytewise(&mut self, n: usize) -> Result<(), Error> {
        self.bytewise(n)
    }

    /// `read_byte` at the end changes nothing; `read_into_buffer` consumes what remains (before thrift master:
    /// nothing), without dropping the consumed front; `read_all` consumes nothing (before thrift 0.24, whose
    /// `read_all` was BaseTransport's over the C `read`: what remained).
    #[inline(always)]
    fn past_end<T>(
        &mut self,
        ruby: &Ruby,
        wanted: Shortfall,
        _refill: impl FnOnce(VALUE) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match wanted {
            Shortfall::Byte => {}
            Shortfall::Array => {
                if thrift().contract.memory_buffer_fixes {
                    self.index = self.bytes.len();
                    self.store_index()?;
                }
            }
            Shortfall::Bytes => {
                if !thrift().contract.memory_buffer_read_all {
                    self.consume(self.available())?;
                }
            }
        }
        Err(errors::eof(ruby))
    }

    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        Some(self.available())
    }
}

fn write(_ruby: &Ruby, rb_self: Value, data: Value) -> Result<(), Error> {
    let data = bytes::force_binary_encoding(data.as_raw())?;
    // SAFETY: the argument (or its binary copy) and an ivar of self, all on this stack.
    let (data, buf) = unsafe {
        (
            rb::value(data),
            rb::value(rb::ivar_get(rb_self.as_raw(), IVAR_BUF.get())),
        )
    };
    let data = RString::try_convert(data)?;
    let buf = RString::try_convert(buf)?;
    rb::str_cat_str(buf.as_raw(), data.as_raw())
}

/// Before thrift master's batch of fixes (THRIFT-6133) the C `read` took its length with FIX2INT: from 2 GiB on, a
/// RangeError before anything is consumed (`read_all` went through it).
#[inline(always)]
fn c_int_length(n: usize) -> Result<(), Error> {
    if n > i32::MAX as usize && !thrift().contract.memory_buffer_fixes {
        rb::num2int(rb::integer(i64::try_from(n).unwrap_or(i64::MAX)))?;
    }
    Ok(())
}

fn read(ruby: &Ruby, rb_self: Value, length: Value) -> Result<Value, Error> {
    let length = rb::to_i64(length.as_raw())?;
    if length < 0 {
        return Err(errors::transport_negative_size());
    }
    let mut mb = MemoryBuffer::of(rb_self.as_raw())?;
    let data = mb.read(ruby, usize::try_from(length).unwrap_or(usize::MAX))?;
    // SAFETY: a String just made, held on this stack.
    Ok(unsafe { rb::value(data) })
}

fn read_all(ruby: &Ruby, rb_self: Value, size: Value) -> Result<Value, Error> {
    let size = rb::to_i64(size.as_raw())?;
    if size <= 0 && !thrift().contract.memory_buffer_read_all {
        // BaseTransport#read_all before thrift 0.24: an empty BINARY String.
        // SAFETY: a String just made, returned at once.
        return Ok(unsafe { rb::value(rb::binary_string(&[])) });
    }
    if size < 0 {
        return Err(errors::transport_negative_size());
    }
    let mut mb = MemoryBuffer::of(rb_self.as_raw())?;
    let n = usize::try_from(size).map_err(|_| errors::eof(ruby))?;
    let data = mb.read_all(ruby, n)?;
    // SAFETY: a String just made, held on this stack.
    Ok(unsafe { rb::value(data) })
}

/// Unsigned; before thrift master the C accelerator returned the byte as a signed char.
fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<i64, Error> {
    let b = MemoryBuffer::of(rb_self.as_raw())?.read_byte(ruby)?;
    Ok(if thrift().contract.memory_buffer_fixes {
        b.into()
    } else {
        (b as i8).into()
    })
}

fn read_into_buffer(ruby: &Ruby, rb_self: Value, buffer: Value, size: Value) -> Result<i64, Error> {
    let size = i32::try_convert(size)?;
    if size <= 0 {
        return Ok(0);
    }
    let size = size as usize;
    let mut mb = MemoryBuffer::of(rb_self.as_raw())?;
    if mb.available() == 0 {
        return Err(errors::eof(ruby));
    }
    let buffer = RString::try_convert(buffer)?.as_raw();
    // SAFETY: `buffer` is a String.
    let capacity = unsafe { rb::str_len(buffer) };
    if capacity == 0 {
        return Err(crate::thrift::errors::exception(
            ruby.exception_index_error(),
            "index 0 out of string",
        ));
    }
    // SAFETY: protected; rb_str_modify raises FrozenError for a frozen buffer and unshares a shared one.
    protect(|| unsafe {
        rb_sys::rb_str_modify(buffer);
        rb::QNIL
    })?;
    let copied = size.min(mb.available()).min(capacity);
    // SAFETY: `buffer` was made independent and writable by rb_str_modify and holds `capacity` >= `copied` bytes;
    // the source may be the same String, so the copy tolerates overlap. Nothing calls Ruby meanwhile.
    unsafe {
        let src = rb::str_bytes(mb.buf).as_ptr().add(mb.index);
        let dst = rb::str_bytes(buffer).as_ptr() as *mut u8;
        std::ptr::copy(src, dst, copied);
    }
    if copied < size {
        // As the C loop, which checks the input before the buffer at each byte: the bytes copied so far stay
        // consumed, with no compaction (before thrift master: not consumed).
        let avail = mb.available();
        if thrift().contract.memory_buffer_fixes {
            mb.index += copied;
            mb.store_index()?;
        }
        return Err(if avail <= capacity {
            errors::eof(ruby)
        } else {
            crate::thrift::errors::exception(
                ruby.exception_index_error(),
                &format!("index {capacity} out of string"),
            )
        });
    }
    mb.consume(copied)?;
    Ok(copied as i64)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    BUF.configure(thrift().memory_buffer, IVAR_BUF.get());
    INDEX.configure(thrift().memory_buffer, IVAR_INDEX.get());
    GUARD.watch(thrift().memory_buffer, Watch::Methods(&NATIVE_METHODS));
    // SAFETY: MemoryBufferTransport is pinned at load time.
    let class = unsafe { rb::value(thrift().memory_buffer) };
    let class = RClass::from_value(class).expect("MemoryBufferTransport is a class");
    registry::define_method(ruby, class, "write", magnus::method!(write, 1))?;
    registry::define_method(ruby, class, "read", magnus::method!(read, 1))?;
    registry::define_method(ruby, class, "read_all", magnus::method!(read_all, 1))?;
    registry::define_method(ruby, class, "read_byte", magnus::method!(read_byte, 0))?;
    registry::define_method(
        ruby,
        class,
        "read_into_buffer",
        magnus::method!(read_into_buffer, 2),
    )?;
    Ok(())
}
