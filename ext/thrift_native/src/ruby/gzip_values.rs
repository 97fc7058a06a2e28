//! Conversions the gzip classes share, as zlib.c makes them: `NUM2CHR`, a dup of a held header String, and Zlib's
//! constants looked up once and pinned.

use magnus::rb_sys::protect;
use magnus::{Error, Value};
use rb_sys::VALUE;

use super::rb::{
    funcall, intern, is_nil, is_string, pin_forever, returned, str_bytes, str_len, symbol, QNIL,
};

/// The constant at `path` ("Zlib::GzipFile::Error"), looked up from Object and pinned for the process's life.
pub fn pinned_constant(path: &str) -> Result<VALUE, Error> {
    // SAFETY: rb_cObject is set at boot and never changes.
    let mut v = unsafe { rb_sys::rb_cObject };
    for name in path.split("::") {
        let name = symbol(name);
        v = funcall(v, intern("const_get"), &[name])?;
    }
    pin_forever(v);
    Ok(v)
}

/// A dup of the String `v`, or nil for nil (the gzip classes' `orig_name` and `comment`).
pub fn dup_or_nil(v: VALUE) -> Result<Value, Error> {
    if is_nil(v) {
        return Ok(returned(QNIL));
    }
    // SAFETY: `v` is a String its holder keeps alive; rb_str_dup only allocates, protected against NoMemoryError.
    let dup = protect(|| unsafe { rb_sys::rb_str_dup(v) })?;
    Ok(returned(dup))
}

/// `NUM2CHR`: a non-empty String's first byte, else `NUM2INT(v) & 0xff` (TypeError for nil or "").
pub fn num2chr(v: VALUE) -> Result<u8, Error> {
    // SAFETY: `v` is a String when is_string says so; a non-empty one has a first byte, copied out at once.
    if is_string(v) && unsafe { str_len(v) } >= 1 {
        // SAFETY: as above.
        return Ok(unsafe { str_bytes(v)[0] });
    }
    let mut n = 0;
    // SAFETY: protected: rb_num2int raises the TypeError for nil or "".
    protect(|| unsafe {
        n = rb_sys::rb_num2int(v);
        QNIL
    })?;
    Ok((n & 0xff) as u8)
}
