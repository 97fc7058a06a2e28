//! JsonProtocol's write methods: the bytes the library's methods write, appended to a plain MemoryBufferTransport's
//! buffer at once, and the contexts left as they leave them (a `*_begin` pushes new context objects, an `*_end` pops
//! before it writes its bracket). `write_struct_begin` and `write_map_begin` return the context they pushed (the
//! library's `push_context` is their last call); the others nil, as the library's do over that transport, whose
//! `write` returns nil. (Over a Framed or BufferedTransport, whose `write` returns the write buffer, some of the
//! library's methods return that buffer: those writes stay the library's.)

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Ruby, Value};
use rb_sys::VALUE;
use thrift_native_core::json::{type_name, Context, JsonOut};

use super::original;
use super::state::{contexts, protocol_context, show_contexts};
use crate::ruby::names::{IVAR_CONTEXT, IVAR_TRANS};
use crate::ruby::rb;
use crate::thrift::bytes;
use crate::thrift::thrift;
use crate::transports::memory_buffer;

/// A write through the core's encoder, from the protocol's current context.
struct Writer {
    protocol: VALUE,
    buf: VALUE,
    parent: VALUE,
    out: JsonOut,
}

impl Writer {
    fn new(protocol: VALUE) -> Option<Self> {
        let (parent, context) = protocol_context(protocol)?;
        let trans = rb::ivar_get(protocol, IVAR_TRANS.get());
        let buf = memory_buffer::plain_write_buffer(trans).filter(|&b| !rb::is_frozen(b))?;
        Some(Writer {
            protocol,
            buf,
            parent,
            out: JsonOut::new(Vec::new(), context, thrift().has_uuid_type),
        })
    }

    /// The bytes appended, the contexts stored: the current one (`@context`, pushed ones new objects).
    fn finish(self) -> Result<VALUE, Error> {
        rb::str_cat(self.buf, &self.out.out)?;
        show_contexts(
            self.protocol,
            self.parent,
            self.out.stack(),
            self.out.context(),
        )?;
        Ok(rb::ivar_get(self.protocol, IVAR_CONTEXT.get()))
    }
}

/// Writes natively with `write` when the protocol and the arguments allow (`write` says whether they do), else
/// calls the library's method; `returns_context`: the method returns the context it pushed.
fn with_writer(
    protocol: Value,
    name: &str,
    args: &[Value],
    returns_context: bool,
    write: impl FnOnce(&mut JsonOut) -> Option<()>,
) -> Result<Value, Error> {
    let p = protocol.as_raw();
    if let Some(mut w) = Writer::new(p) {
        if write(&mut w.out).is_some() {
            let context = w.finish()?;
            return Ok(rb::returned(if returns_context {
                context
            } else {
                rb::QNIL
            }));
        }
    }
    let args: Vec<VALUE> = args.iter().map(|a| a.as_raw()).collect();
    original(p, name, &args).map(rb::returned)
}

/// An Integer the encoder writes as `Integer#to_s` does.
fn fixnum(v: Value) -> Option<i64> {
    rb::fixnum_value(v.as_raw())
}

/// Text the encoder escapes as `write_json_string` does: a valid UTF-8 String (its bytes borrowed until `f`
/// returns; `f` runs no Ruby code).
fn with_text<R>(v: Value, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    let s = v.as_raw();
    if !bytes::is_valid_utf8_string(s) {
        return None;
    }
    // SAFETY: a String, read before any Ruby code runs.
    Some(f(unsafe { rb::str_bytes(s) }))
}

fn known(t: i64) -> Option<&'static [u8]> {
    type_name(t, thrift().has_uuid_type)
}

pub fn write_message_begin(
    _ruby: &Ruby,
    rb_self: Value,
    name: Value,
    message_type: Value,
    seqid: Value,
) -> Result<Value, Error> {
    let args = [name, message_type, seqid];
    with_writer(rb_self, "write_message_begin", &args, false, |out| {
        let (t, id) = (fixnum(message_type)?, fixnum(seqid)?);
        with_text(name, |n| out.message_begin(n, t, id))
    })
}

pub fn write_struct_begin(_ruby: &Ruby, rb_self: Value, name: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_struct_begin", &[name], true, |out| {
        out.open(b'{', Context::OBJECT);
        Some(())
    })
}

pub fn write_field_begin(
    _ruby: &Ruby,
    rb_self: Value,
    name: Value,
    ttype: Value,
    id: Value,
) -> Result<Value, Error> {
    with_writer(
        rb_self,
        "write_field_begin",
        &[name, ttype, id],
        false,
        |out| {
            let type_name = known(fixnum(ttype)?)?;
            out.integer(fixnum(id)?);
            out.open(b'{', Context::OBJECT);
            out.string(type_name);
            Some(())
        },
    )
}

pub fn write_field_stop(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_field_stop", &[], false, |_| Some(()))
}

pub fn write_map_begin(
    _ruby: &Ruby,
    rb_self: Value,
    key: Value,
    val: Value,
    size: Value,
) -> Result<Value, Error> {
    with_writer(rb_self, "write_map_begin", &[key, val, size], true, |out| {
        let (k, v, n) = (known(fixnum(key)?)?, known(fixnum(val)?)?, fixnum(size)?);
        out.open(b'[', Context::ARRAY);
        out.string(k);
        out.string(v);
        out.integer(n);
        out.open(b'{', Context::OBJECT);
        Some(())
    })
}

fn list_begin(protocol: Value, name: &str, element: Value, size: Value) -> Result<Value, Error> {
    with_writer(protocol, name, &[element, size], false, |out| {
        let (e, n) = (known(fixnum(element)?)?, fixnum(size)?);
        out.open(b'[', Context::ARRAY);
        out.string(e);
        out.integer(n);
        Some(())
    })
}

pub fn write_list_begin(
    _ruby: &Ruby,
    rb_self: Value,
    element: Value,
    size: Value,
) -> Result<Value, Error> {
    list_begin(rb_self, "write_list_begin", element, size)
}

pub fn write_set_begin(
    _ruby: &Ruby,
    rb_self: Value,
    element: Value,
    size: Value,
) -> Result<Value, Error> {
    list_begin(rb_self, "write_set_begin", element, size)
}

/// An `*_end`: for each bracket, `pop_context` (`@context = @contexts.pop`), then the bracket.
fn end(protocol: Value, name: &str, brackets: &[u8]) -> Result<Value, Error> {
    let p = protocol.as_raw();
    let writable = protocol_context(p).and_then(|_| {
        let trans = rb::ivar_get(p, IVAR_TRANS.get());
        memory_buffer::plain_write_buffer(trans).filter(|&b| !rb::is_frozen(b))
    });
    let Some(buf) = writable else {
        return original(p, name, &[]).map(rb::returned);
    };
    let stack = contexts(p)?;
    for _ in brackets {
        // SAFETY: `stack` is an Array (checked).
        let popped = unsafe { rb::ary_pop(stack)? };
        rb::ivar_set(p, IVAR_CONTEXT.get(), popped)?;
    }
    rb::str_cat(buf, brackets)?;
    Ok(rb::returned(rb::QNIL))
}

pub fn write_message_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_message_end", b"]")
}

pub fn write_struct_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_struct_end", b"}")
}

pub fn write_field_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_field_end", b"}")
}

pub fn write_map_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_map_end", b"}]")
}

pub fn write_list_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_list_end", b"]")
}

pub fn write_set_end(_ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    end(rb_self, "write_set_end", b"]")
}

/// `write_json_integer(b ? 1 : 0)`: any value, by truthiness.
pub fn write_bool(_ruby: &Ruby, rb_self: Value, b: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_bool", &[b], false, |out| {
        out.integer(i64::from(rb::truthy(b.as_raw())));
        Some(())
    })
}

fn integer(protocol: Value, name: &str, n: Value) -> Result<Value, Error> {
    with_writer(protocol, name, &[n], false, |out| {
        out.integer(fixnum(n)?);
        Some(())
    })
}

pub fn write_byte(_ruby: &Ruby, rb_self: Value, n: Value) -> Result<Value, Error> {
    integer(rb_self, "write_byte", n)
}

pub fn write_i16(_ruby: &Ruby, rb_self: Value, n: Value) -> Result<Value, Error> {
    integer(rb_self, "write_i16", n)
}

pub fn write_i32(_ruby: &Ruby, rb_self: Value, n: Value) -> Result<Value, Error> {
    integer(rb_self, "write_i32", n)
}

pub fn write_i64(_ruby: &Ruby, rb_self: Value, n: Value) -> Result<Value, Error> {
    integer(rb_self, "write_i64", n)
}

pub fn write_double(_ruby: &Ruby, rb_self: Value, f: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_double", &[f], false, |out| {
        out.double(rb::float_of(f.as_raw())?);
        Some(())
    })
}

pub fn write_string(_ruby: &Ruby, rb_self: Value, s: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_string", &[s], false, |out| {
        with_text(s, |text| out.string(text))
    })
}

/// `write_json_base64` of a String's bytes, whatever its encoding.
pub fn write_binary(_ruby: &Ruby, rb_self: Value, s: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_binary", &[s], false, |out| {
        let s = s.as_raw();
        if !rb::is_string(s) {
            return None;
        }
        // SAFETY: a String, read before any Ruby code runs.
        out.base64(unsafe { rb::str_bytes(s) });
        Some(())
    })
}

/// thrift 0.23 on: a valid UUID's text, lowercase (`write_json_string(uuid.downcase)`).
pub fn write_uuid(_ruby: &Ruby, rb_self: Value, u: Value) -> Result<Value, Error> {
    with_writer(rb_self, "write_uuid", &[u], false, |out| {
        let parsed = with_text(u, thrift_native_core::uuid::parse)?.ok()?;
        out.string(&thrift_native_core::uuid::format(&parsed));
        Some(())
    })
}
