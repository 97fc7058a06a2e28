//! String encoding helpers with `Thrift::Bytes` semantics, native where the C accelerator is native.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::VALUE;

use crate::ruby::names::{CONVERT_TO_STRING, CONVERT_TO_UTF8_BYTE_BUFFER, FORCE_BINARY_ENCODING};
use crate::ruby::rb::{self, StaticId};
use crate::thrift::thrift;

/// Ruby's fixed index of ASCII-8BIT (RUBY_ENCINDEX_ASCII_8BIT).
const ENCINDEX_BINARY: i32 = 0;
/// Ruby's fixed index of UTF-8 (RUBY_ENCINDEX_UTF_8).
const ENCINDEX_UTF_8: i32 = 1;

#[inline(always)]
fn encoding_index(s: VALUE) -> i32 {
    // SAFETY: callers pass Strings; encoding_get reads the index kept in the object's flags.
    unsafe { get_default().encoding_get(s) }
}

/// True for a String tagged ASCII-8BIT.
#[inline(always)]
pub fn is_binary_string(s: VALUE) -> bool {
    rb::is_string(s) && encoding_index(s) == ENCINDEX_BINARY
}

#[inline(always)]
pub fn is_utf8_string(s: VALUE) -> bool {
    rb::is_string(s) && encoding_index(s) == ENCINDEX_UTF_8
}

/// A String in one of the encodings whose text a Regexp of ASCII reads as its bytes: ASCII-8BIT, UTF-8 or US-ASCII
/// (Ruby's fixed indexes 0, 1 and 2).
#[inline(always)]
pub fn is_ascii_compatible_string(s: VALUE) -> bool {
    rb::is_string(s) && (0..=2).contains(&encoding_index(s))
}

/// A UTF-8 String whose bytes are valid UTF-8.
#[inline(always)]
pub fn is_valid_utf8_string(s: VALUE) -> bool {
    // SAFETY: rb_enc_str_coderange scans (once, then caches) a String's bytes.
    is_utf8_string(s)
        && unsafe { rb_sys::rb_enc_str_coderange(s) }
            != rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_BROKEN as i32
}

/// `Thrift::Bytes.method(arg)`.
fn call_bytes(method: &StaticId, arg: VALUE) -> Result<VALUE, Error> {
    rb::funcall(thrift().bytes, method.get(), &[arg])
}

/// The C accelerator's `force_binary_encoding`: a BINARY String is returned as is; another String is re-tagged
/// BINARY in place (a frozen one is dup'ed first); anything else goes to `Thrift::Bytes.force_binary_encoding`.
pub fn force_binary_encoding(v: VALUE) -> Result<VALUE, Error> {
    if !rb::is_string(v) {
        return call_bytes(&FORCE_BINARY_ENCODING, v);
    }
    if encoding_index(v) == ENCINDEX_BINARY {
        return Ok(v);
    }
    // SAFETY: protected calls; rb_obj_dup and rb_enc_associate_index may raise (e.g. for an odd subclass).
    protect(|| unsafe {
        let s = if rb::is_frozen(v) {
            rb_sys::rb_obj_dup(v)
        } else {
            v
        };
        rb_sys::rb_enc_associate_index(s, ENCINDEX_BINARY)
    })
}

/// The String whose bytes `Thrift::Bytes.convert_to_utf8_byte_buffer(s)` would hold, for appending them to a buffer:
/// a UTF-8 String itself (no copy), anything else converted by the Ruby helper.
pub fn utf8_bytes_of(v: VALUE) -> Result<VALUE, Error> {
    if is_utf8_string(v) {
        // Same bytes as Ruby's `dup.force_encoding(BINARY)`, without the copy: the caller only reads them.
        return Ok(v);
    }
    call_bytes(&CONVERT_TO_UTF8_BYTE_BUFFER, v)
}

/// `Thrift::Bytes.convert_to_utf8_byte_buffer(s)`: a BINARY copy of the UTF-8 bytes (what the dispatch path hands
/// to `trans.write`, so the caller's String is never re-tagged by a transport).
pub fn convert_to_utf8_byte_buffer(v: VALUE) -> Result<VALUE, Error> {
    call_bytes(&CONVERT_TO_UTF8_BYTE_BUFFER, v)
}

/// `Thrift::Bytes.convert_to_string(b)`: a dup tagged UTF-8, not validated.
pub fn convert_to_string(v: VALUE) -> Result<VALUE, Error> {
    call_bytes(&CONVERT_TO_STRING, v)
}
