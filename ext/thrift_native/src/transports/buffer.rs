//! [`ReadBuffer`]: the one view the fast paths (the protocols' reads, the struct codec, JsonProtocol's reads) have of
//! a transport whose bytes they read in place: a plain MemoryBufferTransport's `@buf`, an exact FramedTransport's or
//! BufferedTransport's `@rbuf` ([`super::layered::LayeredBuffer`]), an exact HeaderTransport's read StringIO
//! ([`super::header::fast::HeaderBuffer`]). A buffer says where its unread bytes are, how reading moves past them,
//! and what a read that crosses its end does; the reads themselves are written once, here.
//!
//! A new transport fast path implements this trait in its own file and is named where each fast path that should
//! take it picks a buffer: `Input` in `io.rs` (the protocols' methods), the struct codec's `read` (its `fast!` and
//! `json!` lists), `protocols/json/read.rs` (JsonProtocol's reads).

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::compact::{decode_varint, MAX_VARINT64_BYTES};
use thrift_native_core::wire::VarintStep;
use thrift_native_core::CoreError;

use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{IVAR_RBUF, READ_ALL, READ_BYTE, READ_INTO_BUFFER};
use crate::ruby::rb;
use crate::thrift::errors;

/// A String's bytes as a buffer holds them between two calls into Ruby: their address and length, read once.
///
/// Valid while the String is held on the stack (which the GC scans: the String and its bytes stay where they are,
/// see `rb::str_bytes`) and no Ruby code runs (which could change them): the buffers read them again after any.
#[derive(Clone, Copy)]
pub struct HeldBytes {
    ptr: *const u8,
    len: usize,
}

impl HeldBytes {
    /// No bytes: a buffer that may no longer be read in place.
    pub const EMPTY: HeldBytes = HeldBytes {
        ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
        len: 0,
    };

    /// # Safety
    /// `string` must be a String the caller holds on its stack for as long as it uses these bytes.
    #[inline(always)]
    pub unsafe fn of(string: VALUE) -> Self {
        // SAFETY: `string` is a String (the caller's promise).
        let b = unsafe { rb::str_bytes(string) };
        HeldBytes {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn all(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` are a held String's bytes, read since Ruby code last ran (the type's rule); callers
        // drop the slice before the next call into Ruby.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes from `pos` (none when `pos` lies past the end).
    #[inline(always)]
    pub fn from(&self, pos: usize) -> &[u8] {
        &self.all()[pos.min(self.len)..]
    }
}

/// What a read that crosses a buffer's end wanted, for a buffer whose transport answers each differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortfall {
    /// One byte (`read_byte`).
    Byte,
    /// A fixed-width value (`read_into_buffer(@rbuf, N)`).
    Array,
    /// A run of bytes made into a value (`read_all(n)`).
    Bytes,
}

pub trait ReadBuffer: Sized {
    /// The buffer of `trans`, when the fast path may read it.
    fn plain(trans: VALUE) -> Option<Self>;

    /// The bytes not yet read. Dropped before any Ruby code runs.
    fn unread(&self) -> &[u8];

    /// Moves past `n` unread bytes, as one read of `n` bytes does.
    fn advance(&mut self, n: usize) -> Result<(), Error>;

    /// Moves past `n` unread bytes as `n` reads of one byte (`read_byte`, `read(1)`) would leave the transport.
    #[inline(always)]
    fn advance_bytewise(&mut self, n: usize) -> Result<(), Error> {
        self.advance(n)
    }

    /// A read the unread bytes cannot answer. A buffer its transport refills calls `refill(trans)` (the transport's
    /// own method) with the read position handed over first and picks the buffer up again afterwards (empty if the
    /// transport no longer has a plain one, so that every later read calls its methods too). A buffer that is all its
    /// transport holds ends the read as that transport's method would there (EOFError, after what it consumes).
    fn past_end<T>(
        &mut self,
        ruby: &Ruby,
        wanted: Shortfall,
        refill: impl FnOnce(VALUE) -> Result<T, Error>,
    ) -> Result<T, Error>;

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
    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        None
    }

    /// A byte, or across the end `trans.read_byte` (then `FIX2INT`, as the C accelerator: nil is a TypeError).
    #[inline(always)]
    fn read_byte(&mut self, ruby: &Ruby) -> Result<u8, Error> {
        if let Some(&b) = self.unread().first() {
            self.advance(1)?;
            return Ok(b);
        }
        let v = self.past_end(ruby, Shortfall::Byte, |trans| {
            rb::funcall(trans, READ_BYTE.get(), &[])
        })?;
        Ok(rb::num2int(v)? as u8)
    }

    /// N bytes, or across the end `trans.read_into_buffer(@rbuf, N)` and `@rbuf`'s first N bytes (`@rbuf`: the
    /// protocol's).
    #[inline(always)]
    fn read_array<const N: usize>(
        &mut self,
        ruby: &Ruby,
        protocol: VALUE,
    ) -> Result<[u8; N], Error> {
        if let Some(b) = self.unread().get(..N) {
            let out: [u8; N] = b.try_into().expect("N bytes");
            self.advance(N)?;
            return Ok(out);
        }
        self.past_end(ruby, Shortfall::Array, |trans| {
            read_into_rbuf_with(trans, protocol_rbuf(protocol), Self::read_into_buffer)
        })
    }

    /// `trans.read_into_buffer(buffer, size)`: the refill of a protocol's `@rbuf` (a buffer whose transport's method
    /// is native may do its work without the call).
    #[inline(always)]
    fn read_into_buffer(trans: VALUE, args: &[VALUE; 2]) -> Result<VALUE, Error> {
        rb::funcall(trans, READ_INTO_BUFFER.get(), args)
    }

    /// A compact varint: decoded from the buffer in one go when it ends there (consuming what reading it byte by
    /// byte would: its bytes, or those up to the one that broke a limit), else byte by byte as the C accelerator
    /// reads it (`read_byte` across the end).
    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error> {
        let rest = self.unread();
        let (result, consumed) = decode_varint::<R>(&rest[..rest.len().min(MAX_VARINT64_BYTES)]);
        if !matches!(result, Err(CoreError::Eof { .. })) {
            self.advance_bytewise(consumed)?;
            return result.map_err(|e| errors::from_core(ruby, e));
        }
        let mut reader = R::default();
        loop {
            let b = self.read_byte(ruby)?;
            if let Some(v) = reader.step(b).map_err(|e| errors::from_core(ruby, e))? {
                return Ok(v);
            }
        }
    }

    /// Exactly `n` bytes handed to `make` (which may allocate but runs no Ruby code), or across the end the bytes of
    /// `trans.read_all(n)`, which answers exactly `n` bytes or raises (anything else is a short read: EOFError).
    #[inline(always)]
    fn read_with<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        make: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        if let Some(b) = self.unread().get(..n) {
            let value = make(b);
            self.advance(n)?;
            return Ok(value);
        }
        let data = self.past_end(ruby, Shortfall::Bytes, |trans| {
            rb::funcall(trans, READ_ALL.get(), &[rb::integer(n as i64)])
        })?;
        // SAFETY: `data` is a String on this stack; `make` runs no Ruby code.
        match rb::is_string(data).then(|| unsafe { rb::str_bytes(data) }) {
            Some(bytes) if bytes.len() == n => Ok(make(bytes)),
            _ => Err(errors::eof(ruby)),
        }
    }
}

static RBUF: IvarSite = IvarSite::new();

/// The protocol's `@rbuf` (nil when unset), the String a refill reads into.
pub fn protocol_rbuf(protocol: VALUE) -> VALUE {
    RBUF.get(protocol, IVAR_RBUF.get())
}

/// `trans.read_into_buffer(rbuf, N)`, then `rbuf`'s first N bytes (`rbuf`: the protocol's `@rbuf`). As the C
/// accelerator, the length is not re-checked: bytes a short `@rbuf` lacks read as zero.
pub fn read_into_rbuf<const N: usize>(trans: VALUE, rbuf: VALUE) -> Result<[u8; N], Error> {
    read_into_rbuf_with(trans, rbuf, |trans, args| {
        rb::funcall(trans, READ_INTO_BUFFER.get(), args)
    })
}

/// [`read_into_rbuf`], the transport's `read_into_buffer` made by `read` (the call, or its work without the call).
pub fn read_into_rbuf_with<const N: usize>(
    trans: VALUE,
    rbuf: VALUE,
    read: impl FnOnce(VALUE, &[VALUE; 2]) -> Result<VALUE, Error>,
) -> Result<[u8; N], Error> {
    read(trans, &[rbuf, rb::integer(N as i64)])?;
    let mut out = [0u8; N];
    if rb::is_string(rbuf) {
        // SAFETY: `rbuf` is a String on the caller's stack; the slice is dropped before any Ruby call.
        let have = unsafe { rb::str_bytes(rbuf) };
        let n = have.len().min(N);
        out[..n].copy_from_slice(&have[..n]);
    }
    Ok(out)
}
