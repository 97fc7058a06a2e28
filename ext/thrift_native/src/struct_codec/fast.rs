//! The fast path: the protocol is exactly `BinaryProtocolAccelerated` or `Thrift::CompactProtocol` with our methods
//! (or an exact `HeaderProtocol` with one of its two inside), over a plain `MemoryBufferTransport`, an exact
//! `FramedTransport` or `BufferedTransport`, or (through the HeaderProtocol) its `HeaderTransport`. The core's
//! encodings read from the transport's buffer ([`BufferHost`] over a [`ReadBuffer`]: `@buf`, `@rbuf` or the read
//! StringIO's String, refilled through the transport's methods) and write into a Rust buffer appended to `@buf`,
//! `@wbuf` or the write StringIO ([`FastSink`], which the JSON encoder, [`super::json`], writes through too).
//!
//! Whenever Ruby code runs in the middle (`validate`, a class's own `initialize`, `skip`, `Set.new`, `Hash#hash` of
//! a struct key, a value the protocol's own method must convert), the transport is handed its state first and picked
//! up again afterwards, so that Ruby code sees exactly what the C accelerator would have left. If the transport is no
//! longer plain then, the rest goes through the protocol's methods ([`super::dispatch`]).

use std::cell::Cell;

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::codec::binary::{BinaryIn, BinaryOut};
use thrift_native_core::codec::compact::{CompactIn, CompactOut};
use thrift_native_core::codec::{
    Encoder, FieldBegin, FieldDef, Host, ListBegin, MapBegin, Primitive, Scalar, Sequence, Sink,
    Source,
};
use thrift_native_core::wire::VarintStep;
use thrift_native_core::wire::WireInput;
use thrift_native_core::CoreError;

use super::dispatch::{write_method, DispatchSink, DispatchSource};
use crate::protocols::compact::BOOL_VALUE;
use crate::protocols::plain_binary;
use crate::ruby::names::SKIP;
use crate::ruby::rb;
use crate::struct_codec::field_plan::RubyField;
use crate::thrift::errors;
use crate::thrift::values::RubyBuilder;
use crate::transports::buffer::{ReadBuffer, Shortfall};
use crate::transports::io::WriteTarget;

/// A transport's buffer, as the core's encodings read it, and the protocol object whose `@bool_value` the compact
/// encoding uses (a Ruby `skip` of a bool field reads it there).
pub struct BufferHost<'r, B> {
    ruby: &'r Ruby,
    buffer: B,
    protocol: VALUE,
    /// The protocol is the plain BinaryProtocol, whose `read_byte` takes what `trans.read_byte` answers its own way
    /// (nil, from an empty frame, is its NoMethodError): a byte past the buffer's end is its `read_byte`.
    plain: bool,
}

impl<B: ReadBuffer> WireInput for BufferHost<'_, B> {
    type Error = Error;

    #[inline(always)]
    fn read_byte(&mut self) -> Result<u8, Error> {
        if self.plain && self.buffer.unread().is_empty() {
            let protocol = self.protocol;
            let v = self.buffer.past_end(self.ruby, Shortfall::Byte, |_| {
                plain_binary::original_read_byte(protocol)
            })?;
            return Ok(rb::num2int(v)? as u8);
        }
        self.buffer.read_byte(self.ruby)
    }

    #[inline(always)]
    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        self.buffer.read_array(self.ruby, self.protocol)
    }

    #[inline(always)]
    fn read_varint<R: VarintStep>(&mut self) -> Result<R::Output, Error> {
        self.buffer.read_varint::<R>(self.ruby)
    }

    fn error(&self, e: CoreError) -> Error {
        errors::from_core(self.ruby, e)
    }
}

impl<B: ReadBuffer> Host for BufferHost<'_, B> {
    #[inline(always)]
    fn take_with<R>(&mut self, n: usize, make: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
        self.buffer.read_with(self.ruby, n, make)
    }

    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        self.buffer.remaining()
    }

    fn put_bool(&mut self, value: bool) -> Result<(), Error> {
        let v = if value { rb::QTRUE } else { rb::QFALSE };
        BOOL_VALUE.set(self.protocol, v)
    }

    fn take_bool(&mut self) -> Result<Option<bool>, Error> {
        let pending = BOOL_VALUE.get(self.protocol);
        if rb::is_nil(pending) {
            return Ok(None);
        }
        BOOL_VALUE.set(self.protocol, rb::QNIL)?;
        Ok(Some(rb::truthy(pending)))
    }
}

/// An encoding over a [`BufferHost`]: `BinaryIn` or `CompactIn`.
pub trait OverBuffer<'r> {
    type Buffer: ReadBuffer;
    fn host_mut(&mut self) -> &mut BufferHost<'r, Self::Buffer>;
}

impl<'r, B: ReadBuffer> OverBuffer<'r> for BinaryIn<BufferHost<'r, B>> {
    type Buffer = B;
    fn host_mut(&mut self) -> &mut BufferHost<'r, B> {
        &mut self.host
    }
}

impl<'r, B: ReadBuffer> OverBuffer<'r> for CompactIn<BufferHost<'r, B>> {
    type Buffer = B;
    fn host_mut(&mut self) -> &mut BufferHost<'r, B> {
        &mut self.host
    }
}

/// Reads an encoding from the buffer; `skip` is the protocol's own (Ruby) `skip`, as the C accelerator calls it.
/// `protocol` is the one the struct was given (a HeaderProtocol, or the encoding's own protocol object).
pub struct FastSource<W> {
    wire: W,
    protocol: VALUE,
    trans: VALUE,
    /// The transport stopped being plain while Ruby code ran: the protocol's methods from then on.
    lost: Option<DispatchSource>,
}

/// An encoding (`BinaryIn::new` or `CompactIn::new`) read straight from `trans`'s buffer, if the fast path may read
/// it. `encoder` is the protocol object of that encoding (its `@rbuf` and `@bool_value`): `protocol` itself, or a
/// HeaderProtocol's inner one. The compact encoding's field-id deltas are kept in Rust per struct instead of in
/// `@last_field`: Ruby code run in between (`skip`, `validate`) only pushes and pops its own entries there.
pub fn source<'r, B: ReadBuffer, W>(
    ruby: &'r Ruby,
    protocol: VALUE,
    encoder: VALUE,
    trans: VALUE,
    encoding: impl FnOnce(BufferHost<'r, B>) -> W,
) -> Option<FastSource<W>> {
    let buffer = B::plain(trans)?;
    let host = BufferHost {
        ruby,
        buffer,
        protocol: encoder,
        plain: rb::is_exact_instance(encoder, crate::thrift::thrift().binary_protocol),
    };
    Some(FastSource {
        wire: encoding(host),
        protocol,
        trans,
        lost: None,
    })
}

impl<'r, W: OverBuffer<'r>> FastSource<W> {
    /// The end of the read: the transport is handed the read position (for a buffer that keeps its own).
    pub fn finish(mut self) {
        if self.lost.is_none() {
            self.wire.host_mut().buffer.commit();
        }
    }
}

/// Each method: the encoding over the buffer, or the protocol's method once the buffer is lost.
macro_rules! either {
    ($self:ident, $method:ident($($arg:expr),*)) => {
        match &mut $self.lost {
            None => $self.wire.$method($($arg),*),
            Some(dispatch) => dispatch.$method($($arg),*),
        }
    };
}

impl<'r, W> Source<RubyBuilder<'r>> for FastSource<W>
where
    W: Source<RubyBuilder<'r>> + OverBuffer<'r>,
{
    #[inline(always)]
    fn native(&self) -> bool {
        self.lost.is_none()
    }

    #[inline(always)]
    fn remaining(&self) -> Option<usize> {
        match self.lost {
            None => self.wire.remaining(),
            Some(_) => None,
        }
    }

    #[inline(always)]
    fn resync(&mut self) {
        if self.lost.is_some() {
            return;
        }
        if !self.wire.host_mut().buffer.resume(self.trans) {
            self.lost = Some(DispatchSource::new(self.protocol));
        }
    }

    #[inline(always)]
    fn struct_begin(&mut self) -> Result<i64, Error> {
        either!(self, struct_begin())
    }

    #[inline(always)]
    fn struct_end(&mut self, saved: i64) -> Result<(), Error> {
        either!(self, struct_end(saved))
    }

    #[inline(always)]
    fn field_begin(&mut self) -> Result<FieldBegin, Error> {
        either!(self, field_begin())
    }

    #[inline(always)]
    fn field_end(&mut self) -> Result<(), Error> {
        either!(self, field_end())
    }

    #[inline(always)]
    fn map_begin(&mut self) -> Result<MapBegin, Error> {
        either!(self, map_begin())
    }

    #[inline(always)]
    fn map_end(&mut self) -> Result<(), Error> {
        either!(self, map_end())
    }

    #[inline(always)]
    fn list_begin(&mut self, seq: Sequence) -> Result<ListBegin, Error> {
        either!(self, list_begin(seq))
    }

    #[inline(always)]
    fn list_end(&mut self, seq: Sequence) -> Result<(), Error> {
        either!(self, list_end(seq))
    }

    #[inline(always)]
    fn scalar(&mut self, kind: Scalar, values: &mut RubyBuilder<'r>) -> Result<VALUE, Error> {
        either!(self, scalar(kind, values))
    }

    /// Skipping is rare (unknown or mismatched fields): the protocol's own `skip`, then the buffer picked up again.
    fn skip(&mut self, ttype: i64, depth: i64, values: &mut RubyBuilder<'r>) -> Result<(), Error> {
        if let Some(dispatch) = &mut self.lost {
            return dispatch.skip(ttype, depth, values);
        }
        self.wire.host_mut().buffer.commit();
        let result = rb::funcall(self.protocol, SKIP.get(), &[rb::integer(ttype)]);
        self.resync();
        result.map(drop)
    }
}

thread_local! {
    /// The fast path's output buffer, reused between calls (a nested call made from Ruby code gets a fresh one).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Encodes into a Rust buffer, appended to the transport's buffer (`@buf`, `@wbuf`, a HeaderTransport's StringIO)
/// before any Ruby code runs and at the end.
pub struct FastSink<E> {
    encoder: E,
    protocol: VALUE,
    trans: VALUE,
    target: WriteTarget,
    /// The transport stopped being plain while Ruby code ran: the protocol's methods from then on.
    lost: Option<DispatchSink>,
}

/// `encoder` over `trans`'s buffer, if the fast path may append to it. `protocol`: the one the struct was given
/// (whose methods write the values the encoder leaves to them).
pub fn sink<E: Encoder + RubyState>(
    protocol: VALUE,
    trans: VALUE,
    encoder: impl FnOnce(Vec<u8>) -> E,
) -> Option<FastSink<E>> {
    let target = WriteTarget::of(trans)?;
    let mut out = SCRATCH.with(|s| s.take());
    out.clear();
    Some(FastSink {
        encoder: encoder(out),
        protocol,
        trans,
        target,
        lost: None,
    })
}

/// What an encoder keeps that the protocol's Ruby methods keep in the protocol object (the JSON contexts): shown to
/// those methods around a value they write ([`RubyState::show`], [`RubyState::take_back`]), and for good when they
/// write the rest or the write failed ([`RubyState::leave`]); else given back at the end ([`RubyState::finish`]).
pub trait RubyState {
    fn show(&mut self) -> Result<(), Error> {
        Ok(())
    }
    /// False when the state can no longer be taken back (Ruby code replaced it): the protocol's methods go on.
    fn take_back(&mut self) -> Result<bool, Error> {
        Ok(true)
    }
    fn leave(&mut self) -> Result<(), Error> {
        Ok(())
    }
    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// The binary and compact protocols keep nothing a struct write changes.
impl RubyState for BinaryOut {}
impl RubyState for CompactOut {}

impl<E: Encoder + RubyState> FastSink<E> {
    /// Appends what has gathered to the transport's buffer.
    fn flush(&mut self) -> Result<(), Error> {
        let out = self.encoder.bytes();
        if self.lost.is_some() || out.is_empty() {
            return Ok(());
        }
        let result = self.target.append(out);
        out.clear();
        result
    }

    /// The last flush, and the protocol's state as the write leaves it (`ok`: it succeeded); the buffer goes back for
    /// the next call.
    pub fn finish(mut self, ok: bool) -> Result<(), Error> {
        let result = self.flush();
        let state = if ok {
            self.encoder.finish()
        } else {
            self.encoder.leave()
        };
        let out = std::mem::take(self.encoder.bytes());
        SCRATCH.with(|s| s.set(out));
        result.and(state)
    }
}

/// An encoder's error as the protocol's method would raise it.
fn core(result: Result<(), CoreError>) -> Result<(), Error> {
    result.map_err(|e| errors::from_core(&Ruby::get().expect("Ruby thread"), e))
}

/// Each method: the encoder, or the protocol's method once the buffer is lost.
macro_rules! encode_or_dispatch {
    ($self:ident, $dispatch:ident($($arg:expr),*), $encode:expr) => {
        match &mut $self.lost {
            Some(dispatch) => dispatch.$dispatch($($arg),*),
            None => $encode,
        }
    };
}

impl<E: Encoder + RubyState> Sink<VALUE, RubyField> for FastSink<E> {
    type Error = Error;

    #[inline(always)]
    fn native(&self) -> bool {
        self.lost.is_none()
    }

    /// Runs Ruby code with everything written so far in the transport, then picks the buffer up again.
    fn host<T>(&mut self, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        self.flush()?;
        let result = f();
        if self.lost.is_none() {
            match self.target.resume(self.trans) {
                Some(target) => self.target = target,
                None => {
                    self.encoder.leave()?;
                    self.lost = Some(DispatchSink::new(self.protocol));
                }
            }
        }
        result
    }

    #[inline(always)]
    fn struct_begin(&mut self, obj: VALUE) -> Result<i64, Error> {
        encode_or_dispatch!(self, struct_begin(obj), Ok(self.encoder.struct_begin()))
    }

    #[inline(always)]
    fn struct_end(&mut self, saved: i64) -> Result<(), Error> {
        encode_or_dispatch!(self, struct_end(saved), {
            self.encoder.struct_end(saved);
            Ok(())
        })
    }

    #[inline(always)]
    fn field_begin<C>(
        &mut self,
        field: &FieldDef<C, RubyField>,
        name: Option<VALUE>,
    ) -> Result<(), Error> {
        encode_or_dispatch!(
            self,
            field_begin(field, name),
            core(self.encoder.field_begin(field.ty.code, field.id))
        )
    }

    #[inline(always)]
    fn field_end(&mut self) -> Result<(), Error> {
        encode_or_dispatch!(self, field_end(), {
            self.encoder.field_end();
            Ok(())
        })
    }

    #[inline(always)]
    fn field_stop(&mut self) -> Result<(), Error> {
        encode_or_dispatch!(self, field_stop(), {
            self.encoder.field_stop();
            Ok(())
        })
    }

    #[inline(always)]
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), Error> {
        encode_or_dispatch!(
            self,
            map_begin(key, value, size),
            core(self.encoder.map_begin(key, value, size))
        )
    }

    #[inline(always)]
    fn map_end(&mut self) -> Result<(), Error> {
        encode_or_dispatch!(self, map_end(), {
            self.encoder.map_end();
            Ok(())
        })
    }

    #[inline(always)]
    fn list_begin(&mut self, seq: Sequence, element: i64, size: usize) -> Result<(), Error> {
        encode_or_dispatch!(
            self,
            list_begin(seq, element, size),
            core(self.encoder.list_begin(element, size))
        )
    }

    #[inline(always)]
    fn list_end(&mut self, seq: Sequence) -> Result<(), Error> {
        encode_or_dispatch!(self, list_end(seq), {
            self.encoder.list_end();
            Ok(())
        })
    }

    #[inline(always)]
    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) -> Result<(), Error> {
        encode_or_dispatch!(self, primitive(kind, p), {
            self.encoder.primitive(kind, p);
            Ok(())
        })
    }

    /// A value the protocol's own method converts and checks (nil, out of range, conversions): same checks, same
    /// exceptions, with what was written so far in the transport.
    fn value(&mut self, kind: Scalar, v: VALUE) -> Result<(), Error> {
        if let Some(dispatch) = &mut self.lost {
            return dispatch.value(kind, v);
        }
        let protocol = self.protocol;
        self.encoder.show()?;
        self.host(|| rb::funcall(protocol, write_method(kind).get(), &[v]))?;
        if self.lost.is_none() && !self.encoder.take_back()? {
            self.lost = Some(DispatchSink::new(self.protocol));
        }
        Ok(())
    }
}
