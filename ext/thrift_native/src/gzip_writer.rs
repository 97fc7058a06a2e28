//! `ThriftNative::GzipWriter`: a `Zlib::GzipWriter` work-alike that deflates with flate2 (zlib-rs backend) and makes
//! no garbage per write (reference/gzip_writer.md is the contract).
//!
//! * Input is deflated straight from the caller's String while no Ruby code can run; only inputs of at least
//!   `nogvl_threshold` bytes are copied, so that the GVL can be released while they are compressed.
//! * Output goes into one reusable Rust buffer; each `io.write` gets one new, exactly sized binary String that the
//!   writer never touches again (Bug #15356). A call that produces no output creates no String.
//! * `io`, the name, the comment and the conversion encoding are marked movable and updated on compaction.
//! * Errors are Zlib's own classes with Zlib's messages.
//!
//! The Ruby side (lib/thrift_native/gzip_writer.rb) parses `new`'s arguments and options and defines `open`, `wrap`
//! and `path`; everything that touches the stream is here.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::{Compress, Compression, Crc, FlushCompress};
use magnus::gc::{Compactor, Marker};
use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue, FromRawValue};
use magnus::typed_data::Obj;
use magnus::{
    function, method, DataTypeFunctions, Error, ExceptionClass, RClass, RModule, Ruby, TypedData,
    Value,
};
use rb_sys::{ID, VALUE};
use thrift_native_core::gzip::{self, Header};

use crate::nogvl;
use crate::rb::{self, QFALSE, QNIL, QTRUE};

/// Inputs at least this long are copied and deflated with the GVL released (see bench/gzip_writer.rb for the
/// measurement behind the default). Tunable through `GzipWriter.nogvl_threshold=`.
const DEFAULT_NOGVL_THRESHOLD: usize = 256 * 1024;
static NOGVL_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_NOGVL_THRESHOLD);

/// The output buffer grows by at least this much at a time (zlib's own step is 16 KiB).
const OUT_STEP: usize = 16 * 1024;
/// After a huge write, the reusable output buffer is cut back to this capacity.
const OUT_KEEP: usize = 256 * 1024;

const Z_NO_FLUSH: i64 = 0;
const Z_SYNC_FLUSH: i64 = 2;

/// Classes, constants and method ids looked up once at load time; the classes are pinned.
struct Globals {
    gzip_error: VALUE,
    buf_error: VALUE,
    stream_error: VALUE,
    in_progress_error: VALUE,
    os_code: u8,
    id_write: ID,
    id_flush: ID,
    id_close: ID,
}

static GLOBALS: OnceLock<Globals> = OnceLock::new();

fn globals() -> &'static Globals {
    GLOBALS.get().expect("GzipWriter initialised")
}

fn raise(class: VALUE, message: &'static str) -> Error {
    // SAFETY: `class` is one of Zlib's exception classes, pinned at load time.
    let class = unsafe { Value::from_raw(class) };
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

/// A deflate call that zlib would have refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ZError {
    /// Z_BUF_ERROR: nothing to do (a repeated flush, a sync write of nothing, a second FINISH).
    Buf,
    /// Z_STREAM_ERROR: bad flush mode, or the stream was already finished.
    Stream,
}

impl ZError {
    fn into_ruby(self) -> Error {
        match self {
            ZError::Buf => raise(globals().buf_error, "buffer error"),
            ZError::Stream => raise(globals().stream_error, "stream error"),
        }
    }
}

/// The raw deflate stream (window 15, memLevel 8): flate2's `Compress` (zlib-rs backend) for the default strategy,
/// zlib-rs directly for the other four strategies, which flate2 does not expose.
enum Engine {
    Flate2(Compress),
    Strategy(Box<zlib_rs::Deflate>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Ok,
    BufError,
    StreamEnd,
}

impl Engine {
    fn new(level: i32, strategy: i32) -> Engine {
        if strategy == 0 {
            Engine::Flate2(Compress::new(
                Compression::new(gzip::effective_level(level)),
                false,
            ))
        } else {
            let strategy = zlib_rs::Strategy::try_from(strategy).unwrap_or_default();
            let config = zlib_rs::DeflateConfig {
                level,
                window_bits: -15,
                strategy,
                ..Default::default()
            };
            Engine::Strategy(Box::new(zlib_rs::Deflate::new_with_config(config)))
        }
    }

    fn total_in(&self) -> u64 {
        match self {
            Engine::Flate2(c) => c.total_in(),
            Engine::Strategy(d) => d.total_in(),
        }
    }

    /// One deflate call into the spare capacity of `out`.
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>, mode: i64) -> Result<Step, ZError> {
        match self {
            Engine::Flate2(c) => {
                let flush = match mode {
                    0 => FlushCompress::None,
                    1 => FlushCompress::Partial,
                    2 => FlushCompress::Sync,
                    3 => FlushCompress::Full,
                    4 => FlushCompress::Finish,
                    _ => return Err(ZError::Stream),
                };
                match c.compress_vec(input, out, flush) {
                    Ok(flate2::Status::Ok) => Ok(Step::Ok),
                    Ok(flate2::Status::BufError) => Ok(Step::BufError),
                    Ok(flate2::Status::StreamEnd) => Ok(Step::StreamEnd),
                    Err(_) => Err(ZError::Stream),
                }
            }
            Engine::Strategy(d) => {
                let flush = match mode {
                    0 => zlib_rs::DeflateFlush::NoFlush,
                    1 => zlib_rs::DeflateFlush::PartialFlush,
                    2 => zlib_rs::DeflateFlush::SyncFlush,
                    3 => zlib_rs::DeflateFlush::FullFlush,
                    4 => zlib_rs::DeflateFlush::Finish,
                    _ => return Err(ZError::Stream),
                };
                let before = d.total_out();
                let result = d.compress_uninit(input, out.spare_capacity_mut(), flush);
                let written = (d.total_out() - before) as usize;
                // SAFETY: deflate initialised exactly `written` bytes of the spare capacity it was given.
                unsafe { out.set_len(out.len() + written) };
                match result {
                    Ok(zlib_rs::Status::Ok) => Ok(Step::Ok),
                    Ok(zlib_rs::Status::BufError) => Ok(Step::BufError),
                    Ok(zlib_rs::Status::StreamEnd) => Ok(Step::StreamEnd),
                    Err(_) => Err(ZError::Stream),
                }
            }
        }
    }

    /// Deflates all of `input` with flush `mode`, appending to `out` (grown as needed), like zlib's `zstream_run`.
    /// A call that can make no progress at all is Z_BUF_ERROR, as Ruby raises it.
    fn run(&mut self, input: &[u8], out: &mut Vec<u8>, mode: i64) -> Result<(), ZError> {
        let mut pos = 0;
        let mut progressed = false;
        loop {
            let remaining = input.len() - pos;
            let want = remaining.saturating_add(remaining >> 3).max(OUT_STEP);
            if out.capacity() - out.len() < want.min(OUT_STEP) {
                out.reserve(want);
            }
            let in_before = self.total_in();
            let out_before = out.len();
            let step = self.step(&input[pos..], out, mode)?;
            let used = (self.total_in() - in_before) as usize;
            let produced = out.len() - out_before;
            pos += used;
            let moved = used > 0 || produced > 0;
            progressed |= moved;
            match step {
                Step::StreamEnd => return Ok(()),
                Step::BufError => return if progressed { Ok(()) } else { Err(ZError::Buf) },
                Step::Ok if pos == input.len() && out.len() < out.capacity() => return Ok(()),
                Step::Ok if !moved => return if progressed { Ok(()) } else { Err(ZError::Buf) },
                Step::Ok => {}
            }
        }
    }
}

/// Everything but the Ruby values. Never borrowed across a call into Ruby.
struct State {
    /// `None` before `initialize` and after close/finish ("closed gzip stream"), and while `busy`.
    engine: Option<Engine>,
    /// The engine is out, deflating without the GVL.
    busy: bool,
    crc: Crc,
    /// Bytes fed in so far (kept here too so `pos` answers while `busy`).
    total_in: u64,
    header_done: bool,
    /// `flush(FINISH)` ended the deflate stream (without a footer).
    finished: bool,
    /// Input that zlib refused after the FINISH (Ruby keeps it in the stream's input buffer).
    refused_input: bool,
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
            engine: None,
            busy: false,
            crc: Crc::new(),
            total_in: 0,
            header_done: false,
            finished: false,
            refused_input: false,
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
        if self.engine.is_some() || self.busy {
            Ok(())
        } else {
            Err(closed_error())
        }
    }

    fn engine(&mut self) -> Result<&mut Engine, Error> {
        match self.engine.as_mut() {
            Some(engine) => Ok(engine),
            None if self.busy => Err(in_progress_error()),
            None => Err(closed_error()),
        }
    }

    /// Hands the pending output over as a new binary String, or `None` when there is none.
    fn take_output(&mut self) -> Result<Option<VALUE>, Error> {
        if self.out.is_empty() {
            return Ok(None);
        }
        let out = &self.out;
        // SAFETY: rb_str_new copies the bytes; protect catches a NoMemoryError. No Ruby code runs in between.
        let string =
            protect(|| unsafe { rb_sys::rb_str_new(out.as_ptr() as *const _, out.len() as _) });
        self.out.clear();
        if self.out.capacity() > OUT_KEEP {
            self.out.shrink_to(OUT_KEEP);
        }
        string.map(Some)
    }
}

/// Output on its way to io.
enum Pending {
    Nothing,
    /// A new binary String for `io.write`.
    String(VALUE),
    /// The bytes, for `write_direct`.
    Bytes(Vec<u8>),
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
        for cell in self.values() {
            // SAFETY: the cell holds a live VALUE (or an immediate), kept alive by this very mark.
            marker.mark_movable(unsafe { Value::from_raw(cell.get()) });
        }
    }

    fn compact(&self, compactor: &Compactor) {
        for cell in self.values() {
            // SAFETY: as in mark; rb_gc_location answers the object's new address.
            let moved = compactor.location(unsafe { Value::from_raw(cell.get()) });
            cell.set(moved.as_raw());
        }
    }

    fn size(&self) -> usize {
        // The deflate state (window, hash chains, pending buffer) is ~270 KiB with memLevel 8.
        std::mem::size_of::<Self>()
            + self.state.try_borrow().map_or(0, |s| s.out.capacity())
            + 270 * 1024
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Calls into Ruby, all protected.

fn funcall0(recv: VALUE, id: ID) -> Result<VALUE, Error> {
    // SAFETY: protect catches whatever the method raises.
    protect(|| unsafe { rb_sys::rb_funcallv(recv, id, 0, std::ptr::null()) })
}

fn funcall1(recv: VALUE, id: ID, arg: VALUE) -> Result<VALUE, Error> {
    // SAFETY: protect catches whatever the method raises; `arg` is on this stack frame for the whole call.
    protect(|| unsafe { rb_sys::rb_funcallv(recv, id, 1, &arg) })
}

/// FMODE_SIGNAL_ON_EPIPE (internal to Ruby; ruby/io.h shows it commented out): $stdout/$stderr raise SIGPIPE.
const FMODE_SIGNAL_ON_EPIPE: i32 = 0x0002_0000;
const ECONV_DECORATORS: i32 = rb_sys::ruby_econv_flag_type::RUBY_ECONV_DECORATOR_MASK as i32
    | rb_sys::ruby_econv_flag_type::RUBY_ECONV_STATEFUL_DECORATOR_MASK as i32;

/// True when `io` is a plain IO (File, pipe, socket) whose `write` is Ruby's own IO#write (no subclass, singleton or
/// prepended override) and that converts nothing on write (no encoding, no newline decorator) nor raises SIGPIPE:
/// then IO#write would only copy the bytes into the IO, which `rb_io_bufwrite` does without any String.
fn direct_io(io: VALUE, id_write: ID) -> bool {
    if rb::builtin_type(io) != Some(rb_sys::ruby_value_type::RUBY_T_FILE) {
        return false;
    }
    let Some(klass) = rb::heap_class(io) else {
        return false;
    };
    // SAFETY: rb_method_basic_definition_p only looks the method up in the class's method tables; it cannot raise.
    if unsafe { rb_sys::rb_method_basic_definition_p(klass, id_write) } == 0 {
        return false;
    }
    // SAFETY: `io` is a T_FILE, so it is an RFile; its fptr is null only for an IO that was never initialised. The
    // fields read here are plain data.
    unsafe {
        let fptr = (*(io as *const rb_sys::RFile)).fptr;
        if fptr.is_null() || rb::truthy((*fptr).tied_io_for_writing) {
            return false;
        }
        let encs = &(*fptr).encs;
        let converts = (!encs.enc.is_null() && encs.enc != rb_sys::rb_ascii8bit_encoding())
            || ((*fptr).mode & rb_sys::FMODE_TEXTMODE as i32) != 0
            || (encs.ecflags & ECONV_DECORATORS) != 0;
        !converts && ((*fptr).mode & FMODE_SIGNAL_ON_EPIPE) == 0
    }
}

/// `io.write(bytes)` for a `direct_io`, without a String: `rb_io_bufwrite`, raising what IO#write raises (IOError for
/// a closed or read-only io, `Errno::*` with the io's path for a failed write(2)).
fn write_direct(io: VALUE, bytes: &[u8]) -> Result<(), Error> {
    // SAFETY: protect catches the exceptions; `bytes` is Rust memory owned by the caller for the whole call and not
    // shared with the writer's state, so it stays valid while the write releases the GVL.
    protect(|| unsafe {
        let n = rb_sys::rb_io_bufwrite(io, bytes.as_ptr() as *const _, bytes.len() as _);
        if n < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let fptr = (*(io as *const rb_sys::RFile)).fptr;
            rb_sys::rb_syserr_fail_str(errno, (*fptr).pathv);
        }
        QNIL
    })
    .map(|_| ())
}

fn respond_to(recv: VALUE, id: ID) -> Result<bool, Error> {
    // SAFETY: rb_respond_to may call a user-defined respond_to?, so it is protected.
    protect(|| unsafe {
        if rb_sys::rb_respond_to(recv, id) != 0 {
            QTRUE
        } else {
            QFALSE
        }
    })
    .map(|v| v == QTRUE)
}

/// `FIX2INT(v)`: Integer as is, Float truncated, TypeError/RangeError otherwise (Zlib's messages).
fn fix2int(v: VALUE) -> Result<i64, Error> {
    if let Some(n) = rb::fixnum_value(v) {
        if n >= i32::MIN as i64 && n <= i32::MAX as i64 {
            return Ok(n);
        }
    }
    let mut n = 0;
    // SAFETY: protect catches the TypeError/RangeError.
    protect(|| unsafe {
        n = rb_sys::rb_fix2int(v) as i64;
        QNIL
    })?;
    Ok(n)
}

fn rb_value(v: VALUE) -> Value {
    // SAFETY: every VALUE handed here is live: on the stack of a method call, or held (and marked) by a writer.
    unsafe { Value::from_raw(v) }
}

fn now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

// ---------------------------------------------------------------------------------------------------------------
// The stream.

impl GzipWriter {
    fn header_into(&self, st: &mut State) {
        if st.header_done {
            return;
        }
        if !st.mtime_set {
            st.mtime = now();
        }
        let (name, comment) = (self.orig_name.get(), self.comment.get());
        // SAFETY: name and comment are nil or Strings owned (and marked) by this writer; the slices die at the end
        // of this block, before anything can run Ruby code.
        let field = |v: VALUE| (!rb::is_nil(v)).then(|| unsafe { rb::str_bytes(v) });
        let header = Header {
            mtime: st.mtime,
            level: st.level,
            orig_name: field(name),
            comment: field(comment),
            os_code: globals().os_code,
        };
        header.write_to(&mut st.out);
        st.header_done = true;
    }

    /// Waits (GVL released) while another thread deflates a large input through this writer.
    fn wait_idle(&self) -> Result<(), Error> {
        while self.state.borrow().busy {
            let m = self.lock.get();
            // SAFETY: `m` is this writer's Mutex (made before `busy` was set); protect catches an interrupt raised
            // while waiting, and the unlock cannot fail once the lock is ours.
            protect(|| unsafe {
                rb_sys::rb_mutex_lock(m);
                rb_sys::rb_mutex_unlock(m)
            })?;
        }
        Ok(())
    }

    fn lock(&self) -> Result<VALUE, Error> {
        if rb::is_nil(self.lock.get()) {
            // SAFETY: rb_mutex_new only allocates; protect catches a NoMemoryError.
            let m = protect(|| unsafe { rb_sys::rb_mutex_new() })?;
            self.lock.set(m);
        }
        Ok(self.lock.get())
    }

    /// Zlib's `gzfile_write`: header if missing, deflate (sync flush in sync mode), one io.write of all the output.
    fn write_input(&self, input: Input) -> Result<(), Error> {
        self.wait_idle()?;
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            st.engine()?;
            self.header_into(&mut st);
            let len = match input {
                // SAFETY: `s` is a String on the caller's stack.
                Input::Ruby(s) => unsafe { rb::str_len(s) },
                Input::Bytes(b) => b.len(),
            };
            if len > 0 || st.sync {
                let mode = if st.sync { Z_SYNC_FLUSH } else { Z_NO_FLUSH };
                match input {
                    Input::Ruby(s)
                        if len >= NOGVL_THRESHOLD.load(Ordering::Relaxed) && !st.finished =>
                    {
                        // SAFETY: as above; the copy is made before the GVL is released.
                        let copy = unsafe { rb::str_bytes(s) }.to_vec();
                        drop(st);
                        return self.write_without_gvl(copy, mode);
                    }
                    Input::Ruby(s) => {
                        // SAFETY: `s` is a String kept alive by the caller; the slice is used only by the CRC and
                        // deflate below, which run no Ruby code, allocate no Ruby object and cannot raise.
                        let bytes = unsafe { rb::str_bytes(s) };
                        deflate(&mut st, bytes, mode)?;
                    }
                    Input::Bytes(bytes) => deflate(&mut st, bytes, mode)?,
                }
            }
            (self.take_pending(&mut st)?, st.sync)
        };
        self.emit(pending, sync)
    }

    fn write_without_gvl(&self, input: Vec<u8>, mode: i64) -> Result<(), Error> {
        let m = self.lock()?;
        // SAFETY: the Mutex is unlocked (the writer was idle and no Ruby code ran since), so this cannot block;
        // protect catches anything raised anyway.
        protect(|| unsafe { rb_sys::rb_mutex_lock(m) })?;
        let (mut engine, mut out, mut crc) = {
            let mut st = self.state.borrow_mut();
            let engine = st.engine.take().ok_or_else(closed_error)?;
            st.busy = true;
            (
                engine,
                std::mem::take(&mut st.out),
                std::mem::replace(&mut st.crc, Crc::new()),
            )
        };
        let outcome = nogvl::without_gvl(|| {
            crc.update(&input);
            engine.run(&input, &mut out, mode)
        });
        {
            let mut st = self.state.borrow_mut();
            st.busy = false;
            st.total_in = engine.total_in();
            st.engine = Some(engine);
            st.out = out;
            st.crc = crc;
        }
        // SAFETY: this thread locked the Mutex above, so unlocking cannot raise; protect is belt and braces.
        protect(|| unsafe { rb_sys::rb_mutex_unlock(m) })?;
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            match outcome.result {
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(z))) => return Err(z.into_ruby()),
                Some(Err(_panic)) => {
                    st.engine = None;
                    return Err(raise(globals().stream_error, "stream error"));
                }
                None => {}
            }
            if let Some(e) = outcome.raised {
                return Err(e);
            }
            (self.take_pending(&mut st)?, st.sync)
        };
        self.emit(pending, sync)
    }

    /// The pending output, ready for `emit`: the bytes themselves when io is a plain IO (see `direct_io`), else a
    /// new String.
    fn take_pending(&self, st: &mut State) -> Result<Pending, Error> {
        if st.out.is_empty() {
            Ok(Pending::Nothing)
        } else if direct_io(self.io.get(), globals().id_write) {
            Ok(Pending::Bytes(std::mem::take(&mut st.out)))
        } else {
            Ok(st.take_output()?.map_or(Pending::Nothing, Pending::String))
        }
    }

    /// `gzfile_write_raw`: one io.write of the pending output, then io.flush in sync mode.
    fn emit(&self, pending: Pending, sync: bool) -> Result<(), Error> {
        let io = self.io.get();
        let g = globals();
        match pending {
            Pending::Nothing => return Ok(()),
            Pending::String(string) => {
                funcall1(io, g.id_write, string)?;
            }
            Pending::Bytes(mut bytes) => {
                let written = write_direct(io, &bytes);
                // Give the buffer back for reuse, unless another thread started a new one meanwhile (the GVL may
                // have been released inside the write).
                bytes.clear();
                if bytes.capacity() > OUT_KEEP {
                    bytes.shrink_to(OUT_KEEP);
                }
                if let Ok(mut st) = self.state.try_borrow_mut() {
                    if st.out.capacity() == 0 {
                        st.out = bytes;
                    }
                }
                written?;
            }
        }
        if sync && respond_to(io, g.id_flush)? {
            funcall0(io, g.id_flush)?;
        }
        Ok(())
    }

    /// close/finish: header if missing, FINISH, footer, one io.write. The stream ends whatever happens.
    fn end(&self) -> Result<VALUE, Error> {
        self.wait_idle()?;
        let io = self.io.get();
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            st.engine()?;
            self.header_into(&mut st);
            let result = run(&mut st, &[], 4);
            st.engine = None;
            let total_in = st.total_in;
            if let Err(z) = result {
                st.out.clear();
                return Err(z.into_ruby());
            }
            let footer = gzip::footer(st.crc.sum(), total_in);
            st.out.extend_from_slice(&footer);
            (self.take_pending(&mut st)?, st.sync)
        };
        self.emit(pending, sync)?;
        self.io.set(QNIL);
        self.orig_name.set(QNIL);
        self.comment.set(QNIL);
        Ok(io)
    }
}

fn deflate(st: &mut State, bytes: &[u8], mode: i64) -> Result<(), Error> {
    st.crc.update(bytes);
    run(st, bytes, mode).map_err(ZError::into_ruby)
}

/// `Engine::run` on the state's engine, with zlib's answers once the stream was finished by `flush(FINISH)`.
fn run(st: &mut State, bytes: &[u8], mode: i64) -> Result<(), ZError> {
    if st.finished {
        // zlib after Z_FINISH: any other flush is Z_STREAM_ERROR (Ruby keeps the refused input), a further FINISH
        // is Z_STREAM_END with nothing to add, or Z_BUF_ERROR if refused input is still waiting.
        if mode != 4 {
            st.refused_input |= !bytes.is_empty();
            return Err(ZError::Stream);
        }
        return if st.refused_input || !bytes.is_empty() {
            Err(ZError::Buf)
        } else {
            Ok(())
        };
    }
    let State { engine, out, .. } = st;
    let engine = engine.as_mut().ok_or(ZError::Stream)?;
    let result = engine.run(bytes, out, mode);
    st.total_in = engine.total_in();
    if result.is_ok() && mode == 4 {
        st.finished = true;
    }
    result
}

// ---------------------------------------------------------------------------------------------------------------
// Methods.

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
        fix2int(level.as_raw())?
    };
    let strategy = if strategy.is_nil() {
        0
    } else {
        fix2int(strategy.as_raw())?
    };
    if !gzip::valid_level(level) || !gzip::valid_strategy(strategy) {
        return Err(ZError::Stream.into_ruby());
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
        engine: Some(Engine::new(level as i32, strategy as i32)),
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
    let raw = ch.as_raw();
    // NUM2CHR: a String's first byte, else NUM2INT & 0xff.
    // SAFETY: `raw` is a String when is_string says so, and a non-empty one has a first byte.
    let byte = if rb::is_string(raw) && unsafe { rb::str_len(raw) } >= 1 {
        unsafe { rb::str_bytes(raw)[0] }
    } else {
        let mut n = 0;
        // SAFETY: protect catches the TypeError for nil or "".
        protect(|| unsafe {
            n = rb_sys::rb_num2int(raw);
            QNIL
        })?;
        (n & 0xff) as u8
    };
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
    Ok(rb_value(r))
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
    Ok(rb_value(r))
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
        Some(v) if !v.is_nil() => fix2int(v.as_raw())?,
        _ => Z_SYNC_FLUSH,
    };
    rb_self.wait_idle()?;
    let (pending, sync) = {
        let mut st = rb_self.state.borrow_mut();
        st.engine()?;
        if mode != Z_NO_FLUSH {
            // Deliberate fix of an upstream bug: the header goes first, so a flush before the first write cannot
            // produce a stream that readers reject.
            rb_self.header_into(&mut st);
            run(&mut st, &[], mode).map_err(ZError::into_ruby)?;
        }
        (rb_self.take_pending(&mut st)?, st.sync)
    };
    rb_self.emit(pending, sync)?;
    let io = rb_self.io.get();
    if respond_to(io, globals().id_flush)? {
        funcall0(io, globals().id_flush)?;
    }
    Ok(rb_self.as_value())
}

fn close(rb_self: This) -> Result<Value, Error> {
    {
        let st = rb_self.state.borrow();
        if st.engine.is_none() && !st.busy {
            return Ok(Ruby::get_with(rb_self).qnil().as_value());
        }
    }
    let io = rb_self.end()?;
    if respond_to(io, globals().id_close)? {
        funcall0(io, globals().id_close)?;
    }
    Ok(rb_value(io))
}

fn finish(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    rb_self.end().map(rb_value)
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
    Ok(rb_value(rb_self.io.get()))
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
    Ok(st.crc.sum())
}

fn mtime(rb_self: This) -> Result<Value, Error> {
    let mtime = {
        let st = rb_self.state.borrow();
        st.check_ready()?;
        st.mtime
    };
    // SAFETY: protect catches a NoMemoryError from allocating the Time.
    protect(|| unsafe { rb_sys::rb_time_new(mtime as _, 0) }).map(rb_value)
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

fn dup_or_nil(v: VALUE) -> Result<Value, Error> {
    if rb::is_nil(v) {
        return Ok(rb_value(QNIL));
    }
    // SAFETY: `v` is a String held by the writer; rb_str_dup only allocates.
    protect(|| unsafe { rb_sys::rb_str_dup(v) }).map(rb_value)
}

fn orig_name(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    dup_or_nil(rb_self.orig_name.get())
}

fn comment(rb_self: This) -> Result<Value, Error> {
    rb_self.state.borrow().check_ready()?;
    dup_or_nil(rb_self.comment.get())
}

fn nogvl_threshold() -> usize {
    NOGVL_THRESHOLD.load(Ordering::Relaxed)
}

fn set_nogvl_threshold(bytes: usize) -> usize {
    NOGVL_THRESHOLD.store(bytes, Ordering::Relaxed);
    bytes
}

fn lookup(ruby: &Ruby, path: &str) -> Result<Value, Error> {
    let mut v: Value = ruby.class_object().as_value();
    for name in path.split("::") {
        v = v.funcall("const_get", (ruby.str_new(name),))?;
    }
    rb::pin_forever(v.as_raw());
    Ok(v)
}

pub fn init(ruby: &Ruby, namespace: RModule) -> Result<(), Error> {
    // SAFETY: protect catches a LoadError from require.
    protect(|| unsafe { rb_sys::rb_require(c"zlib".as_ptr()) })?;
    let zlib_os_code = lookup(ruby, "Zlib::OS_CODE")
        .and_then(u8::try_convert)
        .unwrap_or(3);
    let g = Globals {
        gzip_error: lookup(ruby, "Zlib::GzipFile::Error")?.as_raw(),
        buf_error: lookup(ruby, "Zlib::BufError")?.as_raw(),
        stream_error: lookup(ruby, "Zlib::StreamError")?.as_raw(),
        in_progress_error: lookup(ruby, "Zlib::InProgressError")?.as_raw(),
        os_code: zlib_os_code,
        id_write: rb::intern("write"),
        id_flush: rb::intern("flush"),
        id_close: rb::intern("close"),
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
