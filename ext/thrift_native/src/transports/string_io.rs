//! Transports whose bytes sit in an exact `StringIO`, read and written in place: [`StringIoBuffer`] reads the read
//! StringIO's String from its position, [`StringIoTarget`] appends to the write StringIO's String at its end. The
//! StringIOs are those of an exact HeaderTransport (`@read_buffer`, `@write_buffer`: a frame), an exact
//! HTTPClientTransport (`@inbuf`: the response it holds after `flush`) and an exact IOStreamTransport (`@input` and
//! `@output`, when they are StringIOs: a Rack or Thin request body, a servlet's answer). Which transports lend their
//! StringIOs, and when, is each one's own file's to say (`header`, `http_client`, `io_stream`).
//!
//! The buffer keeps its own position (read in the StringIO's struct where `ruby::strio` may, else through `pos`)
//! and hands it over (`pos=`, or in the struct) before the transport's methods run, before the protocol's `skip`, and
//! at the end (or when it is dropped); Ruby code run in between (`validate`, an `initialize`, a key's `hash`) sees the position of the last hand-over. A
//! read the bytes cannot answer calls the transport's methods (`read_byte`, `read_into_buffer`, `read_all`) as the
//! protocol would: a HeaderTransport reads its next frame, the others give their own end-of-file error.
//!
//! Reading and appending in place is what `StringIO#read(n)` and `StringIO#write` do with the bytes (`read(n)` answers
//! BINARY bytes from the position on; `write` of a BINARY String at the end appends its bytes whatever the StringIO's
//! encoding), while StringIO's methods are its own (`GUARD`).

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{CLOSED_READ_P, CLOSED_WRITE_P, POS, SET_POS, STRING};
use crate::ruby::{rb, strio};
use crate::thrift::thrift;
use crate::transports::buffer::{HeldBytes, ReadBuffer, Shortfall};
use crate::transports::{header, http_client, io_stream};

/// Tripped once Ruby code changes one of the StringIO methods whose work is done in place.
static GUARD: Guard = Guard::new();

/// `v` is exactly a StringIO whose methods the in-place reads and writes reproduce.
#[inline(always)]
pub fn is_string_io(v: VALUE) -> bool {
    rb::is_exact_instance(v, thrift().string_io) && GUARD.intact()
}

/// `io.method`, or None if it raises.
fn ask(io: VALUE, method: &rb::StaticId) -> Option<VALUE> {
    rb::funcall(io, method.get(), &[]).ok()
}

/// `io.pos`, when it is a non-negative Fixnum (read in the StringIO's struct where `strio` may).
fn position(io: VALUE) -> Option<usize> {
    if let Some(f) = strio::fields(io) {
        return Some(f.pos);
    }
    usize::try_from(rb::fixnum_value(ask(io, &POS)?)?).ok()
}

/// `[string, pos]` of a StringIO open on the side asked for (`closed_read?` or `closed_write?` false).
fn open_side(io: VALUE, closed_p: &rb::StaticId) -> Option<(VALUE, usize)> {
    if let Some(f) = strio::fields(io) {
        let open = if closed_p.get() == CLOSED_READ_P.get() {
            f.readable
        } else {
            f.writable
        };
        return open.then_some((f.string, f.pos));
    }
    if rb::truthy(ask(io, closed_p)?) {
        return None;
    }
    Some((ask(io, &STRING)?, position(io)?))
}

/// `io.pos = pos`. StringIO's `pos=` raises only for a negative position or a closed stream, neither of which a
/// buffer taken here can have; if it raises anyway, the next call on the StringIO will too.
fn hand_over(io: VALUE, pos: usize) {
    if !strio::set_pos(io, pos) {
        let _ = rb::funcall(io, SET_POS.get(), &[rb::integer(pos as i64)]);
    }
}

/// Which transport a StringIO was lent by: where it keeps it, and whether its bytes are all the message has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lender {
    /// A HeaderTransport's frame: a read past it reads the next frame.
    Header,
    /// An HTTPClientTransport's response or an IOStreamTransport's input: nothing follows.
    Whole,
}

/// For `ThriftNative.explain`: the ivar of the StringIO `trans` is read from in place, when it is.
pub fn read_place(trans: VALUE) -> Option<&'static str> {
    StringIoBuffer::plain(trans)?;
    Some(if http_client::read_io(trans).is_some() {
        "@inbuf"
    } else if io_stream::read_io(trans).is_some() {
        "@input"
    } else {
        "@read_buffer"
    })
}

/// For `ThriftNative.explain`: the ivar of the StringIO `trans` writes are appended to in place, when they are.
pub fn write_place(trans: VALUE) -> Option<&'static str> {
    StringIoTarget::of(trans)?;
    Some(if io_stream::write_io(trans).is_some() {
        "@output"
    } else {
        "@write_buffer"
    })
}

/// The read StringIO `trans` lends, and which kind of lender it is.
#[inline(always)]
fn read_io(trans: VALUE) -> Option<(VALUE, Lender)> {
    if let Some(io) = http_client::read_io(trans) {
        return Some((io, Lender::Whole));
    }
    if let Some(io) = io_stream::read_io(trans) {
        return Some((io, Lender::Whole));
    }
    header::read_io(trans).map(|io| (io, Lender::Header))
}

/// The read StringIO of a transport that lends one, from its position.
pub struct StringIoBuffer {
    trans: VALUE,
    io: VALUE,
    lender: Lender,
    string: VALUE,
    /// `string`'s bytes (see [`HeldBytes`]), re-read after any Ruby code ran.
    bytes: HeldBytes,
    pos: usize,
    /// The StringIO's own position, as last handed over.
    committed: usize,
}

impl StringIoBuffer {
    fn load(trans: VALUE) -> Option<Self> {
        let (io, lender) = read_io(trans)?;
        if !is_string_io(io) {
            return None;
        }
        let (string, pos) = open_side(io, &CLOSED_READ_P)?;
        if !rb::is_string(string) {
            return None;
        }
        Some(StringIoBuffer {
            trans,
            io,
            lender,
            string,
            // SAFETY: `string` is a String, held by this buffer on the stack.
            bytes: unsafe { HeldBytes::of(string) },
            pos,
            committed: pos,
        })
    }

    /// Bytes after the position.
    #[inline(always)]
    pub fn available(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
}

/// The position is handed over when the buffer goes (a protocol method's read ends, or fails).
impl Drop for StringIoBuffer {
    fn drop(&mut self) {
        self.commit();
    }
}

impl ReadBuffer for StringIoBuffer {
    fn plain(trans: VALUE) -> Option<Self> {
        Self::load(trans)
    }

    #[inline(always)]
    fn unread(&self) -> &[u8] {
        self.bytes.from(self.pos)
    }

    #[inline(always)]
    fn advance(&mut self, n: usize) -> Result<(), Error> {
        self.pos += n;
        Ok(())
    }

    /// The transport's own method, from the position handed over; then the StringIO it reads from picked up again
    /// (a HeaderTransport's next frame), or none.
    fn past_end<T>(
        &mut self,
        _ruby: &Ruby,
        _wanted: Shortfall,
        refill: impl FnOnce(VALUE) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.commit();
        let result = refill(self.trans);
        self.reload();
        result
    }

    /// After Ruby code ran: the same StringIO carries on from this buffer's position (its String re-read), or from
    /// its own if the two were in step (the Ruby code may have read from it: `skip`); another StringIO (the
    /// transport read a frame) is picked up afresh.
    fn resume(&mut self, _trans: VALUE) -> bool {
        if read_io(self.trans).map(|(io, _)| io) != Some(self.io) {
            self.commit();
            return match Self::load(self.trans) {
                Some(b) => {
                    *self = b;
                    true
                }
                None => false,
            };
        }
        if self.pos == self.committed {
            let Some(pos) = position(self.io) else {
                return false;
            };
            (self.pos, self.committed) = (pos, pos);
        }
        let string = match strio::fields(self.io) {
            Some(f) => Some(f.string),
            None => ask(self.io, &STRING),
        };
        let Some(string) = string.filter(|&s| rb::is_string(s)) else {
            self.commit(); // the protocol's methods read on from here
            return false;
        };
        self.string = string;
        // SAFETY: `string` is a String held on this stack.
        self.bytes = unsafe { HeldBytes::of(self.string) };
        true
    }

    /// Hands the position to the StringIO.
    fn commit(&mut self) {
        if self.pos != self.committed {
            hand_over(self.io, self.pos);
            self.committed = self.pos;
        }
    }

    /// An HTTP response or a request body is all there is; a HeaderTransport reads on.
    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        (self.lender == Lender::Whole).then(|| self.available())
    }
}

impl StringIoBuffer {
    /// After the transport's method ran: its StringIO as it left it, or an empty buffer (every later read then
    /// calls the transport's methods).
    fn reload(&mut self) {
        match Self::load(self.trans) {
            Some(b) => *self = b,
            None => {
                self.bytes = HeldBytes::EMPTY;
                self.pos = 0;
                self.committed = 0;
            }
        }
    }
}

/// The write StringIO of a transport that lends one, appended to through its String while its position is at the
/// end (where `StringIO#write` appends).
#[derive(Clone, Copy)]
pub struct StringIoTarget {
    trans: VALUE,
    io: VALUE,
    string: VALUE,
}

/// The write StringIO `trans` lends.
#[inline(always)]
fn write_io(trans: VALUE) -> Option<VALUE> {
    io_stream::write_io(trans).or_else(|| header::write_io(trans))
}

impl StringIoTarget {
    pub fn of(trans: VALUE) -> Option<Self> {
        let io = write_io(trans)?;
        if !is_string_io(io) {
            return None;
        }
        let (string, pos) = open_side(io, &CLOSED_WRITE_P)?;
        if !rb::is_string(string) || rb::is_frozen(string) {
            return None;
        }
        // SAFETY: `string` is a String.
        (pos == unsafe { rb::str_len(string) }).then_some(StringIoTarget { trans, io, string })
    }

    /// After Ruby code ran: the transport's StringIO as it is now, if it may still be appended to.
    pub fn resume(self) -> Option<Self> {
        Self::of(self.trans)
    }

    /// Appends `bytes` and moves the StringIO's position past them.
    pub fn append(&self, bytes: &[u8]) -> Result<(), Error> {
        if bytes.is_empty() {
            return Ok(()); // StringIO#write of "" leaves everything as it is
        }
        rb::str_cat(self.string, bytes)?;
        self.moved()
    }

    /// Appends String `s`'s bytes and moves the StringIO's position past them.
    pub fn append_str(&self, s: VALUE) -> Result<(), Error> {
        rb::str_cat_str(self.string, s)?;
        self.moved()
    }

    fn moved(&self) -> Result<(), Error> {
        // SAFETY: `string` is a String held on the caller's stack.
        hand_over(self.io, unsafe { rb::str_len(self.string) });
        Ok(())
    }
}

/// Registers the guard: StringIO's methods whose work the in-place reads and writes do.
pub fn init() {
    strio::verify(thrift().string_io);
    GUARD.watch(
        thrift().string_io,
        Watch::Methods(&[
            "read",
            "write",
            "pos",
            "pos=",
            "string",
            "closed_read?",
            "closed_write?",
        ]),
    );
}
