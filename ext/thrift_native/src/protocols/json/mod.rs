//! `Thrift::JsonProtocol`'s read and write methods, native (the protocol is pure Ruby in every thrift; no C
//! accelerator covers it): defined on the class as CompactProtocol's are, each reading or writing the transport's
//! bytes directly when it can do so exactly as the library's method would, and calling that very method (kept when
//! this library loads) otherwise.
//!
//! Natively: the receiver is exactly a JsonProtocol (no subclass, no singleton class: either may have changed a helper
//! the library's methods call, such as `write_json_string`), none of the methods it relies on changed
//! (`state::protocol_context`), its state plain (`state.rs`), and the transport a plain MemoryBufferTransport (its
//! `@reader`'s, reading; or the read buffer of an exact FramedTransport or BufferedTransport, up to its end). Writes
//! take the values the core's encoder writes as the library does (Integers within Fixnum, Floats, valid UTF-8 Strings,
//! known type ids); reads take each step the core's reader does not decline. Everything else (another transport, a
//! mock, an odd value, bad input) is the library's own method, which gives its bytes, values and exceptions. Either way
//! the protocol's Ruby state is left as the library's method leaves it.

mod read;
pub mod state;
mod write;

use magnus::{Error, RClass, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::Originals;
use crate::ruby::{rb, registry};
use crate::thrift::thrift;

/// The library's own `name` called on `protocol`: where the native method does not apply.
fn original(protocol: VALUE, name: &str, args: &[VALUE]) -> Result<VALUE, Error> {
    ORIGINALS.call_named(name, protocol, args)
}

/// Declares the native methods once: their names (the library's methods kept in `ORIGINALS`) and `define`, which
/// defines each one the loaded library has.
macro_rules! native_methods {
    ($($name:literal => $f:path, $arity:tt;)*) => {
        const NAMES: &[&str] = &[$($name),*];
        static ORIGINALS: Originals<{ NAMES.len() }> = Originals::new([$($name),*]);

        fn define(ruby: &Ruby, class: RClass) -> Result<(), Error> {
            $(
                if ORIGINALS.kept($name) {
                    registry::define_method(ruby, class, $name, magnus::method!($f, $arity))?;
                }
            )*
            Ok(())
        }
    };
}

native_methods! {
    "write_message_begin" => write::write_message_begin, 3;
    "write_message_end" => write::write_message_end, 0;
    "write_struct_begin" => write::write_struct_begin, 1;
    "write_struct_end" => write::write_struct_end, 0;
    "write_field_begin" => write::write_field_begin, 3;
    "write_field_end" => write::write_field_end, 0;
    "write_field_stop" => write::write_field_stop, 0;
    "write_map_begin" => write::write_map_begin, 3;
    "write_map_end" => write::write_map_end, 0;
    "write_list_begin" => write::write_list_begin, 2;
    "write_list_end" => write::write_list_end, 0;
    "write_set_begin" => write::write_set_begin, 2;
    "write_set_end" => write::write_set_end, 0;
    "write_bool" => write::write_bool, 1;
    "write_byte" => write::write_byte, 1;
    "write_i16" => write::write_i16, 1;
    "write_i32" => write::write_i32, 1;
    "write_i64" => write::write_i64, 1;
    "write_double" => write::write_double, 1;
    "write_string" => write::write_string, 1;
    "write_binary" => write::write_binary, 1;
    "write_uuid" => write::write_uuid, 1;
    "read_message_begin" => read::read_message_begin, 0;
    "read_message_end" => read::read_message_end, 0;
    "read_struct_begin" => read::read_struct_begin, 0;
    "read_struct_end" => read::read_struct_end, 0;
    "read_field_begin" => read::read_field_begin, 0;
    "read_field_end" => read::read_field_end, 0;
    "read_map_begin" => read::read_map_begin, 0;
    "read_map_end" => read::read_map_end, 0;
    "read_list_begin" => read::read_list_begin, 0;
    "read_list_end" => read::read_list_end, 0;
    "read_set_begin" => read::read_set_begin, 0;
    "read_set_end" => read::read_set_end, 0;
    "read_bool" => read::read_bool, 0;
    "read_byte" => read::read_byte, 0;
    "read_i16" => read::read_i16, 0;
    "read_i32" => read::read_i32, 0;
    "read_i64" => read::read_i64, 0;
    "read_double" => read::read_double, 0;
    "read_string" => read::read_string, 0;
    "read_binary" => read::read_binary, 0;
    "read_uuid" => read::read_uuid, 0;
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    state::watch();
    ORIGINALS.keep(ruby, t.json.protocol, true)?;
    // SAFETY: JsonProtocol is pinned at load time.
    let class =
        RClass::from_value(unsafe { rb::value(t.json.protocol) }).expect("JsonProtocol is a class");
    define(ruby, class)
}
