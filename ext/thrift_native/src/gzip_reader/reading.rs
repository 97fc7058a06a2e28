//! GzipReader's byte and character reads: `read`, `readpartial`, `getc`, `getbyte`, `ungetc`, `ungetbyte`, `eof?`,
//! each as zlib.c's (`gzfile_read`, `gzfile_read_all`, `gzfile_readpartial`, `gzfile_getc`): the same results,
//! encodings, footer checks and exceptions. A caller's buffer is filled by copying into it; nothing else is made.

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::{method, Error, RClass, Value};
use rb_sys::VALUE;

use super::source::{account, binary, closed_error, drive, fill, raise, wait_idle};
use super::transcode;
use super::{
    check_ready, new_str, with_reader, GzipReader, This, EOF_READS_AHEAD, READ_TAKES_OUTBUF,
};
use crate::ruby::gzip_values;
use crate::ruby::rb::{self, QNIL};

fn arg_error(message: String) -> Error {
    // SAFETY: rb_eArgError is set at boot and never changes.
    raise(unsafe { rb_sys::rb_eArgError }, &message)
}

/// `EOFError "end of file reached"`, as zlib.c raises it.
pub(super) fn eof_error() -> Error {
    // SAFETY: rb_eEOFError is set at boot and never changes.
    raise(unsafe { rb_sys::rb_eEOFError }, "end of file reached")
}

pub(super) fn arity_error(given: usize, expected: &str) -> Error {
    arg_error(format!(
        "wrong number of arguments (given {given}, expected {expected})"
    ))
}

/// NUM2INT of a length, then zlib.c's "negative length" refusal.
fn length(v: VALUE) -> Result<usize, Error> {
    let n = rb::num2int(v)?;
    if n < 0 {
        return Err(arg_error(format!("negative length {n} given")));
    }
    Ok(n as usize)
}

/// Empties the caller's buffer (`rb_str_resize(outbuf, 0)`).
fn clear(outbuf: VALUE) -> Result<(), Error> {
    // SAFETY: protected: rb_str_resize raises FrozenError for a frozen String.
    protect(|| unsafe { rb_sys::rb_str_resize(outbuf, 0) }).map(|_| ())
}

/// Hands out the first `n` buffered bytes: into `outbuf` (resized to them, its encoding kept) or a new binary
/// String.
fn take(this: &GzipReader, n: usize, outbuf: VALUE) -> Result<VALUE, Error> {
    if !rb::is_nil(outbuf) {
        // Refused before anything is taken, so that a frozen buffer loses no data.
        rb::check_frozen(outbuf)?;
    }
    let mut st = this.state.borrow_mut();
    let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
    let bytes = reader.take(n);
    if rb::is_nil(outbuf) {
        return binary(bytes);
    }
    // SAFETY: protected (allocation only: the buffer is a String, checked unfrozen above, and no Ruby code runs
    // between that check and here); the copy fills the `bytes.len()` bytes rb_str_resize made room for.
    protect(|| unsafe {
        rb_sys::rb_str_resize(outbuf, bytes.len() as _);
        let api = rb_sys::stable_api::get_default();
        use rb_sys::stable_api::StableApiDefinition;
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            api.rstring_ptr(outbuf) as *mut u8,
            bytes.len(),
        );
        outbuf
    })
}

/// The footer check of a member read to its end (zlib.c checks it once, at the first read that finds the end),
/// lending the io the caller's buffer as zlib.c does there too.
fn check_footer(this: &GzipReader, outbuf: VALUE) -> Result<(), Error> {
    drive(this, outbuf, |r| r.check_footer())
}

/// True when everything was handed out: then the footer is checked (once) and `outbuf` emptied, as zlib.c does
/// before answering nil, "" or EOFError.
fn at_end(this: &GzipReader, outbuf: VALUE) -> Result<bool, Error> {
    if !finished(this)? {
        return Ok(false);
    }
    check_footer(this, outbuf)?;
    if !rb::is_nil(outbuf) {
        clear(outbuf)?;
    }
    Ok(true)
}

fn finished(this: &GzipReader) -> Result<bool, Error> {
    with_reader(this, |r, _| r.finished())
}

fn buffered_len(this: &GzipReader) -> Result<usize, Error> {
    with_reader(this, |r, _| r.buffered().len())
}

/// zlib.c's `gzfile_read`: at most `len` bytes (binary), nil at the end (after the footer check); `len` 0 is "".
pub(super) fn read_len(this: &GzipReader, len: usize, outbuf: VALUE) -> Result<VALUE, Error> {
    if len == 0 {
        if rb::is_nil(outbuf) {
            return binary(&[]);
        }
        clear(outbuf)?;
        return Ok(outbuf);
    }
    fill(this, outbuf, len, len)?;
    if at_end(this, outbuf)? {
        return Ok(QNIL);
    }
    let n = len.min(buffered_len(this)?);
    take(this, n, outbuf)
}

/// zlib.c's `gzfile_read_all`: the rest of the member in the reader's encoding; "" (binary, or the emptied
/// `outbuf`) at the end. Like Zlib's, it lends `outbuf` to the io but returns a new String.
fn read_all(this: &GzipReader, outbuf: VALUE) -> Result<VALUE, Error> {
    fill(this, outbuf, usize::MAX, usize::MAX)?;
    if at_end(this, outbuf)? {
        return if rb::is_nil(outbuf) {
            binary(&[])
        } else {
            Ok(outbuf)
        };
    }
    let all = {
        let mut st = this.state.borrow_mut();
        let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
        let n = reader.buffered().len();
        let all = new_str(this, reader.take(n));
        reader.trim();
        all
    };
    account(this);
    all
}

fn read(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    let max = if READ_TAKES_OUTBUF.load(std::sync::atomic::Ordering::Relaxed) {
        2
    } else {
        1
    };
    if args.len() > max {
        return Err(arity_error(args.len(), &format!("0..{max}")));
    }
    let len = args.first().map_or(QNIL, |v| v.as_raw());
    let outbuf = args.get(1).map_or(QNIL, |v| v.as_raw());
    if !rb::is_nil(outbuf) {
        rb::check_type(outbuf, rb_sys::ruby_value_type::RUBY_T_STRING)?;
    }
    let result = if rb::is_nil(len) {
        read_all(&rb_self, outbuf)?
    } else {
        let len = length(len)?;
        read_len(&rb_self, len, outbuf)?
    };
    Ok(rb::returned(result))
}

fn readpartial(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    if !(1..=2).contains(&args.len()) {
        return Err(arity_error(args.len(), "1..2"));
    }
    let len = length(args[0].as_raw())?;
    let outbuf = args.get(1).map_or(QNIL, |v| v.as_raw());
    if !rb::is_nil(outbuf) {
        rb::check_type(outbuf, rb_sys::ruby_value_type::RUBY_T_STRING)?;
    }
    if len == 0 {
        if rb::is_nil(outbuf) {
            return Ok(rb::returned(binary(&[])?));
        }
        clear(outbuf)?;
        return Ok(rb::returned(outbuf));
    }
    fill(&rb_self, outbuf, 1, len)?;
    if at_end(&rb_self, outbuf)? {
        return Err(eof_error());
    }
    let n = len.min(buffered_len(&rb_self)?);
    Ok(rb::returned(take(&rb_self, n, outbuf)?))
}

/// zlib.c's `gzfile_getc`: one character of the reader's encoding (an invalid byte alone), nil at the end.
pub(super) fn getc_value(this: &GzipReader) -> Result<VALUE, Error> {
    // SAFETY: the encoding is Ruby's, alive for the process; max_enc_len is a plain field.
    let maxlen = unsafe { (*this.enc.get().ptr()).max_enc_len }.max(1) as usize;
    fill(this, QNIL, maxlen, maxlen)?;
    if finished(this)? {
        check_footer(this, QNIL)?;
        return Ok(QNIL);
    }
    let mut st = this.state.borrow_mut();
    let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
    if let Some(ec) = transcode::stream_converter(this) {
        let (c, consumed) = transcode::getc(this, ec, reader.buffered())?;
        reader.take(consumed);
        return Ok(c);
    }
    let buffered = reader.buffered();
    // SAFETY: the pointers bound the buffered bytes; rb_enc_mbclen reads only between them and answers at least 1.
    let len = unsafe {
        let p = buffered.as_ptr() as *const std::os::raw::c_char;
        rb_sys::rb_enc_mbclen(p, p.add(buffered.len()), this.enc.get().ptr())
    }
    .max(1) as usize;
    let len = len.min(buffered.len());
    let bytes = reader.take(len).to_vec();
    drop(st);
    new_str(this, &bytes)
}

fn getc(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    Ok(rb::returned(getc_value(&rb_self)?))
}

/// zlib.c's `gzfile_read(gz, 1)` as an Integer, without its String.
pub(super) fn getbyte_value(this: &GzipReader) -> Result<VALUE, Error> {
    fill(this, QNIL, 1, 1)?;
    if at_end(this, QNIL)? {
        return Ok(QNIL);
    }
    let mut st = this.state.borrow_mut();
    let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
    Ok(rb::integer(i64::from(reader.take(1)[0])))
}

fn readchar(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    match getc_value(&rb_self)? {
        QNIL => Err(eof_error()),
        c => Ok(rb::returned(c)),
    }
}

fn readbyte(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    match getbyte_value(&rb_self)? {
        QNIL => Err(eof_error()),
        b => Ok(rb::returned(b)),
    }
}

/// `__arity_error(given, expected)`: Ruby's ArgumentError for a method the Ruby side defines with a rest argument,
/// its message made as Ruby's own (`rb_sprintf`).
fn raise_arity_error(given: usize, expected: String) -> Result<(), Error> {
    Err(arity_error(given, &expected))
}

fn getbyte(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    Ok(rb::returned(getbyte_value(&rb_self)?))
}

/// Pushes `bytes` back; the caller has waited (`wait_idle`) since the last Ruby code ran, and `bytes` may be a
/// Ruby String's, so nothing here may let a thread switch.
fn unget(this: &GzipReader, bytes: &[u8]) -> Result<(), Error> {
    let mut st = this.state.borrow_mut();
    st.reader
        .as_mut()
        .ok_or_else(closed_error)?
        .get_mut()
        .unget(bytes);
    Ok(())
}

fn ungetbyte(rb_self: This, ch: Value) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    let byte = gzip_values::num2chr(ch.as_raw())?;
    // The conversion may have run Ruby code, where another thread may have taken the reader out.
    wait_idle(&rb_self)?;
    unget(&rb_self, &[byte])?;
    Ok(rb::returned(QNIL))
}

/// An Integer pushes back one byte (not a code point); a String its bytes, in the external encoding when the
/// reader transcodes.
fn ungetc(rb_self: This, s: Value) -> Result<Value, Error> {
    if rb::fixnum_value(s.as_raw()).is_some() {
        return ungetbyte(rb_self, s);
    }
    check_ready(&rb_self)?;
    let enc2 = rb_self.enc2.get().ptr();
    // SAFETY: protected: rb_str_to_str raises TypeError for what has no to_str; rb_str_conv_enc only converts
    // (returning the String itself when it cannot).
    let s = protect(|| unsafe {
        let s = rb_sys::rb_str_to_str(s.as_raw());
        if !enc2.is_null() && enc2 != rb_sys::rb_ascii8bit_encoding() {
            rb_sys::rb_str_conv_enc(s, rb_sys::rb_enc_get(s), enc2)
        } else {
            s
        }
    })?;
    // The conversion ran Ruby code, where another thread may have taken the reader out.
    wait_idle(&rb_self)?;
    // SAFETY: `s` is a String on this stack; the slice is copied by unget before any Ruby code runs.
    unget(&rb_self, unsafe { rb::str_bytes(s) })?;
    Ok(rb::returned(QNIL))
}

/// True at the end of the member's body with nothing buffered (the footer unchecked). Where the loaded zlib's
/// `eof?` reads ahead (3.2.3 in Ruby 3.4+), so does this one.
fn is_eof(rb_self: This) -> Result<bool, Error> {
    check_ready(&rb_self)?;
    if EOF_READS_AHEAD.load(std::sync::atomic::Ordering::Relaxed) {
        fill(&rb_self, QNIL, 1, 1)?;
    }
    finished(&rb_self)
}

pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(read, -1))?;
    class.define_method("readpartial", method!(readpartial, -1))?;
    class.define_method("getc", method!(getc, 0))?;
    class.define_private_method("__getc", method!(getc, 0))?;
    class.define_method("readchar", method!(readchar, 0))?;
    class.define_method("readbyte", method!(readbyte, 0))?;
    class.define_singleton_method("__arity_error", magnus::function!(raise_arity_error, 2))?;
    class.define_method("getbyte", method!(getbyte, 0))?;
    class.define_private_method("__getbyte", method!(getbyte, 0))?;
    class.define_method("ungetc", method!(ungetc, 1))?;
    class.define_method("ungetbyte", method!(ungetbyte, 1))?;
    class.define_method("eof?", method!(is_eof, 0))?;
    class.define_method("eof", method!(is_eof, 0))?;
    Ok(())
}
