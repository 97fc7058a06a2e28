//! thrift_native: a Rust drop-in for Apache Thrift's C accelerator.
//!
//! `Init_thrift_native` probes the loaded thrift library, then lets each file define its Ruby class's methods.
//! Nothing but a LoadError leaves Init: thrift's own `thrift/thrift_native.rb` rescues only LoadError.

#![warn(clippy::undocumented_unsafe_blocks)]

mod gzip_writer;
mod protocols;
mod ruby;
mod struct_codec;
mod thrift;
mod transports;

use magnus::{method, prelude::*, Error, RModule, Ruby, Value};

use crate::protocols::{
    binary as binary_protocol, compact as compact_protocol, json as json_protocol,
};
use crate::ruby::{ivars, registry};
use crate::struct_codec::field_plan;
use crate::transports::{header, layered, memory_buffer};

/// Called by lib/thrift_native.rb when Ruby code redefines, removes or prepends over a method of a class whose
/// fast path depends on it.
fn method_changed(_rb_self: Value, class: Value, name: String) {
    if class.as_raw() == thrift::thrift().memory_buffer {
        memory_buffer::method_changed(&name);
    } else if class.as_raw() == binary_protocol::class() {
        struct_codec::binary_method_changed();
    } else if class.as_raw() == thrift::thrift().compact_protocol {
        struct_codec::compact_method_changed();
    } else if class.as_raw() == thrift::thrift().binary_protocol {
        struct_codec::pure_binary_method_changed();
    } else if thrift::thrift()
        .header
        .as_ref()
        .is_some_and(|h| h.protocol == class.as_raw())
    {
        struct_codec::header_protocol_method_changed();
    } else if thrift::thrift().json.holds(class.as_raw()) {
        struct_codec::json_method_changed();
    } else {
        layered::method_changed(class.as_raw(), &name);
    }
}

/// Called by lib/thrift_native.rb when Ruby code changes a method of Zlib::Inflate or Zlib::Deflate.
fn zlib_changed(_rb_self: Value, class: Value) {
    header::zlib_changed(class.as_raw());
}

fn define_everything(ruby: &Ruby, namespace: RModule) -> Result<(), Error> {
    let found = thrift::probe(ruby)?;
    ivars::verify_layout(ruby);
    let features = ruby.hash_new();
    features.aset(ruby.to_symbol("uuid_type"), found.uuid_type)?;
    features.aset(ruby.to_symbol("uuid_type_defined"), found.has_uuid_type)?;
    features.aset(
        ruby.to_symbol("default_recursion_depth"),
        found.default_recursion_depth,
    )?;
    features.aset(
        ruby.to_symbol("transport_negative_size"),
        found.transport_negative_size,
    )?;
    let c = &found.contract;
    for (name, value) in [
        ("checked_binary_writes", c.checked_binary_writes),
        ("typed_errors", c.typed_errors),
        ("checked_compact_writes", c.checked_compact_writes),
        ("compact_unknown_type_errors", c.compact_unknown_type_errors),
        ("compact_header_codes", c.compact_header_codes),
        ("container_size_limit", c.container_size_limit),
        ("memory_buffer_fixes", c.memory_buffer_fixes),
        ("memory_buffer_read_all", c.memory_buffer_read_all),
        ("negative_sizes_refused", c.negative_sizes_refused),
        ("varint32_limit", c.varint32_limit),
        ("varint32_overflow_refused", c.varint32_overflow_refused),
        ("reused_structs_reset", c.reused_structs_reset),
        ("set_subclass_writes", c.set_subclass_writes),
        ("json_unknown_type_errors", c.json_unknown_type_errors),
        ("json_utf8_strings", c.json_utf8_strings),
    ] {
        features.aset(ruby.to_symbol(name), value)?;
    }
    features.freeze();
    namespace.const_set("THRIFT_FEATURES", features)?;
    registry::start(ruby, namespace)?;
    let defined = binary_protocol::init(ruby)
        .and_then(|_| compact_protocol::init(ruby))
        .and_then(|_| memory_buffer::init(ruby))
        .and_then(|_| layered::init(ruby))
        .and_then(|_| field_plan::init(ruby, namespace))
        .and_then(|_| struct_codec::init(ruby))
        .and_then(|_| json_protocol::init(ruby));
    registry::finish();
    defined?;
    gzip_writer::init(ruby, namespace)?;
    // Private: only lib/thrift_native.rb's hooks call them.
    let singleton = namespace.singleton_class()?;
    singleton.define_private_method("method_changed", method!(method_changed, 2))?;
    singleton.define_private_method("zlib_changed", method!(zlib_changed, 1))?;
    singleton.define_private_method("ivar_access", magnus::function!(ivars::access, 0))?;
    Ok(())
}

use magnus::rb_sys::AsRawValue;

#[magnus::init(name = "thrift_native")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let namespace = ruby.define_module("ThriftNative")?;
    define_everything(ruby, namespace).map_err(|e| {
        let message = format!(
            "thrift_native could not load: the thrift library is missing or unusable ({e})"
        );
        Error::new(ruby.exception_load_error(), message)
    })
}
