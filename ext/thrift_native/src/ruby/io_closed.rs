//! `io.closed?` answered as IO#closed? answers it, without the call, for an IO whose `closed?` is Ruby's own: the
//! transports ask it before every read and write of a socket. Ruby 3.3 and later export IO#closed? itself
//! (`rb_io_closed_p`); before, its few lines are done here on the public `rb_io_t`.

use magnus::Error;
use rb_sys::VALUE;

use crate::ruby::rb;

/// IO#closed? of `io`, an IO whose `closed?` is IO's: what it answers or raises (IOError for an IO never initialised).
pub fn closed(io: VALUE) -> Result<bool, Error> {
    if rb::builtin_type(io) != Some(rb_sys::ruby_value_type::RUBY_T_FILE) {
        return rb::funcall(io, crate::ruby::names::CLOSED_P.get(), &[]).map(rb::truthy);
    }
    closed_file(io)
}

#[cfg(ruby_gte_3_3)]
fn closed_file(io: VALUE) -> Result<bool, Error> {
    // SAFETY: protected; rb_io_closed_p is IO#closed? (it raises for an uninitialised IO), on a live IO.
    let answer = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_io_closed_p(io) })?;
    Ok(rb::truthy(answer))
}

/// The write IO's descriptor when it has one of its own (a duplex pipe), else its own; an IO never initialised gets
/// the method, which raises.
#[cfg(ruby_lt_3_3)]
fn closed_file(io: VALUE) -> Result<bool, Error> {
    // SAFETY: `io` is a live T_FILE: rb_io_get_write_io only reads its fptr.
    let write_io = unsafe { rb_sys::rb_io_get_write_io(io) };
    if write_io != io {
        // SAFETY: a tied write IO is a T_FILE too; its fptr, when set, is its rb_io_t.
        let write_fptr = unsafe { (*(write_io as *const rb_sys::RFile)).fptr };
        // SAFETY: as above, a non-null fptr of a live IO.
        if !write_fptr.is_null() && unsafe { (*write_fptr).fd } >= 0 {
            return Ok(false);
        }
    }
    // SAFETY: `io` is a T_FILE, so an RFile.
    let fptr = unsafe { (*(io as *const rb_sys::RFile)).fptr };
    if fptr.is_null() {
        return rb::funcall(io, crate::ruby::names::CLOSED_P.get(), &[]).map(rb::truthy);
    }
    // SAFETY: an initialised IO's rb_io_t, whose fd is public before Ruby 3.3.
    Ok(unsafe { (*fptr).fd } < 0)
}
