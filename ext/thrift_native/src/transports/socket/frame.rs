//! A FramedTransport frame read from a plain socket with one read(2) where the peer sent it whole. The library reads
//! a frame with two: `read_all(4)` for its size, then `read_all(size)`, each a `readpartial`. Here the first
//! `readpartial` asks for up to [`FIRST_READ`] bytes, which holds the size and, in a request/reply exchange, the
//! whole frame; what is missing is read as `read_all` reads it (`read(rest)`, appended), and bytes past the frame
//! (a peer that sent the next message already) go back into the handle's own read buffer (`IO#ungetbyte`), where
//! every later read of the handle (`readpartial`, `read_nonblock`, IO.select) finds them first, as it would have
//! found them in the kernel's buffer.
//!
//! Only while the handle's read buffer is empty, so that the first read is a read(2) into the frame's String and an
//! unget can never fail; otherwise (bytes ungot before, or read ahead by Ruby code) the caller reads as the library
//! does, each read served from that buffer. Errors name the sizes the library's reads name (4 for the first read).

use magnus::Error;
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::VALUE;

use super::PlainSocket;
use crate::ruby::names::{APPEND, READ};
use crate::ruby::rb;

/// What the first read of a frame asks for: Ruby's own IO read buffer size, which holds a small call's frame.
const FIRST_READ: usize = 8192;

/// What [`PlainSocket::read_frame`] read.
pub enum FrameRead {
    /// The frame: a String holding its bytes alone (the caller's spent buffer, or a new String).
    Whole(VALUE),
    /// The size of a frame the caller reads itself (0, or larger than it takes in one String): only its header was
    /// consumed.
    Size(u32),
}

impl PlainSocket {
    /// FramedTransport's `read_all(4)`, then `read_all(size)` (for a size in `1..=max`) on this socket, the first
    /// read into `into` when given (a spent buffer the caller owns, see [`PlainSocket::read_into`]). `header_read`
    /// runs once the size is read, before the frame is (the library's `@index = 0` between the two). None, with
    /// nothing read, where the handle's read buffer is not empty.
    pub fn read_frame(
        self,
        into: Option<VALUE>,
        max: usize,
        mut header_read: impl FnMut(),
    ) -> Result<Option<FrameRead>, Error> {
        // Asked before `closed?`, which the caller's reads then call as the library's do; a closed IO's buffer
        // lengths stay readable.
        let handle = self.handle();
        if !rb::is_nil(handle) && !read_buffer_empty(handle) {
            return Ok(None);
        }
        let Some(handle) = self.open_handle()? else {
            return Err(super::closed_stream());
        };
        let buf = self.read_handle(handle, FIRST_READ, 4, into)?;
        self.fill(buf, 4)?;
        // SAFETY: `buf` is a String of at least 4 bytes (`fill`), copied out at once.
        let size = u32::from_be_bytes(
            unsafe { rb::str_bytes(buf) }[..4]
                .try_into()
                .expect("4 bytes"),
        );
        header_read();
        let frame_len = size as usize;
        if !(1..=max).contains(&frame_len) {
            unread(handle, buf, 4)?;
            return Ok(Some(FrameRead::Size(size)));
        }
        self.fill(buf, 4 + frame_len)?;
        unread(handle, buf, 4 + frame_len)?;
        // SAFETY: `buf` is a String the caller owns or readpartial made, unshared and unfrozen (readpartial filled
        // it), holding exactly `4 + frame_len` bytes: the frame's bytes move to its start.
        unsafe {
            let ptr = get_default().rstring_ptr(buf) as *mut u8;
            std::ptr::copy(ptr.add(4), ptr, frame_len);
            rb_sys::rb_str_set_len(buf, frame_len as _);
        }
        Ok(Some(FrameRead::Whole(buf)))
    }

    /// `read_all`'s loop over `buf`, a String the first read answered: `read(size - buf.length)`, appended, until
    /// `buf` holds `size` bytes.
    fn fill(self, buf: VALUE, size: usize) -> Result<(), Error> {
        loop {
            // SAFETY: `buf` is a String held on this stack (IO#readpartial's answer, appended to).
            let got = unsafe { rb::str_len(buf) };
            if got >= size {
                return Ok(());
            }
            let rest = size - got;
            let chunk = match PlainSocket::of(self.this) {
                Some(socket) => socket.read(rest)?,
                None => rb::funcall(self.this, READ.get(), &[rb::integer(rest as i64)])?,
            };
            rb::funcall(buf, APPEND.get(), &[chunk])?;
        }
    }
}

/// True when `handle`, an IO, holds no read-ahead bytes of its own.
fn read_buffer_empty(handle: VALUE) -> bool {
    if rb::builtin_type(handle) != Some(rb_sys::ruby_value_type::RUBY_T_FILE) {
        return false;
    }
    // SAFETY: `handle` is a T_FILE, so an RFile; its fptr is null only for an IO never initialised.
    let fptr = unsafe { (*(handle as *const rb_sys::RFile)).fptr };
    // SAFETY: an initialised IO's fptr: rb_io_read_pending only reads its buffer lengths.
    !fptr.is_null() && unsafe { rb_sys::rb_io_read_pending(fptr) } == 0
}

/// The bytes of `buf` past `keep` handed back to `handle` (`handle.ungetbyte(rest)`), and `buf` cut to `keep`.
fn unread(handle: VALUE, buf: VALUE, keep: usize) -> Result<(), Error> {
    // SAFETY: `buf` is a String held on this stack; the bytes are copied into a new String at once.
    let rest = unsafe { rb::str_bytes(buf) }
        .get(keep..)
        .unwrap_or_default();
    if rest.is_empty() {
        return Ok(());
    }
    let rest = rb::binary_string(rest);
    // SAFETY: protected; `handle` is an open IO (it was just read) and `rest` a String on this stack. Its read buffer
    // was empty before the read, which read into `buf`, so the bytes (at most FIRST_READ, its capacity) fit.
    magnus::rb_sys::protect(|| unsafe { rb_sys::rb_io_ungetbyte(handle, rest) })?;
    // SAFETY: `buf` is unshared and unfrozen (readpartial filled it) and `keep` is within its length.
    unsafe { rb_sys::rb_str_set_len(buf, keep as _) };
    Ok(())
}
