//! Defines native methods and records them in `ThriftNative::NATIVE_METHODS` ({class => [method names]}), so that
//! Ruby can tell which accelerator is active (see `ThriftNative.active?` in lib/thrift_native.rb).

use std::cell::Cell;

use magnus::method::Method;
use magnus::prelude::*;
use magnus::rb_sys::AsRawValue;
use magnus::{Error, Module, RHash, Ruby, Value};

thread_local! {
    // The hash lives in a constant of ThriftNative, which keeps it alive; this is only a handle to it during init.
    static NATIVE_METHODS: Cell<Option<rb_sys::VALUE>> = const { Cell::new(None) };
}

pub fn start(ruby: &Ruby, namespace: magnus::RModule) -> Result<(), Error> {
    let hash = ruby.hash_new();
    namespace.const_set("NATIVE_METHODS", hash)?;
    NATIVE_METHODS.with(|h| h.set(Some(hash.as_raw())));
    Ok(())
}

pub fn finish() {
    NATIVE_METHODS.with(|h| h.set(None));
}

pub fn define_method<M: Method>(
    ruby: &Ruby,
    class: impl Module,
    name: &str,
    method: M,
) -> Result<(), Error> {
    class.define_method(name, method)?;
    record(ruby, class, name)
}

/// The same, for a method that is private in the library (master's `Thrift::Client#write_message`, say).
pub fn define_private_method<M: Method>(
    ruby: &Ruby,
    class: impl Module,
    name: &str,
    method: M,
) -> Result<(), Error> {
    class.define_private_method(name, method)?;
    record(ruby, class, name)
}

fn record(ruby: &Ruby, class: impl Module, name: &str) -> Result<(), Error> {
    let class = class.as_value();
    let Some(raw) = NATIVE_METHODS.with(|h| h.get()) else {
        return Ok(());
    };
    // SAFETY: the Hash is held by the ThriftNative::NATIVE_METHODS constant.
    let hash = RHash::from_value(unsafe { crate::ruby::rb::value(raw) })
        .expect("NATIVE_METHODS is a Hash");
    let names: Value = match hash.get(class) {
        Some(names) => names,
        None => {
            let names = ruby.ary_new();
            hash.aset(class, names)?;
            names.as_value()
        }
    };
    let names = magnus::RArray::from_value(names).expect("an Array of names");
    names.push(ruby.to_symbol(name))
}
