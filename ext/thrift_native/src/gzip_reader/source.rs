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
        let progress = {
            let mut st = this.state.borrow_mut();
            let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
            step(reader).map_err(read_error)?
        };
        match progress {
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
            let reader = st.reader.as_mut().ok_or_else(closed_error)?;
            // SAFETY: rb_thread_alone only reads the VM's thread count.
            let alone = unsafe { rb_sys::rb_thread_alone() } != 0;
            if alone || !reader.get().would_inflate(need, want) {
                reader.get_mut().fill(need, want)
            } else {
                let mut taken = st.reader.take().ok_or_else(closed_error)?;
                st.busy = true;
                drop(st);
                let outcome = nogvl::without_gvl(|| taken.get_mut().fill(need, want));
                let mut st = this.state.borrow_mut();
                st.reader = Some(taken);
                st.busy = false;
                if let Some(raised) = outcome.raised {
                    return Err(raised);
                }
                match outcome.result {
                    Some(Ok(progress)) => progress,
                    // The core does not panic (fuzzed); were it to, the reader's state is unknown.
                    _ => {
                        st.reader = None;
                        return Err(raise(globals().gzip_error, "inflate failed"));
                    }
                }
            }
        };
        match progress.map_err(read_error)? {
            Progress::Done(()) => return Ok(()),
            Progress::NeedInput => read_chunk(this, outbuf)?,
        }
    }
}

/// Waits while another thread inflates this reader's input without the GVL (one chunk: microseconds), as a second
/// thread waits on zlib.c's mutex in Ruby 3.1; Zlib of Ruby 3.4 raises `Zlib::InProgressError` there instead.
pub fn wait_idle(this: &GzipReader) -> Result<(), Error> {
    while this.state.borrow().busy {
        // SAFETY: protected: rb_thread_schedule switches threads and may run interrupts that raise.
        protect(|| unsafe {
            rb_sys::rb_thread_schedule();
            QNIL
        })?;
    }
    Ok(())
}

/// One read of the io, handed to the reader (or its end, as the reader's end of input).
fn read_chunk(this: &GzipReader, outbuf: VALUE) -> Result<(), Error> {
    let io = this.io.get();
    let buf = if !rb::is_nil(outbuf) {
        outbuf
    } else if this.lend_scratch.get() {
        this.scratch()
    } else {
        QNIL
    };
    let len = rb::integer(CHUNK as i64);
    let args: &[VALUE] = if rb::is_nil(buf) { &[len] } else { &[len, buf] };
    let chunk = match rb::funcall(io, READPARTIAL.get(), args) {
        Ok(s) => {
            rb::check_type(s, rb_sys::ruby_value_type::RUBY_T_STRING)?;
            s
        }
        Err(e) if is_a(&e, globals().eof_error) => QNIL,
        Err(e) if is_a(&e, globals().no_method_error) => {
            let s = rb::funcall(io, READ.get(), args)?;
            if !rb::is_nil(s) {
                rb::check_type(s, rb_sys::ruby_value_type::RUBY_T_STRING)?;
            }
            s
        }
        Err(e) => return Err(e),
    };
    wait_idle(this)?;
    let mut st = this.state.borrow_mut();
    let reader = st.reader.as_mut().ok_or_else(closed_error)?.get_mut();
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

fn is_a(e: &Error, class: VALUE) -> bool {
    let Some(exception) = e.value() else {
        return false;
    };
    // SAFETY: rb_obj_is_kind_of only reads the class chain of a live exception object and a pinned class.
    unsafe { rb_sys::rb_obj_is_kind_of(exception.as_raw(), class) == rb::QTRUE }
}

/// True when `io` fills a buffer it is lent in place: a plain IO, or a StringIO (whose `readpartial` both take the
/// buffer as their second argument).
pub fn lends_scratch(io: VALUE) -> bool {
    if rb::builtin_type(io) == Some(rb_sys::ruby_value_type::RUBY_T_FILE) {
        return true;
    }
    let Some(class) = rb::heap_class(io) else {
        return false;
    };
    // SAFETY: rb_cObject is set at boot; rb_const_defined_at and rb_const_get_at only look the constant up (StringIO
    // is a plain constant, not autoloaded by Ruby itself), and neither raises for a defined constant name.
    unsafe {
        let object = rb_sys::rb_cObject;
        let id = STRING_IO.get();
        rb_sys::rb_const_defined_at(object, id) != 0 && rb_sys::rb_const_get_at(object, id) == class
    }
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
