//! [`RubyBuilder`]'s scalars: the Ruby values the core's decoders make for Thrift's base types (Integers, Floats, UTF-8
//! or BINARY Strings, UUID text), and its errors as Ruby exceptions. JsonProtocol's native reads make their values with
//! it; the struct codec adds structs and containers (`struct_codec/build.rs`).

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::codec::Values;
use thrift_native_core::{uuid, CoreError};

use super::errors;
use crate::ruby::rb;

pub struct RubyBuilder<'r> {
    pub(crate) ruby: &'r Ruby,
    /// UUIDs as UTF-8 text, as the plain BinaryProtocol's `read_uuid` (`UUID.uuid_from_bytes`, interpolated) makes
    /// them; else BINARY, as the C accelerator's.
    pub utf8_uuids: bool,
}

impl<'r> RubyBuilder<'r> {
    pub fn new(ruby: &'r Ruby) -> Self {
        RubyBuilder {
            ruby,
            utf8_uuids: false,
        }
    }
}

impl Values for RubyBuilder<'_> {
    type Value = VALUE;
    type Error = Error;

    fn error(&self, e: CoreError) -> Error {
        errors::from_core(self.ruby, e)
    }

    #[inline(always)]
    fn nil(&mut self) -> VALUE {
        rb::QNIL
    }

    #[inline(always)]
    fn bool(&mut self, v: bool) -> VALUE {
        if v {
            rb::QTRUE
        } else {
            rb::QFALSE
        }
    }

    #[inline(always)]
    fn byte(&mut self, v: i8) -> VALUE {
        rb::integer(v.into())
    }

    #[inline(always)]
    fn i16(&mut self, v: i16) -> VALUE {
        rb::integer(v.into())
    }

    #[inline(always)]
    fn i32(&mut self, v: i32) -> VALUE {
        rb::integer(v.into())
    }

    #[inline(always)]
    fn i64(&mut self, v: i64) -> VALUE {
        rb::integer(v)
    }

    #[inline(always)]
    fn double(&mut self, v: f64) -> VALUE {
        rb::float(v)
    }

    #[inline(always)]
    fn string(&mut self, bytes: &[u8]) -> VALUE {
        rb::utf8_string(bytes)
    }

    #[inline(always)]
    fn binary(&mut self, bytes: &[u8]) -> VALUE {
        rb::binary_string(bytes)
    }

    /// The lowercase dashed text, as the protocol's `read_uuid` (BINARY, or UTF-8: `utf8_uuids`).
    #[inline(always)]
    fn uuid(&mut self, bytes: &[u8; 16]) -> VALUE {
        let text = uuid::format(bytes);
        if self.utf8_uuids {
            rb::utf8_string(&text)
        } else {
            rb::binary_string(&text)
        }
    }
}
