//! Where a GzipWriter's output goes: one `io.write` of a new, exactly sized binary String per gzfile write (never
//! touched again: Bug #15356), or, for a plain File, pipe or socket whose `write` is Ruby's own, the bytes straight
//! into the IO (`rb_io_bufwrite`) with no String at all. A write that produced no output makes no String.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::{ID, VALUE};

use crate::ruby::names::{FLUSH, WRITE};
use crate::ruby::rb::{self, QFALSE, QNIL, QTRUE};

/// After a huge write, the reusable output buffer is cut back to this capacity.
pub const OUT_KEEP: usize = 256 * 1024;

/// Output on its way to the io.
pub enum Pending {
    Nothing,
    /// A new binary String for `io.write`.
    String(VALUE),
    /// The bytes, for `write_direct`.
    Bytes(Vec<u8>),
}

/// Takes the writer's pending output for [`emit`]: the buffer itself when `io` is a plain IO (see `direct_io`),
/// else a new String of its bytes (the buffer is kept for reuse).
pub fn take(out: &mut Vec<u8>, io: VALUE) -> Result<Pending, Error> {
    if out.is_empty() {
        return Ok(Pending::Nothing);
    }
    if direct_io(io, WRITE.get()) {
        return Ok(Pending::Bytes(std::mem::take(out)));
    }
    let bytes: &[u8] = out;
    // SAFETY: rb_str_new copies the bytes; protect catches a NoMemoryError. No Ruby code runs in between.
    let string =
        protect(|| unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const _, bytes.len() as _) });
    out.clear();
    if out.capacity() > OUT_KEEP {
        out.shrink_to(OUT_KEEP);
    }
    string.map(Pending::String)
}

/// `gzfile_write_raw`: one io.write of the pending output, then `io.flush` in sync mode. A direct write's buffer is
/// handed to `give_back` for reuse.
pub fn emit(
    io: VALUE,
    pending: Pending,
    sync: bool,
    give_back: impl FnOnce(Vec<u8>),
) -> Result<(), Error> {
    match pending {
        Pending::Nothing => return Ok(()),
        Pending::String(string) => {
            rb::funcall(io, WRITE.get(), &[string])?;
        }
        Pending::Bytes(mut bytes) => {
            let written = write_direct(io, &bytes);
            bytes.clear();
            if bytes.capacity() > OUT_KEEP {
                bytes.shrink_to(OUT_KEEP);
            }
            give_back(bytes);
            written?;
        }
    }
    if sync {
        call_if_defined(io, &FLUSH)?;
    }
    Ok(())
}

/// `io.method` when io responds to it (`flush` and `close` are optional for a GzipWriter's io).
pub fn call_if_defined(io: VALUE, method: &rb::StaticId) -> Result<(), Error> {
    if respond_to(io, method.get())? {
        rb::funcall(io, method.get(), &[])?;
    }
    Ok(())
}

/// FMODE_SIGNAL_ON_EPIPE: $stdout and $stderr (and their dups) raise SIGPIPE where a write(2) fails with EPIPE.
/// Ruby keeps the flag internal; its public ruby/io.h reserves the bit (`/* #define FMODE_SIGNAL_ON_EPIPE
/// 0x00020000 */`, the same in 3.1 through 4.0), and `rb_io_mode` reports it among the others.
const FMODE_SIGNAL_ON_EPIPE: i32 = 0x0002_0000;
const FMODE_TEXTMODE: i32 = rb_sys::FMODE_TEXTMODE as i32;
const ECONV_DECORATORS: i32 = rb_sys::ruby_econv_flag_type::RUBY_ECONV_DECORATOR_MASK as i32
    | rb_sys::ruby_econv_flag_type::RUBY_ECONV_STATEFUL_DECORATOR_MASK as i32;

/// True when `io` is a plain IO (File, pipe, socket) whose `write` is Ruby's own IO#write (no subclass, singleton or
/// prepended override) and that converts nothing on write (no encoding, no newline decorator) nor raises SIGPIPE:
/// then IO#write would only copy the bytes into the IO, which `rb_io_bufwrite` does without any String. A closed IO
/// is not one: IO#write raises for it.
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
    // SAFETY: `io` is a T_FILE, so it is an RFile (ruby/internal/core/rfile.h); its fptr is null only for an IO that
    // was never initialised.
    let fptr = unsafe { (*(io as *const rb_sys::RFile)).fptr };
    if fptr.is_null() {
        return false;
    }
    // SAFETY: an initialised IO: rb_io_get_write_io only reads its fptr (a duplex popen or a socket pair ties a
    // second IO for writing, which IO#write writes to).
    if unsafe { rb_sys::rb_io_get_write_io(io) } != io {
        return false;
    }
    let Some(mode) = open_mode(io, fptr) else {
        return false;
    };
    // SAFETY: an initialised IO's fptr. Its encodings have no public accessor in any Ruby (4.0 marks the field
    // deprecated "with no replacement"); the struct is the one bindgen read from this very Ruby's ruby/io.h.
    let encs = unsafe { &(*fptr).encs };
    let converts = (!encs.enc.is_null()
        // SAFETY: rb_ascii8bit_encoding only returns a static pointer.
        && encs.enc != unsafe { rb_sys::rb_ascii8bit_encoding() })
        || (mode & FMODE_TEXTMODE) != 0
        || (encs.ecflags & ECONV_DECORATORS) != 0;
    !converts && (mode & FMODE_SIGNAL_ON_EPIPE) == 0
}

/// The FMODE_* flags of an open IO, or None for a closed one (IO#write raises IOError there).
#[cfg(ruby_gte_3_3)]
fn open_mode(io: VALUE, _fptr: *mut rb_sys::rb_io_t) -> Option<i32> {
    // SAFETY: rb_io_mode raises IOError for a closed IO, which protect catches; it runs no Ruby code.
    let mode = protect(|| unsafe { rb::integer(rb_sys::rb_io_mode(io).into()) }).ok()?;
    rb::fixnum_value(mode).map(|m| m as i32)
}

/// The FMODE_* flags of an open IO, or None for a closed one (IO#write raises IOError there). Before Ruby 3.3 there
/// is no `rb_io_mode`: the fields it reads are plain ints of the public rb_io_t.
#[cfg(ruby_lt_3_3)]
fn open_mode(_io: VALUE, fptr: *mut rb_sys::rb_io_t) -> Option<i32> {
    // SAFETY: `fptr` is an initialised IO's.
    unsafe { ((*fptr).fd >= 0).then_some((*fptr).mode) }
}

/// The path IO#write names in an `Errno::*` it raises (nil for a pipe or socket).
#[cfg(ruby_gte_3_3)]
fn io_path(io: VALUE) -> VALUE {
    // SAFETY: rb_io_path only copies the IO's path (nil when it has none).
    unsafe { rb_sys::rb_io_path(io) }
}

#[cfg(ruby_lt_3_3)]
fn io_path(io: VALUE) -> VALUE {
    // SAFETY: `io` is an initialised IO (direct_io checked); pathv is a field of the public rb_io_t before 3.3.
    unsafe { (*(*(io as *const rb_sys::RFile)).fptr).pathv }
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
            rb_sys::rb_syserr_fail_str(errno, io_path(io));
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
