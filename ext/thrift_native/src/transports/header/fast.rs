//! The struct codec's view of an exact HeaderTransport's StringIO buffers (through an exact `HeaderProtocol`):
//! [`HeaderBuffer`] reads the read buffer's String from its position, [`StringIoTarget`] appends to the write
//! buffer's String. A StringIO's position is only reachable through its methods, so they keep their own and hand it
//! to the StringIO (`pos=`) before the transport's methods run, before the protocol's `skip`, and at the end; Ruby
//! code the codec runs in between (`validate`, an `initialize`, a key's `hash`) sees the read position of the last
//! hand-over. A read that crosses the buffer's end calls the transport's methods (`read_byte`,
//! `read_into_buffer`, `read_all`) exactly as the C accelerator does, which read the next frame.

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use super::{is_string_io, ivar, owns};
use crate::ruby::names::{
    CLOSED_READ_P, CLOSED_WRITE_P, IVAR_READ_BUFFER, IVAR_WRITE_BUFFER, POS, SET_POS, STRING,
};
use crate::ruby::rb;
use crate::thrift::bytes;
use crate::transports::buffer::{HeldBytes, ReadBuffer, Shortfall};

/// `io.method`, or None if it raises.
fn ask(io: VALUE, method: &crate::ruby::rb::StaticId) -> Option<VALUE> {
    rb::funcall(io, method.get(), &[]).ok()
}

/// `io.pos = pos`. StringIO's `pos=` raises only for a negative position or a closed stream, neither of which a
/// buffer the fast path took can have; if it raises anyway, the next call on the StringIO will too.
fn hand_over(io: VALUE, pos: usize) {
    let _ = rb::funcall(io, SET_POS.get(), &[rb::integer(pos as i64)]);
}

/// The read buffer (a StringIO) of an exact HeaderTransport, from its position.
pub struct HeaderBuffer {
    trans: VALUE,
    io: VALUE,
    string: VALUE,
    /// `string`'s bytes (see [`HeldBytes`]), re-read after any Ruby code ran.
    bytes: HeldBytes,
    pos: usize,
    /// The StringIO's own position, as last handed over.
    committed: usize,
}

/// A refill is the transport's method, which reads the next frame into a new StringIO.
impl ReadBuffer for HeaderBuffer {
    fn plain(trans: VALUE) -> Option<Self> {
        if !owns(trans) {
            return None;
        }
        let io = ivar(trans, &IVAR_READ_BUFFER);
        if !is_string_io(io) || rb::truthy(ask(io, &CLOSED_READ_P)?) {
            return None;
        }
        let string = ask(io, &STRING)?;
        let pos = usize::try_from(rb::fixnum_value(ask(io, &POS)?)?).ok()?;
        if !rb::is_string(string) {
            return None;
        }
        Some(HeaderBuffer {
            trans,
            io,
            string,
            // SAFETY: `string` is a String, held by this buffer on the stack.
            bytes: unsafe { HeldBytes::of(string) },
            pos,
            committed: pos,
        })
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

    fn past_end<T>(
        &mut self,
        _ruby: &Ruby,
        _wanted: Shortfall,
        refill: impl FnOnce(VALUE) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.commit();
        let result = refill(self.trans);
        match Self::plain(self.trans) {
            Some(b) => *self = b,
            None => {
                self.bytes = HeldBytes::EMPTY;
                self.pos = 0;
                self.committed = 0;
            }
        }
        result
    }

    /// After Ruby code ran: the same StringIO carries on from this buffer's position (its String re-read), or from
    /// its own if the two were in step (the Ruby code may have read from it: `skip`); another StringIO (the
    /// transport read a frame) is picked up afresh.
    fn resume(&mut self, _trans: VALUE) -> bool {
        if ivar(self.trans, &IVAR_READ_BUFFER) != self.io {
            self.commit();
            return match Self::plain(self.trans) {
                Some(b) => {
                    *self = b;
                    true
                }
                None => false,
            };
        }
        if self.pos == self.committed {
            let Some(pos) = ask(self.io, &POS)
                .and_then(rb::fixnum_value)
                .and_then(|p| usize::try_from(p).ok())
            else {
                return false;
            };
            (self.pos, self.committed) = (pos, pos);
        }
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
}

/// The write buffer (a StringIO) of an exact HeaderTransport, appended to through its String when its position
/// is at the end (as StringIO#write would append).
#[derive(Clone, Copy)]
pub struct StringIoTarget {
    trans: VALUE,
    io: VALUE,
    string: VALUE,
    /// The StringIO's position, at the String's end, as last handed over.
    pos: usize,
}

impl StringIoTarget {
    pub fn of(trans: VALUE) -> Option<Self> {
        if !owns(trans) {
            return None;
        }
        let io = ivar(trans, &IVAR_WRITE_BUFFER);
        if !is_string_io(io) || rb::truthy(ask(io, &CLOSED_WRITE_P)?) {
            return None;
        }
        let string = ask(io, &STRING)?;
        if !bytes::is_binary_string(string) || rb::is_frozen(string) {
            return None;
        }
        let pos = usize::try_from(rb::fixnum_value(ask(io, &POS)?)?).ok()?;
        // SAFETY: `string` is a String.
        (pos == unsafe { rb::str_len(string) }).then_some(StringIoTarget {
            trans,
            io,
            string,
            pos,
        })
    }

    /// After Ruby code ran: still this target if the transport's StringIO and its String's length are as left.
    pub fn resume(self) -> Option<Self> {
        // SAFETY: `string` is a String held on the caller's stack.
        let same = ivar(self.trans, &IVAR_WRITE_BUFFER) == self.io
            && unsafe { rb::str_len(self.string) } == self.pos;
        if same {
            Some(self)
        } else {
            Self::of(self.trans)
        }
    }

    /// Appends `bytes` and moves the StringIO's position past them.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), Error> {
        rb::str_cat(self.string, bytes)?;
        self.pos += bytes.len();
        hand_over(self.io, self.pos);
        Ok(())
    }
}
