//! Where a GzipWriter's output goes: one `io.write` of a new, exactly sized binary String per gzfile write (never
//! touched again: Bug #15356), or, for a plain File, pipe or socket whose `write` is Ruby's own, the bytes straight
//! into the IO (`rb_io_bufwrite`) with no String at all. A write that produced no output makes no String.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::{ID, VALUE};

use crate::ruby::io_write::{direct_io, write_direct};
use crate::ruby::names::{FLUSH, WRITE};
use crate::ruby::rb::{self, QFALSE, QTRUE};

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
    if direct_io(io) {
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
