//! Where a GzipReader's compressed bytes come from, and Zlib's exceptions for what the core reader refuses.
//!
//! The io is read as zlib.c reads it: `io.readpartial(2048[, outbuf])`, falling back to `io.read(2048[, outbuf])`
//! on a NoMethodError, EOFError or nil meaning the end. zlib.c passes no buffer unless the caller gave one (a new
//! String per chunk); for a plain IO or a StringIO this reader passes its own reused String instead, which they fill
//! in place, so that no chunk makes garbage. Another io gets zlib.c's exact call (its `readpartial` may take one
//! argument).

use magnus::rb_sys::{protect, AsRawValue};
use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::gzip::inflate::FooterError;
use thrift_native_core::gzip::reader::{Progress, ReadError, Reader};

use super::{globals, GzipReader, IVAR_INPUT, SEEK, STRING_IO};
use crate::ruby::names::{READ, READPARTIAL};
use crate::ruby::nogvl;
use crate::ruby::rb::{self, QNIL};

/// zlib.c's `GZFILE_READ_SIZE`: every read of the io asks for this many bytes.
pub const CHUNK: usize = 2048;

/// An exception of `class` as zlib.c's `rb_raise` makes one: the message through `rb_sprintf` (so that it has the
/// encoding Ruby gives such messages), and, for the errors zlib.c raises with unread input, that input as `@input`.
fn exception(class: VALUE, message: &str, input: Option<&[u8]>) -> Error {
    let text = std::ffi::CString::new(message).unwrap_or_default();
    // SAFETY: protected (allocation, and a class whose `exception`/`initialize` could raise); the format and its
    // argument are NUL-terminated C strings that outlive the call.
    let made = protect(|| unsafe {
        let msg = rb_sys::rb_sprintf(c"%s".as_ptr(), text.as_ptr());
        rb_sys::rb_exc_new_str(class, msg)
    });
    let e = match made {
        Ok(e) => e,
        Err(error) => return error,
    };
    if let Some(input) = input {
        if let Err(error) = rb::ivar_set(e, IVAR_INPUT.get(), rb::binary_string(input)) {
            return error;
        }
    }
    // SAFETY: an exception object just made, on this stack.
    match magnus::Exception::from_value(unsafe { rb::value(e) }) {
        Some(e) => Error::from(e),
        None => Error::new(
            Ruby::get().expect("Ruby thread").exception_runtime_error(),
            message.to_owned(),
        ),
    }
}

/// `rb_raise(class, message)`.
pub fn raise(class: VALUE, message: &str) -> Error {
    exception(class, message, None)
}

pub fn closed_error() -> Error {
    exception(globals().gzip_error, "closed gzip stream", None)
}

/// Zlib's exception for what the core reader refused.
pub fn read_error(e: ReadError) -> Error {
    let g = globals();
    match e {
        ReadError::Header { error, input } => {
            exception(g.gzip_error, &error.message(), input.as_deref())
        }
        ReadError::UnexpectedEof => exception(g.gzip_error, "unexpected end of file", None),
        ReadError::Data(message) => exception(g.data_error, &message, None),
        ReadError::NoFooter(input) => {
            exception(g.no_footer, "footer is not found", input.as_deref())
        }
        ReadError::Footer(FooterError::Crc) => {
            exception(g.crc_error, FooterError::Crc.message(), None)
        }
        ReadError::Footer(FooterError::Length) => {
            exception(g.length_error, FooterError::Length.message(), None)
        }
    }
}

/// Runs `step` on the reader until it answers, reading the io whenever it asks for input. `outbuf` is the caller's
/// buffer (nil for none), which zlib.c lends the io. The step runs with the GVL held: the header and the footer.
pub fn drive<T>(
    this: &GzipReader,
    outbuf: VALUE,
    mut step: impl FnMut(&mut Reader) -> Result<Progress<T>, ReadError>,
) -> Result<T, Error> {
    loop {
        wait_idle(this)?;
        // Errors are made after the borrow ends: making one runs Ruby code (`initialize`), where threads may switch.
        let progress = match this.state.borrow_mut().reader.as_mut() {
            Some(reader) => step(reader.get_mut()),
            None => return Err(closed_error()),
        };
        match progress.map_err(read_error)? {
            Progress::Done(t) => return Ok(t),
            Progress::NeedInput => read_chunk(this, outbuf)?,
        }
    }
}

/// `drive` of the core's `fill(need, want)`: inflates until `need` bytes are buffered or the body ends. While other
/// Ruby threads are alive, each inflating step runs with the GVL released, as zlib.c runs each inflate, so that
/// they run meanwhile; a lone thread keeps it (releasing it would only cost time).
pub fn fill(this: &GzipReader, outbuf: VALUE, need: usize, want: usize) -> Result<(), Error> {
    loop {
        wait_idle(this)?;
        let progress = {
            let mut st = this.state.borrow_mut();
            let Some(reader) = st.reader.as_mut() else {
                drop(st);
                return Err(closed_error());
            };
            // SAFETY: rb_thread_alone only reads the VM's thread count.
            let alone = unsafe { rb_sys::rb_thread_alone() } != 0;
            if alone || !reader.get().would_inflate(need, want) {
                reader.get_mut().fill(need, want)
            } else {
                let Some(mut taken) = st.reader.take() else {
                    drop(st);
                    return Err(closed_error());
                };
                st.busy = true;
                drop(st);
                let outcome = nogvl::without_gvl(|| taken.get_mut().fill(need, want));
                let lost = !matches!(outcome.result, Some(Ok(_)));
                {
                    let mut st = this.state.borrow_mut();
                    // The core does not panic (fuzzed); were it to, the reader's state would be unknown: dropped.
                    st.reader = if lost && outcome.raised.is_none() {
                        None
                    } else {
                        Some(taken)
                    };
                    st.busy = false;
                }
                if let Some(raised) = outcome.raised {
                    return Err(raised);
                }
                match outcome.result {
                    Some(Ok(progress)) => progress,
                    _ => return Err(raise(globals().gzip_error, "inflate failed")),
                }
            }
        };
        account(this);
        match progress.map_err(read_error)? {
            Progress::Done(()) => return Ok(()),
            Progress::NeedInput => read_chunk(this, outbuf)?,
        }
    }
}

/// Waits while another thread inflates this reader's input without the GVL (one chunk: microseconds), as a second
/// thread waits on zlib.c's mutex in Ruby 3.1; Zlib of Ruby 3.4 raises `Zlib::InProgressError` there instead.
///
/// The state is free only when no other frame borrows it either (a thread can switch while another holds a borrow
/// and makes an exception, whose `initialize` is Ruby code). A reader left busy in a forked child, where the thread
/// that had it out does not exist, is refused with "zlib stream is in progress".
pub fn wait_idle(this: &GzipReader) -> Result<(), Error> {
    loop {
        let busy = match this.state.try_borrow_mut() {
            Ok(st) => st.busy,
            Err(_) => true,
        };
        if !busy {
            return Ok(());
        }
        // SAFETY: rb_thread_alone only reads the VM's thread count.
        if unsafe { rb_sys::rb_thread_alone() } != 0 {
            return Err(raise(
                globals().in_progress_error,
                "zlib stream is in progress",
            ));
        }
        // SAFETY: protected: rb_thread_schedule switches threads and may run interrupts that raise.
        protect(|| unsafe {
            rb_sys::rb_thread_schedule();
            QNIL
        })?;
    }
}

/// Tells Ruby's GC how much the reader's buffers grew or shrank since it was last told (they follow what is read:
/// a `read` of everything holds all of it until it is handed out).
pub fn account(this: &GzipReader) {
    let mut st = this.state.borrow_mut();
    let now = st.reader.as_ref().map_or(0, |r| r.get().buffer_bytes());
    let delta = now as isize - st.accounted as isize;
    if delta != 0 {
        st.accounted = now;
        // SAFETY: rb_gc_adjust_memory_usage only adjusts the malloc counters the GC schedules by; it raises nothing.
        unsafe { rb_sys::rb_gc_adjust_memory_usage(delta as _) };
    }
}

/// Takes back what `account` reported, as the reader is dropped.
pub fn forget_accounted(this: &GzipReader) {
    let mut st = this.state.borrow_mut();
    let accounted = std::mem::take(&mut st.accounted);
    if accounted != 0 {
        // SAFETY: as in `account`.
        unsafe { rb_sys::rb_gc_adjust_memory_usage(-(accounted as isize) as _) };
    }
}

/// One read of the io, handed to the reader (or its end, as the reader's end of input). The reader is busy from
/// the read until the chunk is fed: another thread's call waits for it ([`wait_idle`]), as on zlib.c's mutex, so
/// that no other thread reads the io and feeds its chunk first (threads can switch as the io's method returns).
fn read_chunk(this: &GzipReader, outbuf: VALUE) -> Result<(), Error> {
    wait_idle(this)?;
    this.state.borrow_mut().busy = true;
    let chunk = read_io(this, outbuf);
    let mut st = own_state(this)?;
    st.busy = false;
    let chunk = chunk?;
    let Some(reader) = st.reader.as_mut() else {
        drop(st);
        return Err(closed_error());
    };
    let reader = reader.get_mut();
    // zlib.c loops forever on "" (an io that never blocks nor ends); here it ends the input.
    // SAFETY: `chunk` is a String (checked) on this stack; the slice is dropped before any Ruby code runs.
    if rb::is_nil(chunk) || unsafe { rb::str_len(chunk) } == 0 {
        reader.end_of_input();
    } else {
        // SAFETY: as above.
        reader.feed(unsafe { rb::str_bytes(chunk) });
    }
    Ok(())
}

/// The state, borrowed by the thread that marked it busy: waits while a frame of another thread still borrows it
/// (one making an exception).
fn own_state(this: &GzipReader) -> Result<std::cell::RefMut<'_, super::State>, Error> {
    loop {
        if let Ok(st) = this.state.try_borrow_mut() {
            return Ok(st);
        }
        // SAFETY: protected: rb_thread_schedule switches threads and may run interrupts that raise.
        let switched = protect(|| unsafe {
            rb_sys::rb_thread_schedule();
            QNIL
        });
        if let Err(e) = switched {
            if let Ok(mut st) = this.state.try_borrow_mut() {
                st.busy = false;
            }
            return Err(e);
        }
    }
}

/// `io.readpartial(CHUNK[, buf])` (`io.read` where it has no readpartial): a String, or nil at its end.
fn read_io(this: &GzipReader, outbuf: VALUE) -> Result<VALUE, Error> {
    let io = this.io.get();
    let buf = if !rb::is_nil(outbuf) {
        outbuf
    } else if this.lend_scratch.get() {
        // Not while the io still locks it from an earlier read: then a new String, as zlib.c's call makes one.
        let scratch = this.scratch();
        if rb::is_refillable_string(scratch, 4 * CHUNK) {
            scratch
        } else {
            QNIL
        }
    } else {
        QNIL
    };
    let len = rb::integer(CHUNK as i64);
    let args: &[VALUE] = if rb::is_nil(buf) { &[len] } else { &[len, buf] };
    match rb::funcall(io, READPARTIAL.get(), args) {
        Ok(s) => {
            rb::check_type(s, rb_sys::ruby_value_type::RUBY_T_STRING)?;
            Ok(s)
        }
        Err(e) if is_a(&e, globals().eof_error) => Ok(QNIL),
        Err(e) if is_a(&e, globals().no_method_error) => {
            let s = rb::funcall(io, READ.get(), args)?;
            if !rb::is_nil(s) {
                rb::check_type(s, rb_sys::ruby_value_type::RUBY_T_STRING)?;
            }
            Ok(s)
        }
        Err(e) => Err(e),
    }
}

fn is_a(e: &Error, class: VALUE) -> bool {
    let Some(exception) = e.value() else {
        return false;
    };
    // SAFETY: rb_obj_is_kind_of only reads the class chain of a live exception object and a pinned class.
    unsafe { rb_sys::rb_obj_is_kind_of(exception.as_raw(), class) == rb::QTRUE }
}

/// True when `io` fills a buffer it is lent in place: a plain IO or a StringIO (whose `readpartial` take the buffer
/// as their second argument), unless its `readpartial` was redefined to take one argument only.
pub fn lends_scratch(io: VALUE) -> Result<bool, Error> {
    let plain = rb::builtin_type(io) == Some(rb_sys::ruby_value_type::RUBY_T_FILE);
    let Some(class) = rb::heap_class(io) else {
        return Ok(false);
    };
    let mut lends = false;
    // SAFETY: protected: looking StringIO up may run an autoload, and method lookup for the arity may call
    // respond_to_missing?; rb_cObject is set at boot.
    protect(|| unsafe {
        let object = rb_sys::rb_cObject;
        let id = STRING_IO.get();
        let string_io = plain
            || (rb_sys::rb_const_defined_at(object, id) != 0
                && rb_sys::rb_const_get_at(object, id) == class);
        lends = string_io && rb_sys::rb_obj_method_arity(io, READPARTIAL.get()) != 1;
        QNIL
    })?;
    Ok(lends)
}

/// What `io.seek(-n, IO::SEEK_CUR)` takes for `rewind`.
pub fn seek_back(io: VALUE, n: u64) -> Result<(), Error> {
    let back = rb::integer(-(n as i64));
    rb::funcall(io, SEEK.get(), &[back, rb::integer(1)])?;
    Ok(())
}

/// A new String of `bytes` (binary), protected against NoMemoryError.
pub fn binary(bytes: &[u8]) -> Result<VALUE, Error> {
    // SAFETY: rb_str_new copies `bytes`; protect catches a NoMemoryError.
    protect(|| unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const _, bytes.len() as _) })
}
