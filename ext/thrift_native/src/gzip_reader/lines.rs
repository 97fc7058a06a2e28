//! GzipReader's line reads, as zlib.c's `gzreader_gets`: the `(rs, limit)` arguments with its conversions (no
//! `chomp:`), `$/` by default, paragraph mode for "", a limit rounded up to a character boundary, the short raw
//! tail of a multi-byte separator, `lineno`, `$_` for `gets` and `readline`. `each`/`each_line` yield natively and
//! drop their arguments when they return an Enumerator, as Zlib's do.

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::{method, Error, RClass, Ruby, Value};
use rb_sys::VALUE;

use super::reading::{arity_error, eof_error, read_len};
use super::source::{closed_error, drive, fill};
use super::{check_ready, new_str, GzipReader, This};
use crate::ruby::rb::{self, QNIL};

/// The separator: a String's bytes (read afresh at each search: Ruby code run by the io could change it, which
/// zlib.c tolerates too), or paragraph mode's "\n\n".
#[derive(Clone, Copy)]
enum Separator {
    Paragraph,
    String(VALUE),
}

impl Separator {
    /// # Safety
    /// A `String` separator must still be a String, held on the caller's stack.
    unsafe fn bytes(&self) -> &[u8] {
        match self {
            Separator::Paragraph => b"\n\n",
            Separator::String(s) => rb::str_bytes(*s),
        }
    }
}

/// What a `gets` was asked: no separator (nil: the rest, or `limit` bytes), or one; `limit` negative for none.
enum Request {
    /// `limit` 0: "" at once.
    Empty,
    Lines {
        rs: Option<Separator>,
        limit: i64,
    },
}

fn request(args: &[Value]) -> Result<Request, Error> {
    // SAFETY: rb_rs is `$/`'s storage, set at boot and replaced (never freed) by assignments to `$/`. Only
    // assigning it from C is deprecated; zlib.c reads it too.
    #[allow(deprecated)]
    let default_rs = unsafe { rb_sys::rb_rs };
    if args.len() > 2 {
        // rb_scan_args "11" once there is an argument.
        return Err(arity_error(args.len(), "1..2"));
    }
    let (mut rs, mut lim) = match args {
        [] => (default_rs, QNIL),
        [rs] => (rs.as_raw(), QNIL),
        [rs, lim, ..] => (rs.as_raw(), lim.as_raw()),
    };
    if !rb::is_nil(lim) {
        if !rb::is_nil(rs) {
            // SAFETY: protected: StringValue raises TypeError for what has no to_str.
            rs = protect(|| unsafe { rb_sys::rb_str_to_str(rs) })?;
        }
    } else if !rb::is_nil(rs) && !args.is_empty() {
        // SAFETY: protected: rb_check_string_type calls to_str, which may raise.
        let tmp = protect(|| unsafe { rb_sys::rb_check_string_type(rs) })?;
        if rb::is_nil(tmp) {
            lim = rs;
            rs = default_rs;
        } else {
            rs = tmp;
        }
    }
    let mut limit = -1;
    if !rb::is_nil(lim) {
        // SAFETY: protected: NUM2LONG raises TypeError ("no implicit conversion of Symbol into Integer") or
        // RangeError for what it cannot convert.
        protect(|| unsafe {
            limit = rb_sys::rb_num2long(lim);
            QNIL
        })?;
        if limit == 0 {
            return Ok(Request::Empty);
        }
    }
    let rs = if rb::is_nil(rs) {
        None
    // SAFETY: `rs` is a String here (`$/` is always nil or a String; the arguments were converted above).
    } else if unsafe { rb::str_len(rs) } == 0 {
        Some(Separator::Paragraph)
    } else {
        Some(Separator::String(rs))
    };
    Ok(Request::Lines { rs, limit })
}

fn with_reader<T>(
    this: &GzipReader,
    f: impl FnOnce(&mut thrift_native_core::gzip::reader::Reader) -> T,
) -> Result<T, Error> {
    let mut st = this.state.borrow_mut();
    Ok(f(st.reader.as_mut().ok_or_else(closed_error)?.get_mut()))
}

fn bump_lineno(this: &GzipReader) {
    let mut st = this.state.borrow_mut();
    st.lineno = st.lineno.wrapping_add(1);
}

/// Hands out `n` buffered bytes as a String of the reader's encoding.
fn take_str(this: &GzipReader, n: usize) -> Result<VALUE, Error> {
    let mut st = this.state.borrow_mut();
    let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
    let n = n.min(reader.buffered().len());
    let bytes = reader.take(n);
    new_str(this, bytes)
}

/// zlib.c's `gzreader_charboundary`: `n` moved up to the end of the character it cuts (judged in the reader's
/// encoding), reading more if that character is not all buffered.
fn char_boundary(this: &GzipReader, n: usize) -> Result<usize, Error> {
    let enc = this.enc.get().ptr();
    let found = with_reader(this, |r| {
        let buf = r.buffered();
        // SAFETY: the pointers bound the buffered bytes (n ≥ 1, n ≤ buf.len()); both functions only read between
        // them.
        unsafe {
            let s = buf.as_ptr() as *const std::os::raw::c_char;
            let e = s.add(buf.len());
            let p =
                rb_sys::onigenc_get_left_adjust_char_head(enc, s as _, s.add(n - 1) as _, e as _);
            let l = (p as usize) - (s as usize);
            if l >= n {
                return None;
            }
            Some((l, rb_sys::rb_enc_precise_mbclen(p as _, e, enc)))
        }
    })?;
    let Some((l, len)) = found else {
        return Ok(n);
    };
    if len > 0 {
        return Ok(l + len as usize);
    }
    if len < -1 {
        let more = (-1 - len) as usize;
        let want = n + more;
        fill(this, QNIL, want, want)?;
        let (finished, filled) = with_reader(this, |r| (r.finished(), r.buffered().len()))?;
        if finished {
            drive(this, QNIL, |r| r.check_footer())?;
        } else if filled.min(want) > 0 {
            return Ok(filled.min(want));
        }
    }
    Ok(n)
}

/// zlib.c's `gzreader_skip_linebreaks`: drops the "\n"s at the front, reading more while that is all there is.
fn skip_linebreaks(this: &GzipReader) -> Result<(), Error> {
    loop {
        fill(this, QNIL, 1, 1)?;
        let done = with_reader(this, |r| {
            if r.finished() {
                return true;
            }
            let buf = r.buffered();
            let newlines = buf.iter().take_while(|&&b| b == b'\n').count();
            let all = newlines == buf.len();
            r.take(newlines);
            !all
        })?;
        if done {
            return Ok(());
        }
    }
}

/// One line, or nil at the end (zlib.c's `gzreader_gets` without `$_`).
fn gets_value(this: &GzipReader, args: &[Value]) -> Result<VALUE, Error> {
    check_ready(this)?;
    let (rs, limit) = match request(args)? {
        Request::Empty => return super::source::binary(&[]),
        Request::Lines { rs, limit } => (rs, limit),
    };
    // SAFETY: the encoding is Ruby's, alive for the process.
    let multibyte = unsafe { (*this.enc.get().ptr()).max_enc_len } > 1;
    let Some(rs) = rs else {
        return rest(this, limit, multibyte);
    };
    let paragraph = matches!(rs, Separator::Paragraph);
    if paragraph {
        skip_linebreaks(this)?;
    }
    // SAFETY: the separator String is an argument or `$/`, held by the caller's frame or the global.
    let rslen = unsafe { rs.bytes() }.len();
    fill(this, QNIL, rslen, rslen)?;
    let (ended, filled) = with_reader(this, |r| (r.body_ended(), r.buffered().len()))?;
    if filled < rslen && ended {
        // The short tail: raw, binary; nil (after the footer check) when there is none.
        if filled > 0 {
            bump_lineno(this);
        }
        return read_len(this, rslen, QNIL);
    }
    let limit = usize::try_from(limit).ok();
    let mut searched = 0;
    let n = loop {
        let (found, filled, ended) = with_reader(this, |r| {
            let filled = r.buffered().len();
            let window = limit.map_or(filled, |l| l.min(filled));
            // SAFETY: as above.
            let found = r.find_after(unsafe { rs.bytes() }, searched.min(window), window);
            (found, filled, r.body_ended())
        })?;
        if let Some(n) = found {
            break n;
        }
        if let Some(limit) = limit.filter(|&l| filled >= l) {
            break limit;
        }
        if ended {
            break filled;
        }
        searched = (filled + 1).saturating_sub(rslen);
        fill(this, QNIL, filled + 1, filled + 1)?;
    };
    let n = if multibyte && Some(n) == limit {
        let (ended, filled) = with_reader(this, |r| (r.body_ended(), r.buffered().len()))?;
        if filled > n || !ended {
            char_boundary(this, n)?
        } else {
            n
        }
    } else {
        n
    };
    bump_lineno(this);
    let line = take_str(this, n)?;
    if paragraph {
        skip_linebreaks(this)?;
    }
    Ok(line)
}

/// `gets(nil)` and `gets(nil, limit)`: the rest of the member, or `limit` bytes of it.
fn rest(this: &GzipReader, limit: i64, multibyte: bool) -> Result<VALUE, Error> {
    let line = if limit < 0 {
        fill(this, QNIL, usize::MAX, usize::MAX)?;
        if with_reader(this, |r| r.finished())? {
            drive(this, QNIL, |r| r.check_footer())?;
            return Ok(QNIL);
        }
        take_str(this, usize::MAX)?
    } else {
        let limit = limit as usize;
        fill(this, QNIL, limit, limit)?;
        let (finished, filled) = with_reader(this, |r| (r.finished(), r.buffered().len()))?;
        if finished {
            drive(this, QNIL, |r| r.check_footer())?;
            return Ok(QNIL);
        }
        let n = if multibyte && filled >= limit {
            char_boundary(this, limit)?
        } else {
            limit
        };
        take_str(this, n)?
    };
    bump_lineno(this);
    Ok(line)
}

fn gets(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    let line = gets_value(&rb_self, args)?;
    if !rb::is_nil(line) {
        // SAFETY: rb_lastline_set sets `$_` of the Ruby frame that called this method.
        unsafe { rb_sys::rb_lastline_set(line) };
    }
    Ok(rb::returned(line))
}

fn readline(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    let line = gets(rb_self, args)?;
    if line.is_nil() {
        return Err(eof_error());
    }
    Ok(line)
}

fn each_as(rb_self: This, args: &[Value], name: &str) -> Result<Value, Error> {
    // SAFETY: rb_block_given_p reads the running frame, this method's.
    if unsafe { rb_sys::rb_block_given_p() } == 0 {
        // Zlib's RETURN_ENUMERATOR(obj, 0, 0): the arguments are dropped.
        return Ok(rb_self.enumeratorize(name, ()).as_value());
    }
    loop {
        let line = gets_value(&rb_self, args)?;
        if rb::is_nil(line) {
            return Ok(rb_self.as_value());
        }
        // SAFETY: protected; rb_yield calls the block given to the running native method.
        protect(|| unsafe { rb_sys::rb_yield(line) })?;
    }
}

fn each(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    each_as(rb_self, args, "each")
}

fn each_line(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    each_as(rb_self, args, "each_line")
}

fn readlines(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    let lines = Ruby::get_with(rb_self).ary_new();
    loop {
        let line = gets_value(&rb_self, args)?;
        if rb::is_nil(line) {
            return Ok(lines.as_value());
        }
        lines.push(rb::returned(line))?;
    }
}

pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("gets", method!(gets, -1))?;
    class.define_method("readline", method!(readline, -1))?;
    class.define_method("each", method!(each, -1))?;
    class.define_method("each_line", method!(each_line, -1))?;
    class.define_method("readlines", method!(readlines, -1))?;
    Ok(())
}
