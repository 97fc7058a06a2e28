//! The JSON fast path of `Struct#write` and `Union#write`: the core's `JsonOut` writes into the transport's buffer
//! the bytes the protocol's Ruby methods write.
//!
//! The protocol keeps its contexts in Ruby objects (`@context`, and the `@contexts` stack); the encoder keeps them
//! natively, starting from the one the struct is written in and storing that one's flags back at the end. A value the
//! encoder leaves to the protocol's own method (a String in another encoding, an Integer out of range, nil) is
//! written by that method with the encoder's contexts shown to it as Ruby objects, then taken back; after a failure,
//! or once the transport is no longer plain, they stay shown, as the Ruby methods would have left them. Other Ruby
//! code the write runs (`validate`, `Set#entries`, a union's `name_to_id`) sees the contexts as the write found them.

use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::codec::{Encoder, Primitive, Scalar};
use thrift_native_core::json::{Context, JsonOut};
use thrift_native_core::CoreError;

use super::super::fast::RubyState;
use crate::protocols::json::state::{context_of, contexts, protocol_context, show_contexts, store};
use crate::ruby::names::{IVAR_CONTEXT, IVAR_TRANS};
use crate::ruby::rb;
use crate::thrift::thrift;

/// The JSON encoder of a struct written through `protocol`.
pub struct JsonEncoder {
    out: JsonOut,
    protocol: VALUE,
    /// The context object the struct is written in (`@context` when the write began).
    parent: VALUE,
    /// The encoder's contexts are shown in the protocol's ivars (and pushed on its `@contexts`).
    shown: bool,
    /// They stay shown: the protocol's Ruby methods go on from them (the transport was lost, or the write failed).
    left: bool,
}

impl JsonEncoder {
    /// The transport and the context the struct is written in, when the fast path may write it: an exact
    /// JsonProtocol whose Ruby methods (and its contexts') are the library's, its `@contexts` an Array and its
    /// `@context` exactly one of the context classes, none of them frozen (the Ruby methods would fail at once).
    pub fn eligible(protocol: VALUE) -> Option<(VALUE, VALUE, Context)> {
        let (parent, context) = protocol_context(protocol)?;
        Some((rb::ivar_get(protocol, IVAR_TRANS.get()), parent, context))
    }

    pub fn new(out: Vec<u8>, protocol: VALUE, parent: VALUE, context: Context) -> Self {
        JsonEncoder {
            out: JsonOut::new(out, context, thrift().has_uuid_type),
            protocol,
            parent,
            shown: false,
            left: false,
        }
    }
}

impl RubyState for JsonEncoder {
    /// The parent takes the state of the outermost context, the ones opened since are pushed on `@contexts` as new
    /// objects, and `@context` is the current one.
    fn show(&mut self) -> Result<(), Error> {
        if self.shown {
            return Ok(());
        }
        self.shown = true;
        show_contexts(
            self.protocol,
            self.parent,
            self.out.stack(),
            self.out.context(),
        )
    }

    /// The current context's state from `@context`, then `@contexts` and `@context` as they were.
    fn take_back(&mut self) -> Result<bool, Error> {
        if !self.shown || self.left {
            return Ok(!self.left);
        }
        let current = rb::ivar_get(self.protocol, IVAR_CONTEXT.get());
        let Some(c) = context_of(current) else {
            // Ruby code gave the protocol a context of its own: its methods go on from it.
            self.left = true;
            return Ok(false);
        };
        self.shown = false;
        self.out.set_context(c);
        let contexts = contexts(self.protocol)?;
        for _ in 0..self.out.stack().len() {
            // SAFETY: `contexts` is an Array (checked).
            unsafe { rb::ary_pop(contexts)? };
        }
        rb::ivar_set(self.protocol, IVAR_CONTEXT.get(), self.parent)?;
        Ok(true)
    }

    fn leave(&mut self) -> Result<(), Error> {
        self.show()?;
        self.left = true;
        Ok(())
    }

    /// The parent context advanced past the struct.
    fn finish(&mut self) -> Result<(), Error> {
        if self.shown {
            return Ok(());
        }
        store(self.parent, self.out.context())
    }
}

impl Encoder for JsonEncoder {
    #[inline(always)]
    fn bytes(&mut self) -> &mut Vec<u8> {
        self.out.bytes()
    }

    fn struct_begin(&mut self) -> i64 {
        self.out.struct_begin()
    }

    fn struct_end(&mut self, saved: i64) {
        self.out.struct_end(saved);
    }

    fn field_begin(&mut self, ttype: i64, id: i64) -> Result<(), CoreError> {
        self.out.field_begin(ttype, id)
    }

    fn field_end(&mut self) {
        self.out.field_end();
    }

    fn field_stop(&mut self) {
        self.out.field_stop();
    }

    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), CoreError> {
        self.out.map_begin(key, value, size)
    }

    fn map_end(&mut self) {
        self.out.map_end();
    }

    fn list_begin(&mut self, element: i64, size: usize) -> Result<(), CoreError> {
        self.out.list_begin(element, size)
    }

    fn list_end(&mut self) {
        self.out.list_end();
    }

    #[inline(always)]
    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) {
        self.out.primitive(kind, p);
    }
}
