//! thrift_native: a Rust drop-in for Apache Thrift's C accelerator.
//!
//! `Init_thrift_native` probes the loaded thrift library, then lets each file define its Ruby class's methods.
//! Nothing but a LoadError leaves Init: thrift's own `thrift/thrift_native.rb` rescues only LoadError.

#![warn(clippy::undocumented_unsafe_blocks)]

mod explain;
mod gzip_reader;
mod gzip_writer;
mod protocols;
mod rpc;
mod ruby;
mod struct_codec;
mod thrift;
mod transports;

use magnus::{method, prelude::*, Error, RModule, Ruby, Value};

use crate::protocols::{
    binary as binary_protocol, compact as compact_protocol, json as json_protocol,
};
use crate::ruby::{guard, ivars, registry};
use crate::struct_codec::field_plan;
use crate::thrift::contract::Contract;

/// Called by lib/thrift_native.rb's hooks when Ruby code changes a method of a class a fast path relies on (or of a
/// subclass of one): `ruby::guard` trips the guards watching that class.
fn method_changed(_rb_self: Value, class: Value, name: String) {
    guard::method_changed(class.as_raw(), &name);
}

/// The classes lib/thrift_native.rb hooks: `[[class, singleton_methods_too], ...]`.
fn watched_classes(ruby: &Ruby, _rb_self: Value) -> Result<magnus::RArray, Error> {
    guard::watched_classes(ruby)
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
    for (name, value) in found.contract.features() {
        features.aset(ruby.to_symbol(name), value)?;
    }
    features.freeze();
    namespace.const_set("THRIFT_FEATURES", features)?;
    let names = ruby.ary_from_iter(Contract::NAMES.iter().map(|n| ruby.to_symbol(n)));
    names.freeze();
    namespace.const_set("CONTRACT_FEATURES", names)?;
    registry::start(ruby, namespace)?;
    let defined = binary_protocol::init(ruby)
        .and_then(|_| compact_protocol::init(ruby))
        .and_then(|_| protocols::plain_binary::init(ruby))
        .and_then(|_| transports::init(ruby))
        .and_then(|_| field_plan::init(ruby, namespace))
        .and_then(|_| struct_codec::init(ruby))
        .and_then(|_| json_protocol::init(ruby))
        .and_then(|_| rpc::init(ruby));
    registry::finish();
    defined?;
    gzip_writer::init(ruby, namespace)?;
    gzip_reader::init(ruby, namespace)?;
    // Private: only lib/thrift_native.rb's hooks call them.
    let singleton = namespace.singleton_class()?;
    singleton.define_private_method("method_changed", method!(method_changed, 2))?;
    singleton.define_private_method("watched_classes", method!(watched_classes, 0))?;
    singleton.define_private_method("ivar_access", magnus::function!(ivars::access, 0))?;
    singleton.define_private_method("explain_facts", method!(explain::facts, 1))?;
    singleton.define_private_method("strio_access", magnus::function!(ruby::strio::access, 0))?;
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
