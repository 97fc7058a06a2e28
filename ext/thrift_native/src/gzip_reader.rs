//! `ThriftNative::GzipReader`: a `Zlib::GzipReader` work-alike that inflates with the core's reader (flate2 on
//! zlib-rs) and makes no garbage per read. This file is the Ruby class, its state and the methods that only report
//! or end it; `gzip_reader/source.rs` reads the io and maps the core's refusals to Zlib's exceptions,
//! `gzip_reader/reading.rs` the byte and character reads, `gzip_reader/lines.rs` the line reads.
//!
//! * The compressed input and the inflated bytes not yet handed out are Rust buffers reused for the stream's life;
//!   `read`/`readpartial` into a caller's buffer copy into it and allocate nothing.
//! * The io is read in zlib.c's 2048-byte steps, so that its position, `unused` and `rewind` agree with Zlib's;
//!   a plain IO or a StringIO fills one reused String.
//! * Errors are Zlib's own classes with Zlib's messages, at the calls where Zlib raises them
//!   (docs/gzip_reader_contract.md is the reference, with each version's differences).
//!
//! The Ruby side (lib/thrift_native/gzip_reader.rb) defines `open`, `wrap`, `zcat`, `path` and the methods that
//! are loops over these (`each_byte`, `each_char`, `readchar`, `readbyte`).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

mod lines;
mod reading;
mod source;
mod transcode;

use magnus::gc::{Compactor, Marker};
use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::typed_data::Obj;
use magnus::{function, method, DataTypeFunctions, Error, RClass, RModule, Ruby, TypedData, Value};
use rb_sys::tracking_allocator::ManuallyTracked;
use rb_sys::VALUE;
use thrift_native_core::gzip::reader::Reader;

use crate::ruby::gzip_values;
use crate::ruby::held;
use crate::ruby::names::CLOSE;
use crate::ruby::rb::{self, define_rb_intern, QNIL};
use source::{closed_error, drive, wait_idle};

define_rb_intern!(
    IVAR_INPUT => "@input",
    SEEK => "seek",
    STRING_IO => "StringIO",
);

/// What inflate's state takes beside the buffers: zlib's inflate_state (about 7 KiB) and its 32 KiB window.
const INFLATE_STATE_BYTES: usize = 40 * 1024;

/// Zlib's exception classes, looked up once at load time and pinned.
struct Globals {
    gzip_error: VALUE,
    /// `Zlib::InProgressError` (zlib 3.0 on), else `Zlib::GzipFile::Error`.
    in_progress_error: VALUE,
    data_error: VALUE,
    no_footer: VALUE,
    crc_error: VALUE,
    length_error: VALUE,
    eof_error: VALUE,
    no_method_error: VALUE,
}

static GLOBALS: OnceLock<Globals> = OnceLock::new();

fn globals() -> &'static Globals {
    GLOBALS.get().expect("GzipReader initialised")
}

/// The loaded zlib's version differences (probed by lib/thrift_native/gzip_reader.rb against Zlib::GzipReader):
/// `read(len, outbuf)` (zlib 3.1+; before, `read` takes at most one argument) and an `eof?` that reads ahead
/// until there is output or the body ends (zlib 3.2.3 in Ruby 3.4+; before, `eof?` never reads).
static READ_TAKES_OUTBUF: AtomicBool = AtomicBool::new(true);
static EOF_READS_AHEAD: AtomicBool = AtomicBool::new(true);

/// Everything but the Ruby values. Never borrowed across a call into Ruby.
#[derive(Default)]
struct State {
    /// None before `initialize` and after close/finish ("closed gzip stream").
    reader: Option<ManuallyTracked<Reader>>,
    lineno: i32,
    sync: bool,
    /// The reader is out, inflating without the GVL in another thread (`source::fill`); `reader` is None meanwhile.
    busy: bool,
    /// The buffers' bytes last reported to Ruby's GC (`rb_gc_adjust_memory_usage`), beside the inflate state.
    accounted: usize,
}

/// An encoding as zlib.c keeps it: a pointer into Ruby's encoding table, which lives as long as the process (kept
/// as an address, so that the reader stays `Send` as magnus requires; 0 for none).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Encoding(usize);

impl Encoding {
    const NONE: Encoding = Encoding(0);

    fn of(enc: *const rb_sys::rb_encoding) -> Self {
        Encoding(enc as usize)
    }

    fn ptr(self) -> *mut rb_sys::rb_encoding {
        self.0 as *mut rb_sys::rb_encoding
    }

    fn is_none(self) -> bool {
        self.0 == 0
    }
}

#[derive(TypedData)]
#[magnus(class = "ThriftNative::GzipReader", mark, compact, size)]
pub struct GzipReader {
    /// The io (nil before initialize and after close/finish). Ruby values live in Cells, never in the RefCell, so
    /// that mark and compaction never need a borrow.
    io: Cell<VALUE>,
    /// The header's FNAME and FCOMMENT (binary Strings), or nil.
    orig_name: Cell<VALUE>,
    comment: Cell<VALUE>,
    /// nil, or the String lent to a plain IO or StringIO for each chunk.
    scratch: Cell<VALUE>,
    /// The `invalid:`/`undef:`/`replace:` options of a transcoding reader (zlib.c's `ecopts`), or nil.
    ecopts: Cell<VALUE>,
    lend_scratch: Cell<bool>,
    /// The encoding of what line and character reads return, and, when transcoding, the one the bytes are in
    /// (zlib.c's `enc` and `enc2`).
    enc: Cell<Encoding>,
    enc2: Cell<Encoding>,
    ecflags: Cell<i32>,
    /// The converter of a transcoding reader (zlib.c's `gz->ec`), used where the external encoding is a dummy one.
    ec: transcode::Converter,
    state: RefCell<State>,
}

impl Drop for GzipReader {
    fn drop(&mut self) {
        transcode::close(&self.ec);
    }
}

impl Default for GzipReader {
    fn default() -> Self {
        GzipReader {
            io: Cell::new(QNIL),
            orig_name: Cell::new(QNIL),
            comment: Cell::new(QNIL),
            scratch: Cell::new(QNIL),
            ecopts: Cell::new(QNIL),
            lend_scratch: Cell::new(false),
            // SAFETY: the allocator runs with the GVL; the default external encoding is captured at allocation, as
            // zlib.c does.
            enc: Cell::new(Encoding::of(unsafe {
                rb_sys::rb_default_external_encoding()
            })),
            enc2: Cell::new(Encoding::NONE),
            ecflags: Cell::new(0),
            ec: Cell::new(0),
            state: RefCell::new(State::default()),
        }
    }
}

impl GzipReader {
    fn values(&self) -> [&Cell<VALUE>; 5] {
        [
            &self.io,
            &self.orig_name,
            &self.comment,
            &self.scratch,
            &self.ecopts,
        ]
    }

    /// The String lent to the io, made on first use.
    fn scratch(&self) -> VALUE {
        let s = self.scratch.get();
        if !rb::is_nil(s) {
            return s;
        }
        // SAFETY: rb_str_buf_new allocates an empty String with room for one chunk; it does not raise.
        let s = unsafe { rb_sys::rb_str_buf_new(source::CHUNK as _) };
        self.scratch.set(s);
        s
    }
}

impl DataTypeFunctions for GzipReader {
    fn mark(&self, marker: &Marker) {
        held::mark(&self.values(), marker);
    }

    fn compact(&self, compactor: &Compactor) {
        held::compact(&self.values(), compactor);
    }

    fn size(&self) -> usize {
        let native = self.state.try_borrow().map_or(0, |s| {
            s.reader
                .as_ref()
                .map_or(0, |r| r.get().buffer_bytes() + INFLATE_STATE_BYTES)
        });
        std::mem::size_of::<Self>() + native
    }
}

type This = Obj<GzipReader>;

fn check_ready(this: &GzipReader) -> Result<(), Error> {
    wait_idle(this)?;
    match this.state.borrow().reader {
        Some(_) => Ok(()),
        None => Err(closed_error()),
    }
}

/// `__setup(io, opts)`: the native half of `initialize`: the encodings (IO's rules, zlib.c's `rb_gzfile_ecopts`,
/// after the header so that header errors win), then the header, read eagerly.
fn setup(rb_self: This, io: Value, opts: Value) -> Result<Value, Error> {
    wait_idle(&rb_self)?;
    source::forget_accounted(&rb_self);
    *rb_self.state.borrow_mut() = State {
        reader: Some(ManuallyTracked::wrap(Reader::new(), INFLATE_STATE_BYTES)),
        ..State::default()
    };
    rb_self.io.set(io.as_raw());
    rb_self
        .lend_scratch
        .set(source::lends_scratch(io.as_raw())?);
    drive(&rb_self, QNIL, |r| r.read_header())?;
    let (name, comment) = {
        let st = rb_self.state.borrow();
        let header = st.reader.as_ref().and_then(|r| r.get().header().cloned());
        header.map_or((None, None), |h| (h.orig_name, h.comment))
    };
    for (cell, field) in [(&rb_self.orig_name, name), (&rb_self.comment, comment)] {
        cell.set(match field {
            Some(bytes) => source::binary(&bytes)?,
            None => QNIL,
        });
    }
    set_encodings(&rb_self, opts.as_raw())?;
    Ok(rb_self.as_value())
}

fn set_encodings(this: &GzipReader, opts: VALUE) -> Result<(), Error> {
    if rb::is_nil(opts) {
        return Ok(());
    }
    let mut enc = this.enc.get().ptr() as *const rb_sys::rb_encoding;
    let mut enc2: *const rb_sys::rb_encoding = std::ptr::null();
    let (mut ecflags, mut ecopts) = (0, QNIL);
    // SAFETY: protected: rb_io_extract_encoding_option raises for a bad encoding value (and warns for an unknown
    // name); rb_econv_prepare_opts raises ArgumentError for bad invalid:/undef:/replace: values.
    protect(|| unsafe {
        rb_sys::rb_io_extract_encoding_option(opts, &mut enc, &mut enc2, std::ptr::null_mut());
        if !enc2.is_null() {
            ecflags = rb_sys::rb_econv_prepare_opts(opts, &mut ecopts);
        }
        QNIL
    })?;
    if enc.is_null() {
        // `internal_encoding: nil` or "-" leaves no encoding (zlib.c then reads through NULL and crashes): the
        // default external one, which `new` without options uses.
        // SAFETY: rb_default_external_encoding only reads a global.
        enc = unsafe { rb_sys::rb_default_external_encoding() };
    }
    this.enc.set(Encoding::of(enc));
    this.enc2.set(Encoding::of(enc2));
    this.ecflags.set(ecflags);
    this.ecopts.set(ecopts);
    transcode::reopen(this);
    Ok(())
}

/// A String of `bytes` as zlib.c's `gzfile_newstr` makes one: in the reader's encoding, or transcoded from the
/// external one (left binary where that fails, as Zlib leaves it).
fn new_str(this: &GzipReader, bytes: &[u8]) -> Result<VALUE, Error> {
    let (enc, enc2) = (this.enc.get(), this.enc2.get());
    let (enc, enc2_ptr) = (enc.ptr(), enc2.ptr());
    if let Some(ec) = transcode::stream_converter(this) {
        return transcode::convert(this, ec, bytes);
    }
    if enc2.is_none() {
        // SAFETY: rb_enc_str_new copies `bytes` and tags the copy; like rb_str_new (rb::binary_string) it allocates
        // but raises nothing for lengths that fit in memory. The encoding is Ruby's, alive for the process. The
        // line reads' hot path: no protect frame per line.
        return Ok(unsafe {
            rb_sys::rb_enc_str_new(bytes.as_ptr() as *const _, bytes.len() as _, enc)
        });
    }
    let (ecflags, ecopts) = (this.ecflags.get(), this.ecopts.get());
    // SAFETY: protected (the converter's own errors); the encodings are Ruby's, alive for the process; `bytes` is
    // copied before any Ruby code could run.
    protect(|| unsafe {
        let raw = rb_sys::rb_str_new(bytes.as_ptr() as *const _, bytes.len() as _);
        rb_sys::rb_str_conv_enc_opts(raw, enc2_ptr, enc, ecflags, ecopts)
    })
}

fn close(rb_self: This) -> Result<Value, Error> {
    wait_idle(&rb_self)?;
    if rb_self.state.borrow().reader.is_none() {
        return Ok(rb::returned(QNIL));
    }
    let io = end(&rb_self)?;
    // SAFETY: rb_respond_to may call a user-defined respond_to?, so it is protected.
    let closable = protect(|| unsafe {
        if rb_sys::rb_respond_to(io, CLOSE.get()) != 0 {
            rb::QTRUE
        } else {
            rb::QFALSE
        }
    })? == rb::QTRUE;
    if closable {
        rb::funcall(io, CLOSE.get(), &[])?;
    }
    Ok(rb::returned(io))
}

fn finish(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    let io = end(&rb_self)?;
    Ok(rb::returned(io))
}

/// zlib.c's `gzfile_reader_end` then the forgetting of the io: the footer is checked if the member was read to
/// its end and it was not yet; the stream ends either way, but a footer error leaves the io held (and open).
fn end(this: &GzipReader) -> Result<VALUE, Error> {
    let finished = {
        let st = this.state.borrow();
        st.reader
            .as_ref()
            .is_some_and(|r| r.get().finished() && !r.get().footer_checked())
    };
    let checked = if finished {
        drive(this, QNIL, |r| r.check_footer())
    } else {
        Ok(())
    };
    source::forget_accounted(this);
    this.state.borrow_mut().reader = None;
    checked?;
    let io = this.io.get();
    this.io.set(QNIL);
    this.orig_name.set(QNIL);
    this.comment.set(QNIL);
    Ok(io)
}

fn is_closed(rb_self: This) -> bool {
    rb::is_nil(rb_self.io.get())
}

/// Private: true while the stream can still be read or ended (what `wrap`'s ensure checks).
fn is_stream_ready(rb_self: This) -> Result<bool, Error> {
    wait_idle(&rb_self)?;
    Ok(rb_self.state.borrow().reader.is_some())
}

fn unused(rb_self: This) -> Result<Value, Error> {
    wait_idle(&rb_self)?;
    let finished = match rb_self.state.borrow().reader.as_ref() {
        None => return Ok(rb::returned(QNIL)),
        Some(r) => r.get().finished(),
    };
    if !finished {
        return Ok(rb::returned(QNIL));
    }
    drive(&rb_self, QNIL, |r| r.check_footer())?;
    let st = rb_self.state.borrow();
    let unused = st.reader.as_ref().and_then(|r| r.get().unused());
    Ok(rb::returned(match unused {
        Some(bytes) => source::binary(bytes)?,
        None => QNIL,
    }))
}

/// `io.seek(-n, IO::SEEK_CUR)` back to the start of the body, then everything but the header forgotten; `sync`
/// and `lineno` too, as zlib.c's `gzfile_reset` clears them.
fn rewind(rb_self: This) -> Result<i32, Error> {
    wait_idle(&rb_self)?;
    let n = {
        let st = rb_self.state.borrow();
        st.reader
            .as_ref()
            .ok_or_else(closed_error)?
            .get()
            .rewind_distance()
    };
    source::seek_back(rb_self.io.get(), n)?;
    wait_idle(&rb_self)?;
    let mut st = rb_self.state.borrow_mut();
    st.reader
        .as_mut()
        .ok_or_else(closed_error)?
        .get_mut()
        .rewind();
    st.lineno = 0;
    st.sync = false;
    drop(st);
    transcode::reopen(&rb_self);
    Ok(0)
}

fn with_reader<T>(this: &GzipReader, f: impl FnOnce(&Reader, &State) -> T) -> Result<T, Error> {
    wait_idle(this)?;
    let st = this.state.borrow();
    let reader = st.reader.as_ref().ok_or_else(closed_error)?;
    Ok(f(reader.get(), &st))
}

fn pos(rb_self: This) -> Result<i64, Error> {
    with_reader(&rb_self, |r, _| r.pos())
}

fn crc(rb_self: This) -> Result<u32, Error> {
    with_reader(&rb_self, |r, _| r.crc())
}

fn lineno(rb_self: This) -> Result<i32, Error> {
    with_reader(&rb_self, |_, st| st.lineno)
}

fn set_lineno(rb_self: This, n: Value) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    let v = rb::num2int(n.as_raw())?;
    rb_self.state.borrow_mut().lineno = v;
    Ok(n)
}

fn sync(rb_self: This) -> Result<bool, Error> {
    with_reader(&rb_self, |_, st| st.sync)
}

fn set_sync(rb_self: This, flag: Value) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    rb_self.state.borrow_mut().sync = flag.to_bool();
    Ok(flag)
}

fn header_field<T>(
    this: &GzipReader,
    f: impl FnOnce(&thrift_native_core::gzip::inflate::GzipHeader) -> T,
) -> Result<T, Error> {
    with_reader(this, |r, _| r.header().map(f))?.ok_or_else(closed_error)
}

fn level(rb_self: This) -> Result<i32, Error> {
    header_field(&rb_self, |h| h.level)
}

fn os_code(rb_self: This) -> Result<u8, Error> {
    header_field(&rb_self, |h| h.os_code)
}

fn mtime(rb_self: This) -> Result<Value, Error> {
    let mtime = header_field(&rb_self, |h| h.mtime)?;
    // SAFETY: protect catches a NoMemoryError from allocating the Time.
    let time = protect(|| unsafe { rb_sys::rb_time_new(mtime as _, 0) })?;
    Ok(rb::returned(time))
}

fn orig_name(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    gzip_values::dup_or_nil(rb_self.orig_name.get())
}

fn comment(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    gzip_values::dup_or_nil(rb_self.comment.get())
}

fn to_io(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    Ok(rb::returned(rb_self.io.get()))
}

fn external_encoding(rb_self: This) -> Result<Value, Error> {
    check_ready(&rb_self)?;
    // SAFETY: the encoding is Ruby's; rb_enc_from_encoding answers its (permanent) Encoding object.
    Ok(rb::returned(unsafe {
        rb_sys::rb_enc_from_encoding(rb_self.enc.get().ptr())
    }))
}

/// Set by the Ruby side from its probe of Zlib::GzipReader.
fn set_version_behaviour(read_takes_outbuf: bool, eof_reads_ahead: bool) {
    READ_TAKES_OUTBUF.store(read_takes_outbuf, Ordering::Relaxed);
    EOF_READS_AHEAD.store(eof_reads_ahead, Ordering::Relaxed);
}

pub fn init(ruby: &Ruby, namespace: RModule) -> Result<(), Error> {
    // SAFETY: protect catches a LoadError from require.
    protect(|| unsafe { rb_sys::rb_require(c"zlib".as_ptr()) })?;
    let g = Globals {
        gzip_error: gzip_values::pinned_constant("Zlib::GzipFile::Error")?,
        in_progress_error: gzip_values::pinned_constant("Zlib::InProgressError")
            .or_else(|_| gzip_values::pinned_constant("Zlib::GzipFile::Error"))?,
        data_error: gzip_values::pinned_constant("Zlib::DataError")?,
        no_footer: gzip_values::pinned_constant("Zlib::GzipFile::NoFooter")?,
        crc_error: gzip_values::pinned_constant("Zlib::GzipFile::CRCError")?,
        length_error: gzip_values::pinned_constant("Zlib::GzipFile::LengthError")?,
        eof_error: gzip_values::pinned_constant("EOFError")?,
        no_method_error: gzip_values::pinned_constant("NoMethodError")?,
    };
    let _ = GLOBALS.set(g);

    let class: RClass = namespace.define_class("GzipReader", ruby.class_object())?;
    class.define_alloc_func::<GzipReader>();
    class.define_private_method("__setup", method!(setup, 2))?;
    class.define_private_method("__stream_ready?", method!(is_stream_ready, 0))?;
    class.define_singleton_method(
        "__set_version_behaviour",
        function!(set_version_behaviour, 2),
    )?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("finish", method!(finish, 0))?;
    class.define_method("closed?", method!(is_closed, 0))?;
    class.define_method("unused", method!(unused, 0))?;
    class.define_method("rewind", method!(rewind, 0))?;
    class.define_method("pos", method!(pos, 0))?;
    class.define_method("tell", method!(pos, 0))?;
    class.define_method("crc", method!(crc, 0))?;
    class.define_method("lineno", method!(lineno, 0))?;
    class.define_method("lineno=", method!(set_lineno, 1))?;
    class.define_method("sync", method!(sync, 0))?;
    class.define_method("sync=", method!(set_sync, 1))?;
    class.define_method("level", method!(level, 0))?;
    class.define_method("os_code", method!(os_code, 0))?;
    class.define_method("mtime", method!(mtime, 0))?;
    class.define_method("orig_name", method!(orig_name, 0))?;
    class.define_method("comment", method!(comment, 0))?;
    class.define_method("to_io", method!(to_io, 0))?;
    class.define_method("external_encoding", method!(external_encoding, 0))?;
    reading::define(class)?;
    lines::define(class)?;
    Ok(())
}
