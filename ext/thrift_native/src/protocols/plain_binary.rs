//! `Thrift::BinaryProtocol`'s methods, native: the plain binary protocol that `BinaryProtocolFactory`, the
//! Serializer and the Deserializer give, pure Ruby in every thrift (the C accelerator has only its subclass
//! BinaryProtocolAccelerated).
//!
//! Each method does natively what the library's does only where that is certain to be the same, and calls the
//! library's own method (kept at load time) for everything else, so that results, bytes and exceptions are the loaded
//! version's by construction, whatever it checks and raises:
//! - the receiver is exactly a BinaryProtocol (a subclass or a singleton class may have changed a method the
//!   library's methods call), and none of the methods it relies on has changed (`GUARD`: BinaryProtocol's own,
//!   BaseProtocol's `trans`, `Thrift::Bytes`' and `Thrift::UUID`'s);
//! - a read takes bytes from a buffer read in place (a plain MemoryBufferTransport, an exact FramedTransport's or
//!   BufferedTransport's read buffer, a StringIO an HTTPClientTransport, IOStreamTransport or HeaderTransport lends)
//!   only when the buffer holds all of them and they make a value every version reads alike (no negative size, a
//!   known version word): it moves past them as the library's calls on the transport would (`read_byte`,
//!   `read_into_buffer`, `read_all`, one per value). Anything else (the end of the bytes, a negative size, a bad
//!   version, `strict_read`'s refusal, master's `reset_message_size`) is the library's method from where the read
//!   began, nothing consumed;
//! - a write appends to a buffer written in place only the arguments every version writes alike (Fixnums in range,
//!   Floats, UTF-8 Strings for strings, BINARY ones for binaries, UUID text), and answers what the transport's
//!   `write` would; nil, a Bignum, another type or encoding is the library's method, which checks, converts and
//!   raises as that version does.
//!
//! Not kept: `@rbuf`, the library's scratch String for fixed-width reads, is not written by a read taken in place.
//!
//! Here: the guard, the kept methods and the opt-out; `read.rs` and `write.rs`, the methods.
//!
//! `THRIFT_NATIVE_BINARY_PROTOCOL=ruby` in the environment when the extension loads keeps the library's methods and
//! the struct codec's dispatch to them (`disabled_reason` says so).

use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, Ruby, Value};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::IVAR_TRANS;
use crate::ruby::{rb, registry};
use crate::thrift::thrift;
use crate::transports::io::WriteTarget;

mod read;
mod write;

use read::*;
use write::*;

/// `@trans` of exact BinaryProtocol instances.
pub static TRANS: IvarSlot = IvarSlot::new();

/// Tripped once Ruby code changes a method the native methods rely on, or at load by the opt-out: every method calls
/// the library's from then on, and the struct codec dispatches to them.
static GUARD: Guard = Guard::new();

/// The environment variable whose value `ruby` keeps the library's methods.
const OPT_OUT: &str = "THRIFT_NATIVE_BINARY_PROTOCOL";

/// Why an exact BinaryProtocol is not served natively, for `ThriftNative.explain`; None while it is.
pub fn disabled_reason() -> Option<&'static str> {
    if GUARD.intact() {
        return None;
    }
    Some(if opted_out() {
        "THRIFT_NATIVE_BINARY_PROTOCOL=ruby was set when thrift_native loaded"
    } else {
        "a method of Thrift::BinaryProtocol (or BaseProtocol#trans, Thrift::Bytes, Thrift::UUID) was redefined"
    })
}

fn opted_out() -> bool {
    std::env::var(OPT_OUT).is_ok_and(|v| v == "ruby")
}

/// `trans` of `protocol` when it is exactly a BinaryProtocol served natively.
#[inline(always)]
pub fn exact_trans(protocol: VALUE) -> Option<VALUE> {
    (rb::is_exact_instance(protocol, thrift().binary_protocol) && GUARD.intact())
        .then(|| TRANS.get(protocol))
}

/// Where `this`'s writes may be appended in place, when it is exactly a BinaryProtocol served natively.
#[inline(always)]
pub(super) fn target(this: VALUE) -> Option<WriteTarget> {
    WriteTarget::of(exact_trans(this)?)
}

/// The library's own `read_byte` on `protocol`: the struct codec's byte past a buffer's end, which it converts from
/// what `trans.read_byte` answers its own way.
pub fn original_read_byte(protocol: VALUE) -> Result<VALUE, Error> {
    ORIGINALS.call_named("read_byte", protocol, &[])
}

/// The library's own `name` called on `this`: where the native method does not apply.
fn original(this: VALUE, name: &str, args: &[VALUE]) -> Result<Value, Error> {
    ORIGINALS.call_named(name, this, args).map(rb::returned)
}

/// Declares the native methods once: their names (the library's methods kept in `ORIGINALS`) and `define`, which
/// defines each one the loaded library has.
macro_rules! native_methods {
    ($($name:literal => $f:path, $arity:tt;)*) => {
        static ORIGINALS: Originals<{ [$($name),*].len() }> = Originals::new([$($name),*]);

        /// Defines each method BinaryProtocol itself defines: one it inherits (BaseProtocol's `*_end` methods) stays
        /// inherited, so that a change to BaseProtocol still reaches it.
        fn define(ruby: &Ruby, class: RClass) -> Result<(), Error> {
            $(
                if ORIGINALS.kept($name) && defined_by(ruby, class, $name)? {
                    registry::define_method(ruby, class, $name, magnus::method!($f, $arity))?;
                }
            )*
            Ok(())
        }
    };
}

native_methods! {
    "write_message_begin" => write_message_begin, 3;
    "write_message_end" => nothing, 0;
    "write_struct_begin" => nothing1, 1;
    "write_struct_end" => nothing, 0;
    "write_field_begin" => write_field_begin, 3;
    "write_field_end" => nothing, 0;
    "write_field_stop" => write_field_stop, 0;
    "write_map_begin" => write_map_begin, 3;
    "write_map_end" => nothing, 0;
    "write_list_begin" => write_list_begin, 2;
    "write_list_end" => nothing, 0;
    "write_set_begin" => write_set_begin, 2;
    "write_set_end" => nothing, 0;
    "write_bool" => write_bool, 1;
    "write_byte" => write_byte, 1;
    "write_i16" => write_i16, 1;
    "write_i32" => write_i32, 1;
    "write_i64" => write_i64, 1;
    "write_double" => write_double, 1;
    "write_string" => write_string, 1;
    "write_binary" => write_binary, 1;
    "write_uuid" => write_uuid, 1;
    "read_message_begin" => read_message_begin, 0;
    "read_message_end" => nothing, 0;
    "read_struct_begin" => nothing, 0;
    "read_struct_end" => nothing, 0;
    "read_field_begin" => read_field_begin, 0;
    "read_field_end" => nothing, 0;
    "read_map_begin" => read_map_begin, 0;
    "read_map_end" => nothing, 0;
    "read_list_begin" => read_list_begin, 0;
    "read_list_end" => nothing, 0;
    "read_set_begin" => read_set_begin, 0;
    "read_set_end" => nothing, 0;
    "read_bool" => read_bool, 0;
    "read_byte" => read_byte, 0;
    "read_i16" => read_i16, 0;
    "read_i32" => read_i32, 0;
    "read_i64" => read_i64, 0;
    "read_double" => read_double, 0;
    "read_string" => read_string, 0;
    "read_binary" => read_binary, 0;
    "read_uuid" => read_uuid, 0;
}

/// Whether `class` defines the method `name` itself (not inherited).
fn defined_by(ruby: &Ruby, class: RClass, name: &str) -> Result<bool, Error> {
    use magnus::value::ReprValue;
    let method: Value = class.funcall("instance_method", (ruby.to_symbol(name),))?;
    let owner: Value = method.funcall("owner", ())?;
    Ok(owner.as_raw() == class.as_raw())
}

/// `write_struct_begin`, `read_struct_begin` and the `*_end` methods BinaryProtocol defines: nil, as the library's
/// (every version's) answer.
fn nothing(_rb_self: Value) {}

fn nothing1(_rb_self: Value, _arg: Value) {}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    if opted_out() {
        GUARD.trip();
        return Ok(());
    }
    TRANS.configure(t.binary_protocol, IVAR_TRANS.get());
    ORIGINALS.keep(ruby, t.binary_protocol, true)?;
    GUARD.watch(t.binary_protocol, Watch::Every);
    GUARD.watch(t.json.base, Watch::Methods(&["trans"]));
    GUARD.watch(t.bytes, Watch::EveryWithSingleton);
    if let Some(uuid) = t.uuid_module {
        GUARD.watch(uuid, Watch::EveryWithSingleton);
    }
    // SAFETY: BinaryProtocol is pinned at load time.
    let class = RClass::from_value(unsafe { rb::value(t.binary_protocol) })
        .expect("BinaryProtocol is a class");
    define(ruby, class)
}
