//! `Thrift::JsonProtocol`'s read and write methods, native (the protocol is pure Ruby in every thrift; no C
//! accelerator covers it): defined on the class as CompactProtocol's are, each reading or writing the transport's
//! bytes directly when it can do so exactly as the library's method would, and calling that very method (kept when
//! this library loads) otherwise.
//!
//! Natively: the receiver is exactly a JsonProtocol (no subclass, no singleton class: either may have changed a
//! helper the library's methods call, such as `write_json_string`), none of the methods it relies on changed
//! (`state::protocol_context`), its state plain (`state.rs`), and the transport a plain MemoryBufferTransport (its
//! `@reader`'s, reading). Writes take the values the core's encoder writes as the library does (Integers within
//! Fixnum, Floats, valid UTF-8 Strings, known type ids); reads take each step the core's reader does not decline.
//! Everything else (another transport, a mock, an odd value, bad input) is the library's own method, which gives its
//! bytes, values and exceptions. Either way the protocol's Ruby state is left as the library's method leaves it.

mod read;
pub mod state;
mod write;

use std::sync::OnceLock;

use magnus::rb_sys::AsRawValue;
use magnus::value::ReprValue;
use magnus::{Error, RClass, Ruby, Value};
use rb_sys::VALUE;

use crate::ruby::names::BIND_CALL;
use crate::ruby::{rb, registry};
use crate::thrift::thrift;

/// The library's own methods, each an UnboundMethod kept (pinned) when this library loaded.
static ORIGINALS: OnceLock<Vec<(&'static str, VALUE)>> = OnceLock::new();

/// The library's own `name` called on `protocol`: where the native method does not apply.
fn original(protocol: VALUE, name: &str, args: &[VALUE]) -> Result<VALUE, Error> {
    let unbound = ORIGINALS
        .get()
        .and_then(|o| o.iter().find(|(n, _)| *n == name))
        .map(|&(_, m)| m)
        .expect("every native JsonProtocol method keeps the library's");
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(protocol);
    all.extend_from_slice(args);
    rb::funcall(unbound, BIND_CALL.get(), &all)
}

/// What the methods return as Ruby values.
fn value(v: VALUE) -> Value {
    // SAFETY: `v` is a live VALUE the method made or read (on the stack, or held by the protocol).
    unsafe { rb::value(v) }
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    // SAFETY: JsonProtocol is pinned at load time.
    let class =
        RClass::from_value(unsafe { rb::value(t.json.protocol) }).expect("JsonProtocol is a class");
    let mut originals = Vec::new();
    macro_rules! def {
        ($name:literal, $f:path, $arity:tt) => {
            let defined: bool = class.funcall("method_defined?", (ruby.to_symbol($name),))?;
            if defined {
                let m: Value = class.funcall("instance_method", (ruby.to_symbol($name),))?;
                rb::pin_forever(m.as_raw());
                originals.push(($name, m.as_raw()));
                registry::define_method(ruby, class, $name, magnus::method!($f, $arity))?;
            }
        };
    }
    def!("write_message_begin", write::write_message_begin, 3);
    def!("write_message_end", write::write_message_end, 0);
    def!("write_struct_begin", write::write_struct_begin, 1);
    def!("write_struct_end", write::write_struct_end, 0);
    def!("write_field_begin", write::write_field_begin, 3);
    def!("write_field_end", write::write_field_end, 0);
    def!("write_field_stop", write::write_field_stop, 0);
    def!("write_map_begin", write::write_map_begin, 3);
    def!("write_map_end", write::write_map_end, 0);
    def!("write_list_begin", write::write_list_begin, 2);
    def!("write_list_end", write::write_list_end, 0);
    def!("write_set_begin", write::write_set_begin, 2);
    def!("write_set_end", write::write_set_end, 0);
    def!("write_bool", write::write_bool, 1);
    def!("write_byte", write::write_byte, 1);
    def!("write_i16", write::write_i16, 1);
    def!("write_i32", write::write_i32, 1);
    def!("write_i64", write::write_i64, 1);
    def!("write_double", write::write_double, 1);
    def!("write_string", write::write_string, 1);
    def!("write_binary", write::write_binary, 1);
    def!("write_uuid", write::write_uuid, 1);
    def!("read_message_begin", read::read_message_begin, 0);
    def!("read_message_end", read::read_message_end, 0);
    def!("read_struct_begin", read::read_struct_begin, 0);
    def!("read_struct_end", read::read_struct_end, 0);
    def!("read_field_begin", read::read_field_begin, 0);
    def!("read_field_end", read::read_field_end, 0);
    def!("read_map_begin", read::read_map_begin, 0);
    def!("read_map_end", read::read_map_end, 0);
    def!("read_list_begin", read::read_list_begin, 0);
    def!("read_list_end", read::read_list_end, 0);
    def!("read_set_begin", read::read_set_begin, 0);
    def!("read_set_end", read::read_set_end, 0);
    def!("read_bool", read::read_bool, 0);
    def!("read_byte", read::read_byte, 0);
    def!("read_i16", read::read_i16, 0);
    def!("read_i32", read::read_i32, 0);
    def!("read_i64", read::read_i64, 0);
    def!("read_double", read::read_double, 0);
    def!("read_string", read::read_string, 0);
    def!("read_binary", read::read_binary, 0);
    def!("read_uuid", read::read_uuid, 0);
    let _ = ORIGINALS.set(originals);
    Ok(())
}
