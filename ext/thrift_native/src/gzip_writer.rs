//! `ThriftNative::GzipWriter`: a `Zlib::GzipWriter` work-alike that deflates with the core's gzip engine (flate2 on
//! zlib-rs) and makes no garbage per write. This file is the Ruby class; `gzip_writer/sink.rs` is where the output
//! goes.
//!
//! * Input is deflated straight from the caller's String while no Ruby code can run; only inputs of at least
//!   `nogvl_threshold` bytes are copied, so that the GVL can be released while they are compressed.
//! * Output goes into one reusable Rust buffer; each `io.write` gets one new, exactly sized binary String that the
//!   writer never touches again (Bug #15356). A call that produces no output creates no String.
//! * `io`, the name, the comment and the conversion encoding are marked movable and updated on compaction.
//! * Errors are Zlib's own classes with Zlib's messages.
//! * The deflate state's memory is reported to Ruby's GC while the stream lives.
//!
//! The Ruby side (lib/thrift_native/gzip_writer.rb) parses `new`'s arguments and options and defines `open`, `wrap`
//! and `path`; everything that touches the stream is here.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

mod sink;
mod stream;

use magnus::gc::{Compactor, Marker};
use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::typed_data::Obj;
use magnus::{
    function, method, DataTypeFunctions, Error, ExceptionClass, RClass, RModule, Ruby, TypedData,
    Value,
};
use rb_sys::tracking_allocator::ManuallyTracked;
use rb_sys::VALUE;
use thrift_native_core::gzip;
use thrift_native_core::gzip::deflate::{self, Deflate, ZError, Z_NO_FLUSH, Z_SYNC_FLUSH};

use crate::ruby::gzip_values;
use crate::ruby::held;
use crate::ruby::names::{CLOSE, FLUSH};
use crate::ruby::rb::{self, QNIL};

/// Inputs at least this long are copied and deflated with the GVL released (see bench/gzip_writer.rb for the
/// measurement behind the default). Tunable through `GzipWriter.nogvl_threshold=`.
const DEFAULT_NOGVL_THRESHOLD: usize = 256 * 1024;
static NOGVL_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_NOGVL_THRESHOLD);

/// Classes and constants looked up once at load time; the classes are pinned.
struct Globals {
    gzip_error: VALUE,
    buf_error: VALUE,
    stream_error: VALUE,
    in_progress_error: VALUE,
    os_code: u8,
}

static GLOBALS: OnceLock<Globals> = OnceLock::new();

fn globals() -> &'static Globals {
    GLOBALS.get().expect("GzipWriter initialised")
}

fn raise(class: VALUE, message: &'static str) -> Error {
    // SAFETY: `class` is one of Zlib's exception classes, pinned at load time.
    let class = unsafe { rb::value(class) };
    match ExceptionClass::from_value(class) {
        Some(class) => Error::new(class, message),
        None => Error::new(
            Ruby::get().expect("Ruby thread").exception_runtime_error(),
            message,
        ),
    }
}

fn closed_error() -> Error {
    raise(globals().gzip_error, "closed gzip stream")
}

fn header_written_error() -> Error {
    raise(globals().gzip_error, "header is already written")
}

fn in_progress_error() -> Error {
    raise(globals().in_progress_error, "zlib stream is in progress")
}

/// Zlib's exception for a call zlib refused.
fn zlib_error(e: ZError) -> Error {
    match e {
        ZError::Buf => raise(globals().buf_error, "buffer error"),
        ZError::Stream => raise(globals().stream_error, "stream error"),
    }
}

/// The deflate stream, its memory reported to Ruby's GC (as malloc pressure) while it lives.
type Stream = ManuallyTracked<Deflate>;

/// Everything but the Ruby values. Never borrowed across a call into Ruby.
struct State {
    /// `None` before `initialize` and after close/finish ("closed gzip stream"), and while `busy`.
    stream: Option<Stream>,
    /// The stream is out, deflating without the GVL.
    busy: bool,
    /// The stream's input count and CRC, kept here too so that `pos` and `crc` answer while `busy`.
    total_in: u64,
    crc: u32,
    header_done: bool,
    mtime: u32,
    mtime_set: bool,
    level: i32,
    sync: bool,
    /// Pending output; becomes one Ruby String per io.write.
    out: Vec<u8>,
}

impl Default for State {
    fn default() -> Self {
        State {
            stream: None,
            busy: false,
            total_in: 0,
            crc: 0,
            header_done: false,
            mtime: 0,
            mtime_set: false,
            level: -1,
            sync: false,
            out: Vec::new(),
        }
    }
}

impl State {
    fn check_ready(&self) -> Result<(), Error> {
        if self.stream.is_some() || self.busy {
            Ok(())
        } else {
            Err(closed_error())
        }
    }

    fn stream(&mut self) -> Result<&mut Deflate, Error> {
        match self.stream.as_mut() {
            Some(stream) => Ok(stream.get_mut()),
            None if self.busy => Err(in_progress_error()),
            None => Err(closed_error()),
        }
    }

    /// Feeds `bytes` with flush `mode` into the pending output.
    fn deflate(&mut self, bytes: &[u8], mode: i32) -> Result<(), Error> {
        let State { stream, out, .. } = self;
        let stream = stream.as_mut().ok_or_else(closed_error)?.get_mut();
        let result = stream.write(bytes, mode, out);
        self.total_in = stream.total_in();
        self.crc = stream.crc();
        result.map_err(zlib_error)
    }
}

/// Where the bytes of one `gzfile_write` come from.
enum Input<'a> {
    /// A Ruby String (the slice is taken only while no Ruby code runs).
    Ruby(VALUE),
    Bytes(&'a [u8]),
}

#[derive(TypedData)]
#[magnus(class = "ThriftNative::GzipWriter", mark, compact, size)]
pub struct GzipWriter {
    /// The io (nil before initialize and after close/finish). Ruby values live in Cells, never in the RefCell, so
    /// that mark and compaction never need a borrow.
    io: Cell<VALUE>,
    /// nil or a String (dup, truncated at the first NUL).
    orig_name: Cell<VALUE>,
    comment: Cell<VALUE>,
    /// nil, or the Encoding every written String is converted to (IO-style `encoding: "ext:int"` option).
    convert_to: Cell<VALUE>,
    /// nil, or a Mutex held while a large input is deflated without the GVL: another thread that writes, flushes or
    /// closes meanwhile waits on it, as Zlib's own per-stream mutex makes it wait. Made on first use.
    lock: Cell<VALUE>,
    state: RefCell<State>,
}

impl Default for GzipWriter {
    fn default() -> Self {
        GzipWriter {
            io: Cell::new(QNIL),
            orig_name: Cell::new(QNIL),
            comment: Cell::new(QNIL),
            convert_to: Cell::new(QNIL),
            lock: Cell::new(QNIL),
            state: RefCell::new(State::default()),
        }
    }
}

impl GzipWriter {
    fn values(&self) -> [&Cell<VALUE>; 5] {
        [
            &self.io,
            &self.orig_name,
            &self.comment,
            &self.convert_to,
            &self.lock,
        ]
    }
}

impl DataTypeFunctions for GzipWriter {
    fn mark(&self, marker: &Marker) {
        held::mark(&self.values(), marker);
    }

    fn compact(&self, compactor: &Compactor) {
        held::compact(&self.values(), compactor);
    }

    fn size(&self) -> usize {
        let native = self.state.try_borrow().map_or(0, |s| {
            let stream = s.stream.is_some() || s.busy;
            s.out.capacity() + if stream { deflate::STATE_BYTES } else { 0 }
        });
        std::mem::size_of::<Self>() + native
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Methods (the stream's operations are in `gzip_writer/stream.rs`).

type This = Obj<GzipWriter>;

/// `__setup(io, level, strategy, convert_to)`: the native half of `initialize` (the Ruby half parses options).
fn setup(
    rb_self: This,
    io: Value,
    level: Value,
    strategy: Value,
    convert_to: Value,
) -> Result<Value, Error> {
    let level = if level.is_nil() {
        -1
    } else {
        i64::from(rb::num2int(level.as_raw())?)
    };
    let strategy = if strategy.is_nil() {
        0
    } else {
        i64::from(rb::num2int(strategy.as_raw())?)
    };
    if !gzip::valid_level(level) || !gzip::valid_strategy(strategy) {
        return Err(zlib_error(ZError::Stream));
    }
    let mut st = rb_self
        .state
        .try_borrow_mut()
        .map_err(|_| in_progress_error())?;
    if st.busy {
        return Err(in_progress_error());
    }
    *st = State {
        level: level as i32,
        stream: Some(ManuallyTracked::wrap(
            Deflate::new(level as i32, strategy as i32),
            deflate::STATE_BYTES,
        )),
        ..State::default()
    };
    drop(st);
    rb_self.io.set(io.as_raw());
    rb_self.orig_name.set(QNIL);
    rb_self.comment.set(QNIL);
    rb_self.convert_to.set(convert_to.as_raw());
    Ok(rb_self.as_value())
}

/// The String `write` feeds for one argument: `to_s` for non-Strings, then the optional encoding conversion.
fn as_written_string(this: &GzipWriter, arg: VALUE) -> Result<VALUE, Error> {
    let mut s = arg;
    if !rb::is_string(s) {
        // SAFETY: protect catches whatever to_s raises.
        s = protect(|| unsafe { rb_sys::rb_obj_as_string(arg) })?;
    }
    let target = this.convert_to.get();
    if !rb::is_nil(target) {
        // SAFETY: `target` is an Encoding (checked in Ruby); protect catches conversion failures, which
        // rb_str_conv_enc reports by returning the String unconverted anyway.
        s = protect(|| unsafe {
            let to = rb_sys::rb_to_encoding(target);
            rb_sys::rb_str_conv_enc(s, rb_sys::rb_enc_get(s), to)
        })?;
    }
    Ok(s)
}

fn write(rb_self: This, args: &[Value]) -> Result<usize, Error> {
    rb_self.state.borrow().check_ready()?;
    let mut total = 0;
    for arg in args {
        let s = as_written_string(&rb_self, arg.as_raw())?;
        rb_self.write_input(Input::Ruby(s))?;
        // SAFETY: `s` is a String (to_s result or the argument) still on this frame.
        total += unsafe { rb::str_len(s) };
    }
    Ok(total)
}

fn putc(rb_self: This, ch: Value) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    let byte = gzip_values::num2chr(ch.as_raw())?;
    rb_self.write_input(Input::Bytes(&[byte]))?;
    Ok(ch)
}

fn io_method(
    rb_self: This,
    args: &[Value],
    f: unsafe extern "C" fn(std::os::raw::c_int, *const VALUE, VALUE) -> VALUE,
) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    let recv = rb_self.as_raw();
    // SAFETY: Value is a transparent VALUE, so the slice is a C array of `args.len()` VALUEs, alive for the call;
    // protect catches whatever the dispatched `write` raises.
    let r = protect(|| unsafe { f(args.len() as _, args.as_ptr() as *const VALUE, recv) })?;
    // SAFETY: the method's result, held on this stack.
    Ok(unsafe { rb::value(r) })
}

/// `IO#print` semantics (`$,`, `$\`, `$_`), every piece through `self.write`.
fn print(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    io_method(rb_self, args, rb_sys::rb_io_print)
}

/// `IO#puts` semantics (arrays flattened, `write(line, "\n")`), through `self.write`.
fn puts(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    io_method(rb_self, args, rb_sys::rb_io_puts)
}

fn printf(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    io_method(rb_self, args, rb_sys::rb_io_printf)
}

/// `IO#<<`: `self.write(obj)`, returns self.
fn addstr(rb_self: This, obj: Value) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    let recv = rb_self.as_raw();
    // SAFETY: protect catches whatever the dispatched `write` raises.
    let r = protect(|| unsafe { rb_sys::rb_io_addstr(recv, obj.as_raw()) })?;
    // SAFETY: the method's result, held on this stack.
    Ok(unsafe { rb::value(r) })
}

fn flush(rb_self: This, args: &[Value]) -> Result<Value, Error> {
    if args.len() > 1 {
        let msg = format!(
            "wrong number of arguments (given {}, expected 0..1)",
            args.len()
        );
        return Err(Error::new(
            Ruby::get_with(rb_self).exception_arg_error(),
            msg,
        ));
    }
    rb_self.state.borrow().check_ready()?;
    let mode = match args.first() {
        Some(v) if !v.is_nil() => rb::num2int(v.as_raw())?,
        _ => Z_SYNC_FLUSH,
    };
    rb_self.wait_idle()?;
    let (pending, sync) = {
        let mut st = rb_self.state.borrow_mut();
        st.stream()?;
        if mode != Z_NO_FLUSH {
            // Deliberate fix of an upstream bug: the header goes first, so a flush before the first write cannot
            // produce a stream that readers reject.
            rb_self.header_into(&mut st);
            st.deflate(&[], mode)?;
        }
        (sink::take(&mut st.out, rb_self.io.get())?, st.sync)
    };
    rb_self.emit(pending, sync)?;
    let io = rb_self.io.get();
    sink::call_if_defined(io, &FLUSH)?;
    Ok(rb_self.as_value())
}

fn close(rb_self: This) -> Result<Value, Error> {
    {
        let st = rb_self.state.borrow();
        if st.stream.is_none() && !st.busy {
            return Ok(Ruby::get_with(rb_self).qnil().as_value());
        }
    }
    let io = rb_self.end()?;
    sink::call_if_defined(io, &CLOSE)?;
    // SAFETY: the io the writer held, on this stack now.
    Ok(unsafe { rb::value(io) })
}

fn finish(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    let io = rb_self.end()?;
    // SAFETY: the io the writer held, on this stack now.
    Ok(unsafe { rb::value(io) })
}

fn is_closed(rb_self: This) -> bool {
    rb::is_nil(rb_self.io.get())
}

/// Private: true while the stream can still be written or ended (what `wrap`'s ensure checks).
fn is_stream_ready(rb_self: This) -> bool {
    rb_self.state.borrow().check_ready().is_ok()
}

fn to_io(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    // SAFETY: the io, held (and marked) by the writer.
    Ok(unsafe { rb::value(rb_self.io.get()) })
}

fn sync(rb_self: This) -> Result<bool, Error> {
    let st = rb_self.state.borrow();
    st.check_ready()?;
    Ok(st.sync)
}

fn set_sync(rb_self: This, flag: Value) -> Result<Value, Error> {
    let mut st = rb_self.state.borrow_mut();
    st.check_ready()?;
    st.sync = flag.to_bool();
    Ok(flag)
}

fn level(rb_self: This) -> Result<i32, Error> {
    let st = rb_self.state.borrow();
    st.check_ready()?;
    Ok(st.level)
}

fn os_code(rb_self: This) -> Result<u8, Error> {
    rb_self.state.borrow().check_ready()?;
    Ok(globals().os_code)
}

fn pos(rb_self: This) -> Result<u64, Error> {
    let st = rb_self.state.borrow();
    st.check_ready()?;
    Ok(st.total_in)
}

fn crc(rb_self: This) -> Result<u32, Error> {
    let st = rb_self.state.borrow();
    st.check_ready()?;
    Ok(st.crc)
}

fn mtime(rb_self: This) -> Result<Value, Error> {
    let mtime = {
        let st = rb_self.state.borrow();
        st.check_ready()?;
        st.mtime
    };
    // SAFETY: protect catches a NoMemoryError from allocating the Time.
    let time = protect(|| unsafe { rb_sys::rb_time_new(mtime as _, 0) })?;
    // SAFETY: a Time just made, held on this stack.
    Ok(unsafe { rb::value(time) })
}

fn header_settable(rb_self: &GzipWriter) -> Result<(), Error> {
    let st = rb_self.state.borrow();
    st.check_ready()?;
    if st.header_done {
        return Err(header_written_error());
    }
    Ok(())
}

fn set_mtime(rb_self: This, t: Value) -> Result<Value, Error> {
    header_settable(&rb_self)?;
    let mut v: u64 = 0;
    // SAFETY: protect catches the TypeError/ArgumentError of Integer() and the RangeError of NUM2UINT.
    protect(|| unsafe {
        let int = rb_sys::rb_Integer(t.as_raw());
        v = rb_sys::rb_num2uint(int) as u64;
        QNIL
    })?;
    let mut st = rb_self.state.borrow_mut();
    st.mtime = v as u32;
    st.mtime_set = true;
    Ok(t)
}

/// `orig_name=`/`comment=`: a dup of `to_str`, truncated at the first NUL.
fn header_string(s: Value) -> Result<VALUE, Error> {
    // SAFETY: protect catches the TypeError of a value without to_str; rb_str_dup/rb_str_resize only allocate.
    protect(|| unsafe {
        let dup = rb_sys::rb_str_dup(rb_sys::rb_str_to_str(s.as_raw()));
        let keep = thrift_native_core::gzip::truncate_at_nul(rb::str_bytes(dup)).len();
        if keep < rb::str_len(dup) {
            rb_sys::rb_str_resize(dup, keep as _);
        }
        dup
    })
}

fn set_orig_name(rb_self: This, s: Value) -> Result<Value, Error> {
    header_settable(&rb_self)?;
    rb_self.orig_name.set(header_string(s)?);
    Ok(s)
}

fn set_comment(rb_self: This, s: Value) -> Result<Value, Error> {
    header_settable(&rb_self)?;
    rb_self.comment.set(header_string(s)?);
    Ok(s)
}

fn orig_name(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    gzip_values::dup_or_nil(rb_self.orig_name.get())
}

fn comment(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    gzip_values::dup_or_nil(rb_self.comment.get())
}

fn nogvl_threshold() -> usize {
    NOGVL_THRESHOLD.load(Ordering::Relaxed)
}

fn set_nogvl_threshold(bytes: usize) -> usize {
    NOGVL_THRESHOLD.store(bytes, Ordering::Relaxed);
    bytes
}

pub fn init(ruby: &Ruby, namespace: RModule) -> Result<(), Error> {
    // SAFETY: protect catches a LoadError from require.
    protect(|| unsafe { rb_sys::rb_require(c"zlib".as_ptr()) })?;
    let zlib_os_code = gzip_values::pinned_constant("Zlib::OS_CODE")
        .ok()
        .and_then(rb::fixnum_value)
        .map_or(3, |code| code as u8);
    let g = Globals {
        gzip_error: gzip_values::pinned_constant("Zlib::GzipFile::Error")?,
        buf_error: gzip_values::pinned_constant("Zlib::BufError")?,
        stream_error: gzip_values::pinned_constant("Zlib::StreamError")?,
        in_progress_error: gzip_values::pinned_constant("Zlib::InProgressError")?,
        os_code: zlib_os_code,
    };
    let _ = GLOBALS.set(g);

    let class: RClass = namespace.define_class("GzipWriter", ruby.class_object())?;
    class.define_alloc_func::<GzipWriter>();
    class.define_private_method("__setup", method!(setup, 4))?;
    class.define_private_method("__stream_ready?", method!(is_stream_ready, 0))?;
    class.define_method("write", method!(write, -1))?;
    class.define_method("putc", method!(putc, 1))?;
    class.define_method("print", method!(print, -1))?;
    class.define_method("puts", method!(puts, -1))?;
    class.define_method("printf", method!(printf, -1))?;
    class.define_method("<<", method!(addstr, 1))?;
    class.define_method("flush", method!(flush, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("finish", method!(finish, 0))?;
    class.define_method("closed?", method!(is_closed, 0))?;
    class.define_method("to_io", method!(to_io, 0))?;
    class.define_method("sync", method!(sync, 0))?;
    class.define_method("sync=", method!(set_sync, 1))?;
    class.define_method("level", method!(level, 0))?;
    class.define_method("os_code", method!(os_code, 0))?;
    class.define_method("pos", method!(pos, 0))?;
    class.define_method("tell", method!(pos, 0))?;
    class.define_method("crc", method!(crc, 0))?;
    class.define_method("mtime", method!(mtime, 0))?;
    class.define_method("mtime=", method!(set_mtime, 1))?;
    class.define_method("orig_name", method!(orig_name, 0))?;
    class.define_method("orig_name=", method!(set_orig_name, 1))?;
    class.define_method("comment", method!(comment, 0))?;
    class.define_method("comment=", method!(set_comment, 1))?;
    class.define_singleton_method("nogvl_threshold", function!(nogvl_threshold, 0))?;
    class.define_singleton_method("nogvl_threshold=", function!(set_nogvl_threshold, 1))?;
    Ok(())
}
