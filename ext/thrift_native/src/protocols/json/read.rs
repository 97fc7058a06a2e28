//! JsonProtocol's read methods: each a step of the core's reader over its `@reader`'s plain MemoryBufferTransport
//! (or exact Framed or BufferedTransport, within the bytes its read buffer holds),
//! from the current context and the byte the reader holds, then the state stored back as the library's method leaves
//! it (contexts pushed as new objects or popped, the reader's held byte, the buffer cut where `read(1)` calls would
//! cut it). A step the reader declines is the library's method, from the same state.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Ruby, Value};
use rb_sys::VALUE;
use thrift_native_core::codec::Scalar;
use thrift_native_core::json::JsonIn;

use super::original;
use super::state::{contexts, Reading};
use crate::ruby::names::IVAR_CONTEXT;
use crate::ruby::rb;
use crate::thrift::values::RubyBuilder;
use crate::transports::buffer::ReadBuffer;
use crate::transports::layered::LayeredBuffer;
use crate::transports::memory_buffer::MemoryBuffer;

/// Runs `step` over the unread bytes; when it completes, the bytes taken, the held byte and the contexts are stored
/// (a step that opens contexts pushes them as new objects).
fn step<T, B: ReadBuffer>(
    mut reading: Reading<B>,
    step: impl FnOnce(&mut JsonIn, &[u8]) -> Option<(T, usize)>,
) -> Result<Option<T>, Error> {
    let Some((v, n)) = step(&mut reading.json, reading.buffer.unread()) else {
        return Ok(None);
    };
    reading.buffer.advance_bytewise(n)?;
    reading.show()?;
    Ok(Some(v))
}

/// `step` natively when the protocol allows and the reader does not decline, else the library's method.
fn read_with(
    protocol: Value,
    name: &str,
    step: impl FnOnce(&mut JsonIn, &[u8]) -> Option<(VALUE, usize)>,
) -> Result<Value, Error> {
    let p = protocol.as_raw();
    if let Some(reading) = Reading::<MemoryBuffer>::new(p) {
        if let Some(v) = self::step(reading, step)? {
            return Ok(rb::returned(v));
        }
    } else if let Some(reading) = Reading::<LayeredBuffer>::new(p) {
        if let Some(v) = self::step(reading, step)? {
            return Ok(rb::returned(v));
        }
    }
    original(p, name, &[]).map(rb::returned)
}

/// A header Array, as the library's methods return them (no Rust allocation on the way).
fn array<const N: usize>(ruby: &Ruby, items: [VALUE; N]) -> VALUE {
    // SAFETY: the items are on this stack (the caller's array) until the Array holds them.
    ruby.ary_new_from_values(&items.map(|v| unsafe { rb::value(v) }))
        .as_raw()
}

pub fn read_message_begin(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    read_with(rb_self, "read_message_begin", |json, bytes| {
        let ((name, t, seqid), n) = json.message_begin(bytes, &mut RubyBuilder::new(ruby))?;
        Some((array(ruby, [name, rb::integer(t), rb::integer(seqid)]), n))
    })
}

pub fn read_struct_begin(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    read_with(rb_self, "read_struct_begin", |json, bytes| {
        json.struct_begin(bytes).map(|n| (rb::QNIL, n))
    })
}

/// `[nil, type, id]`; at the object's end `[nil, STOP, nil]` with its `}` held.
pub fn read_field_begin(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    read_with(rb_self, "read_field_begin", |json, bytes| {
        let (h, n) = json.field_begin(bytes)?;
        let id = h.id.map_or(rb::QNIL, rb::integer);
        Some((array(ruby, [rb::QNIL, rb::integer(h.ttype), id]), n))
    })
}

pub fn read_map_begin(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    read_with(rb_self, "read_map_begin", |json, bytes| {
        let (h, n) = json.map_begin(bytes)?;
        let size = rb::integer(h.size as i64);
        Some((
            array(ruby, [rb::integer(h.key), rb::integer(h.value), size]),
            n,
        ))
    })
}

fn list_begin(ruby: &Ruby, protocol: Value, name: &str) -> Result<Value, Error> {
    read_with(protocol, name, |json, bytes| {
        let (h, n) = json.list_begin(bytes)?;
        let items = [rb::integer(h.element), rb::integer(h.size as i64)];
        Some((array(ruby, items), n))
    })
}

pub fn read_list_begin(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    list_begin(ruby, rb_self, "read_list_begin")
}

pub fn read_set_begin(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    list_begin(ruby, rb_self, "read_set_begin")
}

/// The brackets read natively (`read_json_syntax_char` each), if the protocol allows and they are there.
fn brackets<B: ReadBuffer>(protocol: VALUE, brackets: &[u8]) -> Result<Option<()>, Error> {
    match Reading::<B>::new(protocol) {
        Some(reading) => step(reading, |json, bytes| {
            json.syntax(bytes, brackets).map(|n| ((), n))
        }),
        None => Ok(None),
    }
}

/// An `*_end`: for each bracket, `read_json_syntax_char`, then `pop_context` (`@context = @contexts.pop`).
fn end(protocol: Value, name: &str, expected: &[u8]) -> Result<Value, Error> {
    let p = protocol.as_raw();
    let read = match brackets::<MemoryBuffer>(p, expected)? {
        Some(()) => Some(()),
        None => brackets::<LayeredBuffer>(p, expected)?,
    };
    if read.is_none() {
        return original(p, name, &[]).map(rb::returned);
    }
    let stack = contexts(p)?;
    for _ in expected {
        // SAFETY: `stack` is an Array (checked).
        let popped = unsafe { rb::ary_pop(stack)? };
        rb::ivar_set(p, IVAR_CONTEXT.get(), popped)?;
    }
    Ok(rb::returned(rb::QNIL))
}

pub fn read_message_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_message_end", b"]")
}

pub fn read_struct_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_struct_end", b"}")
}

pub fn read_field_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_field_end", b"}")
}

pub fn read_map_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_map_end", b"}]")
}

pub fn read_list_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_list_end", b"]")
}

pub fn read_set_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "read_set_end", b"]")
}

fn scalar(ruby: &Ruby, protocol: Value, name: &str, kind: Scalar) -> Result<Value, Error> {
    read_with(protocol, name, |json, bytes| {
        json.scalar(kind, bytes, &mut RubyBuilder::new(ruby))
    })
}

pub fn read_bool(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_bool", Scalar::Bool)
}

pub fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_byte", Scalar::Byte)
}

pub fn read_i16(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_i16", Scalar::I16)
}

pub fn read_i32(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_i32", Scalar::I32)
}

pub fn read_i64(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_i64", Scalar::I64)
}

pub fn read_double(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_double", Scalar::Double)
}

pub fn read_string(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_string", Scalar::String)
}

pub fn read_binary(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_binary", Scalar::Binary)
}

pub fn read_uuid(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    scalar(ruby, rb_self, "read_uuid", Scalar::Uuid)
}
