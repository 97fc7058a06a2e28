//! A transcoding reader's converter, as zlib.c's `gz->ec`: opened when an external encoding is given beside the
//! internal one, reopened by `rewind`, closed with the reader. zlib.c uses it where the external encoding is a dummy
//! one (UTF-16, UTF-32, ISO-2022-JP...): there a String is converted as part of the stream (`ECONV_PARTIAL_INPUT`,
//! so that a BOM read once decides the rest, and a character cut between reads is finished by the next), and `getc`
//! converts straight from the buffered bytes. Other encodings convert each String on its own (`new_str`).

use std::cell::Cell;

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;

use super::{Encoding, GzipReader};

/// zlib.c's `GZFILE_CBUF_CAPA`: `getc` converts at most this many bytes of output.
const CBUF_CAPA: usize = 10;

const PARTIAL_INPUT: i32 = rb_sys::ruby_econv_flag_type::RUBY_ECONV_PARTIAL_INPUT as i32;
const AFTER_OUTPUT: i32 = rb_sys::ruby_econv_flag_type::RUBY_ECONV_AFTER_OUTPUT as i32;

/// An `rb_econv_t *` (0 for none), kept as an address so that the reader stays `Send`.
pub type Converter = Cell<usize>;

/// Opens the converter from `enc2` to `enc` (none when `enc2` is none or Ruby has no such converter).
pub fn open(enc: Encoding, enc2: Encoding, ecflags: i32, ecopts: VALUE) -> usize {
    if enc2.is_none() {
        return 0;
    }
    // SAFETY: the encodings are Ruby's, alive for the process, their names NUL-terminated; rb_econv_open_opts
    // returns NULL rather than raising when there is no converter.
    unsafe {
        rb_sys::rb_econv_open_opts((*enc2.ptr()).name, (*enc.ptr()).name, ecflags, ecopts) as usize
    }
}

/// Closes the converter, if any.
pub fn close(ec: &Converter) {
    let ptr = ec.replace(0);
    if ptr != 0 {
        // SAFETY: a converter rb_econv_open_opts made and nothing else holds; closed once (the cell is emptied).
        unsafe { rb_sys::rb_econv_close(ptr as *mut rb_sys::rb_econv_t) };
    }
}

/// `rewind`: a fresh converter, as zlib.c's `gzfile_reset` opens one.
pub fn reopen(this: &GzipReader) {
    close(&this.ec);
    this.ec.set(open(
        this.enc.get(),
        this.enc2.get(),
        this.ecflags.get(),
        this.ecopts.get(),
    ));
}

/// The converter, when zlib.c uses it: a dummy external encoding.
pub fn stream_converter(this: &GzipReader) -> Option<*mut rb_sys::rb_econv_t> {
    let ec = this.ec.get();
    let enc2 = this.enc2.get();
    // SAFETY: rb_enc_dummy_p only reads the encoding's flags.
    (ec != 0 && !enc2.is_none() && unsafe { rb_sys::rb_enc_dummy_p(enc2.ptr()) } != 0)
        .then_some(ec as *mut rb_sys::rb_econv_t)
}

/// zlib.c's `gzfile_newstr` through the converter: `bytes` converted as part of the stream, in the reader's
/// encoding.
pub fn convert(
    this: &GzipReader,
    ec: *mut rb_sys::rb_econv_t,
    bytes: &[u8],
) -> Result<VALUE, Error> {
    let enc = this.enc.get().ptr();
    // SAFETY: protected (allocation; the converter raises nothing itself here); the converter is the reader's,
    // open; `bytes` is copied into the first String before any Ruby code could run.
    protect(|| unsafe {
        let raw = rb_sys::rb_str_new(bytes.as_ptr() as *const _, bytes.len() as _);
        let converted = rb_sys::rb_econv_str_convert(ec, raw, PARTIAL_INPUT);
        rb_sys::rb_enc_associate(converted, enc);
        converted
    })
}

/// zlib.c's `gzfile_getc` through the converter: at most `CBUF_CAPA` bytes of output converted from the buffered
/// bytes; returns the String and how many buffered bytes it consumed (to be handed out by the caller).
pub fn getc(
    this: &GzipReader,
    ec: *mut rb_sys::rb_econv_t,
    buffered: &[u8],
) -> Result<(VALUE, usize), Error> {
    let enc = this.enc.get().ptr();
    let mut consumed = 0;
    // SAFETY: protected: rb_econv_check_error raises the conversion's error. The source pointers bound `buffered`,
    // which nothing changes meanwhile (no Ruby code runs before the error check, whose raise ends the use); the
    // destination pointers bound the new String's CBUF_CAPA bytes.
    let cbuf = protect(|| unsafe {
        let cbuf = rb_sys::rb_enc_str_new(std::ptr::null(), CBUF_CAPA as _, enc);
        let api = rb_sys::stable_api::get_default();
        use rb_sys::stable_api::StableApiDefinition;
        let ss = buffered.as_ptr();
        let mut sp = ss;
        let se = ss.add(buffered.len());
        let ds = api.rstring_ptr(cbuf) as *mut u8;
        let mut dp = ds;
        let de = ds.add(CBUF_CAPA);
        rb_sys::rb_econv_convert(ec, &mut sp, se, &mut dp, de, PARTIAL_INPUT | AFTER_OUTPUT);
        consumed = sp.offset_from(ss) as usize;
        rb_sys::rb_str_resize(cbuf, dp.offset_from(ds) as _);
        rb_sys::rb_econv_check_error(ec);
        cbuf
    });
    match cbuf {
        Ok(cbuf) => Ok((cbuf, consumed)),
        Err(e) => Err(e),
    }
}
