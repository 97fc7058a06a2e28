//! What the protocols share: the C accelerator's argument checks, batching of the bytes of one call, the
//! `reset_message_size` step of `read_message_begin`, and UUID text checks.

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::{Error, Ruby, Value};
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::VALUE;
use thrift_native_core::uuid;

use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{IVAR_RESET_MESSAGE_SIZE, IVAR_TRANS, RESET_MESSAGE_SIZE};
use crate::ruby::rb;
use crate::thrift::errors;
use crate::thrift::thrift;
use crate::transports::io::Output;

// ----- argument checks, as the C accelerator's checked_integer_range -----

pub fn checked_integer(ruby: &Ruby, v: Value, min: i64, max: i64) -> Result<i64, Error> {
    let raw = v.as_raw();
    let n = match rb::fixnum_value(raw) {
        Some(n) => n,
        // A Bignum beyond 64 bits raises NUM2LL's own RangeError.
        None if rb::is_integer(raw) => rb::to_i64(raw)?,
        None => return Err(errors::integer_expected(ruby)),
    };
    if n < min || n > max {
        return Err(errors::out_of_bounds(ruby));
    }
    Ok(n)
}

pub fn checked_byte(ruby: &Ruby, v: Value) -> Result<i8, Error> {
    checked_integer(ruby, v, i8::MIN.into(), i8::MAX.into()).map(|n| n as i8)
}

pub fn checked_i16(ruby: &Ruby, v: Value) -> Result<i16, Error> {
    checked_integer(ruby, v, i16::MIN.into(), i16::MAX.into()).map(|n| n as i16)
}

pub fn checked_i32(ruby: &Ruby, v: Value) -> Result<i32, Error> {
    checked_integer(ruby, v, i32::MIN.into(), i32::MAX.into()).map(|n| n as i32)
}

pub fn checked_i64(ruby: &Ruby, v: Value) -> Result<i64, Error> {
    checked_integer(ruby, v, i64::MIN, i64::MAX)
}

pub fn checked_size(ruby: &Ruby, v: Value) -> Result<i32, Error> {
    checked_integer(ruby, v, 0, i32::MAX.into()).map(|n| n as i32)
}

// ----- integer arguments: checked, or as older C accelerators took them -----

/// An integer argument as the loaded thrift's C accelerator takes it: range-checked when `checked` (TypeError,
/// RangeError "integer out of bounds"), else converted with NUM2INT (TypeError, or RangeError outside `int`) for
/// the caller to keep its low bytes. Which one is the [`crate::thrift::contract::Contract`]'s to say, per protocol.
#[inline(always)]
pub fn int_arg(ruby: &Ruby, v: Value, min: i64, max: i64, checked: bool) -> Result<i32, Error> {
    if checked {
        checked_integer(ruby, v, min, max).map(|n| n as i32)
    } else {
        rb::num2int(v.as_raw())
    }
}

/// As [`int_arg`], 64 bits: NUM2LL when not `checked` (a Float truncated, TypeError for what is not numeric).
#[inline(always)]
pub fn i64_arg(ruby: &Ruby, v: Value, checked: bool) -> Result<i64, Error> {
    if checked {
        checked_i64(ruby, v)
    } else {
        rb::num2ll(v.as_raw())
    }
}

// BinaryProtocolAccelerated's: checked from thrift 0.24 on.

#[inline(always)]
fn binary_int(ruby: &Ruby, v: Value, min: i64, max: i64) -> Result<i32, Error> {
    int_arg(ruby, v, min, max, thrift().contract.checked_binary_writes)
}

pub fn binary_byte(ruby: &Ruby, v: Value) -> Result<i8, Error> {
    binary_int(ruby, v, i8::MIN.into(), i8::MAX.into()).map(|n| n as i8)
}

pub fn binary_i16(ruby: &Ruby, v: Value) -> Result<i16, Error> {
    binary_int(ruby, v, i16::MIN.into(), i16::MAX.into()).map(|n| n as i16)
}

pub fn binary_i32(ruby: &Ruby, v: Value) -> Result<i32, Error> {
    binary_int(ruby, v, i32::MIN.into(), i32::MAX.into())
}

/// A container size: negative ones were written as they are before 0.24.
pub fn binary_size(ruby: &Ruby, v: Value) -> Result<i32, Error> {
    binary_int(ruby, v, 0, i32::MAX.into())
}

pub fn binary_i64(ruby: &Ruby, v: Value) -> Result<i64, Error> {
    i64_arg(ruby, v, thrift().contract.checked_binary_writes)
}

/// A strict message header's first word: VERSION_1 | type, the type range-checked from 0.24 on, before that
/// OR-ed in whole as the old C accelerator's `VERSION_1 | FIX2INT(type)` did.
pub fn binary_version_word(ruby: &Ruby, mtype: Value) -> Result<i32, Error> {
    let version = thrift().version_1 as u32 as i32;
    if thrift().contract.checked_binary_writes {
        Ok(version | i32::from(checked_byte(ruby, mtype)?))
    } else {
        Ok(version | rb::num2int(mtype.as_raw())?)
    }
}

pub fn not_nil(ruby: &Ruby, v: Value) -> Result<Value, Error> {
    if v.is_nil() {
        Err(errors::nil_argument(ruby))
    } else {
        Ok(v)
    }
}

/// `rb_Float(v)`: Floats as they are, Integers and numeric Strings converted, anything else raises.
pub fn float_value(v: Value) -> Result<f64, Error> {
    let raw = v.as_raw();
    let api = get_default();
    // SAFETY: float_type_p checks the tag before reading a header.
    if unsafe { api.float_type_p(raw) } {
        // SAFETY: num2dbl of a Float only reads it; it cannot raise.
        return Ok(unsafe { api.num2dbl(raw) });
    }
    // SAFETY: protected; rb_Float raises TypeError/ArgumentError for what it cannot convert, and returns a Float.
    let f = protect(|| unsafe { rb_sys::rb_Float(raw) })?;
    // SAFETY: `f` is a Float, as rb_Float returns.
    Ok(unsafe { api.num2dbl(f) })
}

/// The byte length of String `s` as an i32, or RangeError with `message`.
pub fn string_length(ruby: &Ruby, s: VALUE, message: &'static str) -> Result<i32, Error> {
    // SAFETY: `s` is a String.
    i32::try_from(unsafe { rb::str_len(s) })
        .map_err(|_| crate::thrift::errors::exception(ruby.exception_range_error(), message))
}

/// The 16 bytes of a UUID's text: INVALID_DATA "UUID must be a string" or "Invalid UUID format" otherwise.
pub fn uuid_bytes(ruby: &Ruby, u: Value) -> Result<[u8; 16], Error> {
    let raw = u.as_raw();
    if !rb::is_string(raw) {
        return Err(errors::protocol(
            thrift().codes.invalid_data,
            "UUID must be a string",
        ));
    }
    // SAFETY: `raw` is a String; the slice is dropped before any Ruby call.
    let parsed = uuid::parse(unsafe { rb::str_bytes(raw) });
    parsed.map_err(|e| errors::from_core(ruby, e))
}

/// Step (a) of every `read_message_begin`: `trans.reset_message_size` when `@reset_message_size` is truthy.
pub fn reset_message_size_if_asked(protocol: VALUE) -> Result<(), Error> {
    static RESET_MESSAGE_SIZE_IVAR: IvarSite = IvarSite::new();
    if rb::truthy(RESET_MESSAGE_SIZE_IVAR.get(protocol, IVAR_RESET_MESSAGE_SIZE.get())) {
        let trans = rb::ivar_get(protocol, IVAR_TRANS.get());
        rb::funcall(trans, RESET_MESSAGE_SIZE.get(), &[])?;
    }
    Ok(())
}

/// A message header whose name is given as UTF-8 pieces (a MultiplexedProtocol's `"#{service}:#{name}"` of two
/// UTF-8 Strings), its type and sequence id in range: what the protocols' `write_joined_message_begin` append.
pub struct JoinedHeader<'a> {
    pub name: [&'a [u8]; 3],
    pub mtype: u8,
    pub seqid: i32,
}

impl JoinedHeader<'_> {
    pub fn name_len(&self) -> usize {
        self.name.iter().map(|p| p.len()).sum()
    }
}

/// The longest message header [`append_pieces`] composes.
const PIECES_MAX: usize = 320;

/// Appends the pieces to a plain write buffer in one piece (composed on the stack first, so that no piece is read
/// after Ruby code ran). None, with nothing written, for a transport or pieces longer than [`PIECES_MAX`].
pub fn append_pieces(out: Output, pieces: &[&[u8]]) -> Option<Result<(), Error>> {
    let Output::Target(target) = out else {
        return None;
    };
    let mut bytes = [0u8; PIECES_MAX];
    let mut len = 0;
    for piece in pieces {
        bytes
            .get_mut(len..len + piece.len())?
            .copy_from_slice(piece);
        len += piece.len();
    }
    Some(target.append(&bytes[..len]))
}

/// Bytes gathered for one call, so that a check failing half-way still emits what the C accelerator had already
/// written before it (its writes happen between its checks).
pub struct Pending {
    out: Output,
    bytes: [u8; 32],
    len: usize,
}

impl Pending {
    pub fn new(out: Output) -> Self {
        Pending {
            out,
            bytes: [0; 32],
            len: 0,
        }
    }

    pub fn output(&self) -> &Output {
        &self.out
    }

    /// Gathers bytes for one write at `flush`.
    pub fn push(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// One `trans.write` of the C accelerator: on a transport it happens now, as its own call (after what was
    /// gathered); into a plain buffer it is gathered with the rest.
    pub fn write_unit(&mut self, b: &[u8]) -> Result<(), Error> {
        match self.out {
            Output::Target(_) => {
                self.push(b);
                Ok(())
            }
            Output::Transport(_) => {
                self.flush()?;
                self.out.write(b)
            }
        }
    }

    /// A varint written as the C accelerator does: one `trans.write` per byte.
    pub fn write_varint(&mut self, n: u64) -> Result<(), Error> {
        let v = thrift_native_core::compact::Varint::new(n);
        match self.out {
            Output::Target(_) => {
                self.push(v.as_bytes());
                Ok(())
            }
            Output::Transport(_) => {
                self.flush()?;
                v.as_bytes().iter().try_for_each(|b| self.out.write(&[*b]))
            }
        }
    }

    /// Writes what was gathered (one `trans.write`, or one append to the buffer).
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.len > 0 {
            let len = std::mem::take(&mut self.len);
            self.out.write(&self.bytes[..len])?;
        }
        Ok(())
    }

    pub fn check<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if result.is_err() {
            self.flush()?;
        }
        result
    }
}
