//! The JSON fast path of `Struct#read` and `Union#read`: the core's `JsonIn` reads each protocol step straight from
//! a plain MemoryBufferTransport's buffer, or an exact FramedTransport's or BufferedTransport's read buffer (the
//! [`ReadBuffer`]s the struct codec's `json!` list names), taking
//! the bytes the protocol's Ruby methods take (one `read(1)` at a time, so a memory buffer is cut where theirs would
//! be) and keeping the byte the `@reader` would hold. A step that reaches the end of a frame or of the buffered bytes
//! is declined (the refill is the transport's method, called by the protocol's).
//!
//! A step the core declines (anything it does not read the common way: see `thrift_native_core::json::read`) is
//! left to the protocol's own method, and so is the rest of the read: the native state is shown to the Ruby objects
//! first (the contexts, and `@reader`'s `@hasData`/`@data`), exactly as the Ruby methods would have left it, so that
//! they give the library's result or exception. The same happens on a failure, and when the transport stops being
//! plain while Ruby code ran. Ruby code the read runs meanwhile (`validate`, a class's own `initialize`, `Hash#hash`
//! of a struct key) sees the transport's position but the protocol's contexts and reader as the read found them.

use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::codec::{FieldBegin, ListBegin, MapBegin, Scalar, Sequence, Source};
use thrift_native_core::json::JsonIn;

use super::super::dispatch::DispatchSource;
use crate::protocols::json::state::Reading;
use crate::thrift::values::RubyBuilder;
use crate::transports::buffer::ReadBuffer;

/// Reads a struct through an exact JsonProtocol from its reader's MemoryBufferTransport.
pub struct JsonSource<B> {
    state: Reading<B>,
    /// The state is shown to the Ruby objects and the protocol's methods read on (`lost`), or are to from the next
    /// step on (`pending`: the transport stopped being plain while Ruby code ran).
    lost: Option<DispatchSource>,
    pending: bool,
}

impl<B: ReadBuffer> JsonSource<B> {
    /// The reader of a struct read through `protocol`, when the fast path may read it.
    pub fn new(protocol: VALUE) -> Option<Self> {
        Some(JsonSource {
            state: Reading::new(protocol)?,
            lost: None,
            pending: false,
        })
    }

    /// Hands the state to the Ruby objects; the protocol's methods read on from it.
    fn fall_back(&mut self) -> Result<&mut DispatchSource, Error> {
        if self.lost.is_none() {
            self.pending = false;
            self.state.show()?;
        }
        let protocol = self.state.protocol;
        Ok(self
            .lost
            .get_or_insert_with(|| DispatchSource::new(protocol)))
    }

    /// The protocol's methods, once they read on.
    #[inline(always)]
    fn dispatch(&mut self) -> Result<Option<&mut DispatchSource>, Error> {
        if self.pending {
            self.fall_back()?;
        }
        Ok(self.lost.as_mut())
    }

    /// A native step over the unread bytes; `None` once it declined and the state is shown.
    #[inline(always)]
    fn step<T>(
        &mut self,
        step: impl FnOnce(&mut JsonIn, &[u8]) -> Option<(T, usize)>,
    ) -> Result<Option<T>, Error> {
        let s = &mut self.state;
        match step(&mut s.json, s.buffer.unread()) {
            Some((v, n)) => {
                s.buffer.advance_bytewise(n)?;
                Ok(Some(v))
            }
            None => {
                self.fall_back()?;
                Ok(None)
            }
        }
    }

    /// The end of the read. Done: the context it was read in advanced past it, the reader's byte as it is. Failed:
    /// everything shown, as the Ruby methods would have left it.
    pub fn finish(mut self, ok: bool) -> Result<(), Error> {
        if self.lost.is_some() {
            return Ok(());
        }
        if !ok {
            return self.fall_back().map(drop);
        }
        // Done: nothing opened is left open, so this stores the parent's flags and the held byte.
        self.state.show()
    }
}

/// Each step: the protocol's method once they read on, else the native step, else (declined) the method.
macro_rules! step {
    ($self:ident, $method:ident($($arg:expr),*), |$json:ident, $bytes:ident| $native:expr) => {{
        if let Some(dispatch) = $self.dispatch()? {
            return dispatch.$method($($arg),*);
        }
        match $self.step(|$json, $bytes| $native)? {
            Some(v) => Ok(v),
            None => $self.fall_back()?.$method($($arg),*),
        }
    }};
}

impl<'r, B: ReadBuffer> Source<RubyBuilder<'r>> for JsonSource<B> {
    #[inline(always)]
    fn native(&self) -> bool {
        self.lost.is_none() && !self.pending
    }

    fn remaining(&self) -> Option<usize> {
        if !self.native() {
            return None;
        }
        let unread = self.state.buffer.unread().len();
        Some(unread + usize::from(self.state.json.held().is_some()))
    }

    fn resync(&mut self) {
        if self.native() && !self.state.buffer.resume(self.state.trans) {
            self.pending = true;
        }
    }

    fn struct_begin(&mut self) -> Result<i64, Error> {
        step!(self, struct_begin(), |json, bytes| json
            .struct_begin(bytes)
            .map(|n| (0, n)))
    }

    fn struct_end(&mut self, saved: i64) -> Result<(), Error> {
        step!(self, struct_end(saved), |json, bytes| json
            .struct_end(bytes)
            .map(|n| ((), n)))
    }

    #[inline(always)]
    fn field_begin(&mut self) -> Result<FieldBegin, Error> {
        step!(self, field_begin(), |json, bytes| json.field_begin(bytes))
    }

    #[inline(always)]
    fn field_end(&mut self) -> Result<(), Error> {
        step!(self, field_end(), |json, bytes| json
            .field_end(bytes)
            .map(|n| ((), n)))
    }

    fn map_begin(&mut self) -> Result<MapBegin, Error> {
        step!(self, map_begin(), |json, bytes| json.map_begin(bytes))
    }

    fn map_end(&mut self) -> Result<(), Error> {
        step!(self, map_end(), |json, bytes| json
            .map_end(bytes)
            .map(|n| ((), n)))
    }

    fn list_begin(&mut self, seq: Sequence) -> Result<ListBegin, Error> {
        step!(self, list_begin(seq), |json, bytes| json.list_begin(bytes))
    }

    fn list_end(&mut self, seq: Sequence) -> Result<(), Error> {
        step!(self, list_end(seq), |json, bytes| json
            .list_end(bytes)
            .map(|n| ((), n)))
    }

    #[inline(always)]
    fn scalar(&mut self, kind: Scalar, values: &mut RubyBuilder<'r>) -> Result<VALUE, Error> {
        if let Some(dispatch) = self.dispatch()? {
            return dispatch.scalar(kind, values);
        }
        match self.step(|json, bytes| json.scalar(kind, bytes, values))? {
            Some(v) => Ok(v),
            None => self.fall_back()?.scalar(kind, values),
        }
    }

    /// `BaseProtocol#skip` natively, whole; a skip the core declines is the protocol's own.
    fn skip(&mut self, ttype: i64, depth: i64, values: &mut RubyBuilder<'r>) -> Result<(), Error> {
        if let Some(dispatch) = self.dispatch()? {
            return dispatch.skip(ttype, depth, values);
        }
        match self.step(|json, bytes| json.skip(ttype, bytes).map(|n| ((), n)))? {
            Some(()) => Ok(()),
            None => self.fall_back()?.skip(ttype, depth, values),
        }
    }
}
