//! Writing bytes Rust holds into a plain IO without a String: where IO#write would only copy a String's bytes into the
//! IO (no encoding to convert to, no newline decorator, no second IO for writes, no SIGPIPE), `rb_io_bufwrite` takes
//! them as they are, raising what IO#write raises. GzipWriter's output and a transport's frames over a socket.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;

use crate::ruby::names::WRITE;
use crate::ruby::rb::{self, QNIL};

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
pub fn direct_io(io: VALUE) -> bool {
    if rb::builtin_type(io) != Some(rb_sys::ruby_value_type::RUBY_T_FILE) {
        return false;
    }
    let Some(klass) = rb::heap_class(io) else {
        return false;
    };
    // SAFETY: rb_method_basic_definition_p only looks the method up in the class's method tables; it cannot raise.
    if unsafe { rb_sys::rb_method_basic_definition_p(klass, WRITE.get()) } == 0 {
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
pub fn write_direct(io: VALUE, bytes: &[u8]) -> Result<(), Error> {
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
