//! A read buffer that the fast paths read in place and that refills through its transport's methods, called as the
//! C accelerator calls them (`read_into_buffer(@rbuf, n)`, `read_byte`, `read_all(n)`): FramedTransport's and
//! BufferedTransport's ([`super::LayeredBuffer`]), HeaderTransport's ([`super::header::fast::HeaderBuffer`]).

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::compact::{decode_varint, VarintStep, MAX_VARINT64_BYTES};
use thrift_native_core::CoreError;

use crate::ruby::names::{READ_ALL, READ_BYTE};
use crate::ruby::rb;
use crate::thrift::errors;

pub trait InPlace: Sized {
    /// The buffer of `trans`, when the fast path may read it.
    fn plain(trans: VALUE) -> Option<Self>;
    /// The bytes not yet read. Dropped before any Ruby code runs.
    fn unread(&self) -> &[u8];
    fn advance(&mut self, n: usize);
    /// A method of the transport, `f(trans)` (which may refill the buffer), with the read position handed over
    /// first and the buffer picked up again afterwards: empty if the transport no longer has a plain one, so that
    /// every later read calls its methods too.
    fn call<T>(&mut self, f: impl FnOnce(VALUE) -> Result<T, Error>) -> Result<T, Error>;

    /// Picks the buffer up again after Ruby code ran; false when the fast path may no longer read it.
    fn resume(&mut self, trans: VALUE) -> bool {
        match Self::plain(trans) {
            Some(b) => {
                *self = b;
                true
            }
            None => false,
        }
    }

    /// Hands the read position to the transport, for a buffer that keeps its own.
    fn commit(&mut self) {}

    /// N bytes from the buffer, or (crossing its end) `trans.read_into_buffer(rbuf, N)` then `rbuf`'s first N bytes
    /// (`rbuf`: the protocol's `@rbuf`).
    #[inline(always)]
    fn read_array<const N: usize>(&mut self, rbuf: VALUE) -> Result<[u8; N], Error> {
        if let Some(b) = self.unread().get(..N) {
            let out: [u8; N] = b.try_into().expect("N bytes");
            self.advance(N);
            return Ok(out);
        }
        self.call(|trans| crate::transports::io::read_into_rbuf(trans, rbuf))
    }

    /// A byte from the buffer, or `trans.read_byte` (then `FIX2INT`, as the C accelerator: nil is a TypeError).
    #[inline(always)]
    fn read_byte(&mut self) -> Result<u8, Error> {
        if let Some(&b) = self.unread().first() {
            self.advance(1);
            return Ok(b);
        }
        let v = self.call(|trans| rb::funcall(trans, READ_BYTE.get(), &[]))?;
        Ok(rb::num2int(v)? as u8)
    }

    /// A compact varint: decoded from the buffer in one go when it ends there, else byte by byte as the C
    /// accelerator reads it (`trans.read_byte` once the buffer is used up).
    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self, ruby: &Ruby) -> Result<R::Output, Error> {
        let rest = self.unread();
        let (result, consumed) = decode_varint::<R>(&rest[..rest.len().min(MAX_VARINT64_BYTES)]);
        if !matches!(result, Err(CoreError::Eof { .. })) {
            self.advance(consumed);
            return result.map_err(|e| errors::from_core(ruby, e));
        }
        let mut reader = R::default();
        loop {
            let b = self.read_byte()?;
            if let Some(v) = reader.step(b).map_err(|e| errors::from_core(ruby, e))? {
                return Ok(v);
            }
        }
    }

    /// Exactly `n` bytes handed to `make` (which may allocate but runs no Ruby code), from the buffer, or from
    /// `trans.read_all(n)` when they cross its end.
    #[inline(always)]
    fn read_with<R>(
        &mut self,
        ruby: &Ruby,
        n: usize,
        make: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        if let Some(b) = self.unread().get(..n) {
            let value = make(b);
            self.advance(n);
            return Ok(value);
        }
        let data =
            self.call(|trans| rb::funcall(trans, READ_ALL.get(), &[rb::integer(n as i64)]))?;
        // The transport's read_all answers exactly n bytes or raises; anything else is a short read.
        // SAFETY: `data` is a String on this stack; `make` runs no Ruby code.
        match rb::is_string(data).then(|| unsafe { rb::str_bytes(data) }) {
            Some(bytes) if bytes.len() == n => Ok(make(bytes)),
            _ => Err(errors::eof(ruby)),
        }
    }
}
