//! Which of a struct or union class's methods are still the library's own: the native `initialize` and the decoder's
//! allocation of nested structs reproduce those methods, so they apply only to a class that keeps them.
//!
//! A class may override them when it is defined, or later (a monkey patch, RSpec's `allow_any_instance_of`). The
//! answer is kept with the class's field plan and asked again after lib/thrift_native.rb's hooks report a method
//! change in a hooked class (`guard::method_changes`): struct classes get those hooks when they include
//! `Thrift::Struct` (directly or through a module), unions inherit them from `Thrift::Union`. The RPC code asks too,
//! before it runs `new`, `read` or `write` without a call (`calls.rs`). Not reported, and so not seen once a class
//! was checked: a method added later to a module the class already includes, a change to
//! `Kernel#instance_variable_set` itself or in `Object`, a module prepended to `Thrift`'s singleton class.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard;
use crate::ruby::names::{INSTANCE_METHOD, OWNER, RESPOND_TO_P};
use crate::ruby::rb;
use crate::thrift::thrift;

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found(u8);

impl Found {
    const INITIALIZE: u8 = 1;
    const COLLABORATORS: u8 = 2;
    const CODEC: u8 = 4;
    const SETTERS: u8 = 8;
    const EMPTY_VALIDATE: u8 = 16;

    /// `initialize` is Thrift::Struct's (or Thrift::Union's): a new instance can be made without running Ruby code.
    pub fn plain_initialize(self) -> bool {
        self.0 & Self::INITIALIZE != 0
    }

    /// `read` and `write` are Thrift::Struct's (or Thrift::Union's): ours, which may be run without a call.
    pub fn plain_codec(self) -> bool {
        self.0 & Self::CODEC != 0
    }

    /// Every field's setter is the one thrift_native's `Struct.field_accessor` defines
    /// (lib/thrift_native/field_setters.rb): `Thrift.check_type` when type checking, then `instance_variable_set`.
    pub fn plain_setters(self) -> bool {
        self.0 & Self::SETTERS != 0
    }

    /// `validate` is a Ruby method that does nothing (`def validate; end`, what the compiler generates for a struct
    /// with nothing to check): calling it can be left out.
    pub fn empty_validate(self) -> bool {
        self.0 & Self::EMPTY_VALIDATE != 0
    }

    /// `fields_with_default_values`, `name_to_id` and `instance_variable_set` are the library's (Thrift::Struct's,
    /// Thrift::Struct_Union's, Kernel's): what `Thrift::Struct#initialize` calls.
    pub fn plain_collaborators(self) -> bool {
        self.0 & Self::COLLABORATORS != 0
    }
}

/// A class's answer, and the count of method changes it was found at.
#[derive(Debug)]
pub struct Owners {
    checked_at: AtomicU64,
    found: AtomicU8,
}

impl Owners {
    pub const fn new() -> Self {
        Owners {
            checked_at: AtomicU64::new(u64::MAX),
            found: AtomicU8::new(0),
        }
    }

    /// The answer, if it is still current (no method changed since it was found).
    #[inline]
    pub fn known(&self) -> Option<Found> {
        (self.checked_at.load(Ordering::Relaxed) == guard::method_changes())
            .then(|| Found(self.found.load(Ordering::Relaxed)))
    }

    /// The answer for `class` (the class this is kept for, whose fields `names` names), looked up again (Ruby calls)
    /// if a method changed since.
    #[inline]
    pub fn of(
        &self,
        class: VALUE,
        is_union: bool,
        names: impl FnOnce() -> Vec<VALUE>,
    ) -> Result<Found, Error> {
        let now = guard::method_changes();
        if self.checked_at.load(Ordering::Relaxed) == now {
            return Ok(Found(self.found.load(Ordering::Relaxed)));
        }
        let found = look_up(class, is_union, names)?;
        // A change reported while looking up leaves `now` behind the count: the next call looks again.
        self.found.store(found.0, Ordering::Relaxed);
        self.checked_at.store(now, Ordering::Relaxed);
        Ok(found)
    }
}

/// `class.instance_method(name).owner == owner`; false for a method the class undefined (NameError).
fn owned_by(class: VALUE, name: &str, owner: VALUE) -> Result<bool, Error> {
    let method = match rb::funcall(class, INSTANCE_METHOD.get(), &[rb::symbol(name)]) {
        Ok(method) => method,
        Err(e) if e.is_kind_of(Ruby::get().expect("Ruby thread").exception_name_error()) => {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    Ok(rb::funcall(method, OWNER.get(), &[])? == owner)
}

/// `ThriftNative.<helper>(*args)`, a private helper of lib/thrift_native*.rb, where it has loaded (false before).
fn ask_helper(helper: &str, args: &[VALUE]) -> Result<bool, Error> {
    // SAFETY: protected; rb_cObject is set when Ruby boots (the extension defined ThriftNative when it loaded).
    let namespace = magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_const_get(rb_sys::rb_cObject, rb::intern("ThriftNative"))
    })?;
    let defined = rb::funcall(
        namespace,
        RESPOND_TO_P.get(),
        &[rb::symbol(helper), rb::QTRUE],
    )?;
    if !rb::truthy(defined) {
        return Ok(false);
    }
    Ok(rb::truthy(rb::funcall(
        namespace,
        rb::intern(helper),
        args,
    )?))
}

/// `ThriftNative.plain_setters?(class, names)` (lib/thrift_native/field_setters.rb).
fn plain_setters(class: VALUE, names: Vec<VALUE>) -> Result<bool, Error> {
    let ruby = Ruby::get().expect("Ruby thread");
    let names = ruby.ary_from_iter(names.into_iter().map(|n| {
        // SAFETY: a field's name, held by the class's plan.
        unsafe { rb::value(n) }
    }));
    ask_helper("plain_setters?", &[class, names.as_raw()])
}

#[cold]
fn look_up(
    class: VALUE,
    is_union: bool,
    names: impl FnOnce() -> Vec<VALUE>,
) -> Result<Found, Error> {
    let t = thrift();
    let mut found = 0;
    let plain_owner = if is_union { t.union } else { t.struct_module };
    if owned_by(class, "initialize", plain_owner)? {
        found |= Found::INITIALIZE;
    }
    if owned_by(class, "read", plain_owner)? && owned_by(class, "write", plain_owner)? {
        found |= Found::CODEC;
    }
    if !is_union
        && owned_by(class, "fields_with_default_values", t.struct_module)?
        && owned_by(class, "name_to_id", t.struct_union)?
        && owned_by(class, "instance_variable_set", t.kernel)?
    {
        found |= Found::COLLABORATORS;
    }
    if !is_union && plain_setters(class, names())? {
        found |= Found::SETTERS;
    }
    if ask_helper("empty_validate?", &[class])? {
        found |= Found::EMPTY_VALIDATE;
    }
    Ok(Found(found))
}
