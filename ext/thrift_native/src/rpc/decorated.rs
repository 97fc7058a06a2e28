//! The RPC code's calls through a `Thrift::MultiplexedProtocol` (the client's) or `Thrift::StoredMessageProtocol`
//! (what MultiplexedProcessor hands the service's processor), both `ProtocolDecorator`s, without their Ruby frames:
//! - `MultiplexedProtocol#write_message_begin`, native: for a CALL or ONEWAY, `@protocol.write_message_begin(
//!   "#{@service_name}:#{name}", type, seqid)` (the name interpolated as Ruby interpolates it), else with `name`
//!   itself, as the library's `case type when MessageTypes::CALL, MessageTypes::ONEWAY`. A type that is no Integer
//!   (whose `===` Ruby code might answer), or an instance of a subclass, gets the library's method. Two UTF-8
//!   Strings bound for one of our protocols over a plain buffer are written from their bytes, without the joined
//!   String ([`write_joined`]).
//! - [`call`]: `prot.write_message_end`, `read_message_end` and `trans` made on `@protocol` where `prot` is an
//!   exact instance of one of the two and its method is ProtocolDecorator's forwarder (`@protocol.<method>`), so
//!   that the protocol's own method (ours, for the accelerated protocols) is called at once.
//!
//! - [`new_stored`]: `StoredMessageProtocol.new(protocol, message_begin)` without `new` and the two `initialize`
//!   frames (`@protocol`, then `@message_begin`, set in that order), and [`stored_message_begin`]: its
//!   `read_message_begin` (`@message_begin`), while the class, its singleton, ProtocolDecorator and BaseProtocol keep
//!   the library's methods ([`STORED_GUARD`]).
//!
//! Any change to those methods in either class or in ProtocolDecorator trips [`GUARD`]: then every call is made on
//! the decorator, as the library makes it.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Module, RModule, Ruby, Value};
use rb_sys::{ID, VALUE};

use super::message_types;
use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{
    IVAR_MESSAGE_BEGIN, IVAR_PROTOCOL, IVAR_SERVICE_NAME, NEW, READ_MESSAGE_END, TRANS,
    WRITE_MESSAGE_END,
};
use crate::ruby::{rb, registry};
use crate::thrift::thrift;

/// The decorator methods [`call`] passes on, by their place in [`Forwarded`].
const FORWARDED: [&str; 3] = ["write_message_end", "read_message_end", "trans"];
const WATCHED: [&str; 4] = [
    "write_message_begin",
    "write_message_end",
    "read_message_end",
    "trans",
];

/// `@protocol` of a decorator whose method forwards; `@message_begin` of a StoredMessageProtocol; a
/// MultiplexedProtocol's `@protocol` and `@service_name` when it writes a message header.
static DECORATED: IvarSite = IvarSite::new();
static MESSAGE_BEGIN: IvarSite = IvarSite::new();
static MULTIPLEXED_DECORATED: IvarSite = IvarSite::new();
static SERVICE_NAME: IvarSite = IvarSite::new();
static GUARD: Guard = Guard::new();
/// Tripped by any change to StoredMessageProtocol (its singleton too), BaseProtocol (the same) or ProtocolDecorator.
static STORED_GUARD: Guard = Guard::new();
static ORIGINALS: Originals<1> = Originals::new(["write_message_begin"]);
static MULTIPLEXED: AtomicUsize = AtomicUsize::new(0);
static STORED: AtomicUsize = AtomicUsize::new(0);
/// Per class, a bit per [`FORWARDED`] method that was ProtocolDecorator's forwarder at load time.
static MULTIPLEXED_FORWARDS: AtomicU8 = AtomicU8::new(0);
static STORED_FORWARDS: AtomicU8 = AtomicU8::new(0);
/// The `":"` of the interpolation, frozen and pinned (the library's literal, made once).
static COLON: AtomicUsize = AtomicUsize::new(0);

/// The decorator methods the RPC code calls.
#[derive(Clone, Copy)]
pub(crate) enum Forwarded {
    WriteMessageEnd = 0,
    ReadMessageEnd = 1,
    Trans = 2,
}

impl Forwarded {
    fn id(self) -> ID {
        match self {
            Forwarded::WriteMessageEnd => WRITE_MESSAGE_END.get(),
            Forwarded::ReadMessageEnd => READ_MESSAGE_END.get(),
            Forwarded::Trans => TRANS.get(),
        }
    }
}

/// `prot.<method>`: on `@protocol` where `prot` would only pass the call on to it (see the top of this file).
pub(crate) fn call(prot: VALUE, method: Forwarded) -> Result<VALUE, Error> {
    let target = undecorated(prot, method);
    if let Some(answer) = super::direct::forwarded(target, method) {
        return Ok(answer);
    }
    rb::funcall(target, method.id(), &[])
}

fn undecorated(prot: VALUE, method: Forwarded) -> VALUE {
    if !GUARD.intact() {
        return prot;
    }
    let Some(class) = rb::heap_class(prot) else {
        return prot;
    };
    let forwards = if class == MULTIPLEXED.load(Ordering::Relaxed) as VALUE {
        MULTIPLEXED_FORWARDS.load(Ordering::Relaxed)
    } else if class == STORED.load(Ordering::Relaxed) as VALUE {
        STORED_FORWARDS.load(Ordering::Relaxed)
    } else {
        return prot;
    };
    if forwards & (1 << method as u8) == 0 {
        return prot;
    }
    DECORATED.get(prot, IVAR_PROTOCOL.get())
}

/// `StoredMessageProtocol.new(protocol, message_begin)`.
pub(crate) fn new_stored(protocol: VALUE, message_begin: VALUE) -> Result<VALUE, Error> {
    let class = STORED.load(Ordering::Relaxed) as VALUE;
    if !STORED_GUARD.intact() {
        return rb::funcall(class, NEW.get(), &[protocol, message_begin]);
    }
    // SAFETY: `class` is the pinned StoredMessageProtocol, a plain Ruby class (allocates a T_OBJECT).
    let stored = unsafe { rb_sys::rb_obj_alloc(class) };
    rb::ivar_set_unfrozen(stored, IVAR_PROTOCOL.get(), protocol);
    rb::ivar_set_unfrozen(stored, IVAR_MESSAGE_BEGIN.get(), message_begin);
    Ok(stored)
}

/// `prot.read_message_begin` of an exact StoredMessageProtocol, while it is the library's (`@message_begin`).
pub(crate) fn stored_message_begin(prot: VALUE) -> Option<VALUE> {
    if !STORED_GUARD.intact()
        || !rb::is_exact_instance(prot, STORED.load(Ordering::Relaxed) as VALUE)
    {
        return None;
    }
    Some(MESSAGE_BEGIN.get(prot, IVAR_MESSAGE_BEGIN.get()))
}

/// `MultiplexedProtocol#write_message_begin(name, type, seqid)`.
fn write_message_begin(
    rb_self: Value,
    name: Value,
    kind: Value,
    seqid: Value,
) -> Result<Value, Error> {
    let (this, name, kind, seqid) = (
        rb_self.as_raw(),
        name.as_raw(),
        kind.as_raw(),
        seqid.as_raw(),
    );
    let kind_code = rb::fixnum_value(kind);
    if !GUARD.intact()
        || !rb::is_exact_instance(this, MULTIPLEXED.load(Ordering::Relaxed) as VALUE)
        || kind_code.is_none()
    {
        return ORIGINALS
            .call(0, this, &[name, kind, seqid])
            .map(rb::returned);
    }
    let types = message_types();
    let kind_code = kind_code.unwrap_or_default();
    let protocol = MULTIPLEXED_DECORATED.get(this, IVAR_PROTOCOL.get());
    let name = if kind_code == types.call.load(Ordering::Relaxed)
        || kind_code == types.oneway.load(Ordering::Relaxed)
    {
        let service = SERVICE_NAME.get(this, IVAR_SERVICE_NAME.get());
        if let Some(written) = write_joined(protocol, service, name, kind_code, seqid) {
            return written.map(rb::returned);
        }
        rb::interpolate(&[service, COLON.load(Ordering::Relaxed) as VALUE, name])?
    } else {
        name
    };
    super::direct::write_message_begin(protocol, name, kind, seqid).map(rb::returned)
}

/// The header with the name `"#{service}:#{name}"` written from the two Strings' bytes, without the joined String,
/// where both are exact UTF-8 Strings (the interpolation is then their bytes joined, tagged UTF-8, which the
/// protocol writes as they are) and the protocol writes to a plain buffer (see direct.rs). None otherwise.
fn write_joined(
    protocol: VALUE,
    service: VALUE,
    name: VALUE,
    kind: i64,
    seqid: VALUE,
) -> Option<Result<VALUE, Error>> {
    let string = rb::string_class();
    let utf8 = |s| rb::is_exact_instance(s, string) && crate::thrift::bytes::is_utf8_string(s);
    if !utf8(service) || !utf8(name) {
        return None;
    }
    let seqid = rb::fixnum_value(seqid)?;
    // SAFETY: both are Strings on the caller's stack; the callee copies their bytes before any Ruby code runs.
    let pieces = unsafe { [rb::str_bytes(service), b":".as_slice(), rb::str_bytes(name)] };
    super::direct::write_joined_message_begin(protocol, pieces, kind, seqid)
}

/// The bits of the [`FORWARDED`] methods that `class` has from ProtocolDecorator.
fn forwards(ruby: &Ruby, class: magnus::RClass, decorator: RModule) -> Result<u8, Error> {
    use magnus::value::ReprValue;
    let mut bits = 0;
    for (i, name) in FORWARDED.iter().enumerate() {
        let method: Value = class.funcall("instance_method", (ruby.to_symbol(name),))?;
        let owner: Value = method.funcall("owner", ())?;
        if owner.as_raw() == decorator.as_raw() {
            bits |= 1 << i;
        }
    }
    Ok(bits)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    // SAFETY: the Thrift module is pinned at load time.
    let thrift_module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let multiplexed: magnus::RClass = thrift_module.const_get("MultiplexedProtocol")?;
    let stored: magnus::RClass = thrift_module.const_get("StoredMessageProtocol")?;
    let decorator: RModule = thrift_module.const_get("ProtocolDecorator")?;
    MULTIPLEXED_FORWARDS.store(forwards(ruby, multiplexed, decorator)?, Ordering::Relaxed);
    STORED_FORWARDS.store(forwards(ruby, stored, decorator)?, Ordering::Relaxed);
    for (slot, class) in [(&MULTIPLEXED, multiplexed), (&STORED, stored)] {
        rb::pin_forever(class.as_raw());
        slot.store(class.as_raw() as usize, Ordering::Relaxed);
    }
    for class in [multiplexed.as_raw(), stored.as_raw(), decorator.as_raw()] {
        GUARD.watch(class, Watch::Methods(&WATCHED));
    }
    let base: magnus::RClass = thrift_module.const_get("BaseProtocol")?;
    STORED_GUARD.watch(stored.as_raw(), Watch::EveryWithSingleton);
    STORED_GUARD.watch(base.as_raw(), Watch::EveryWithSingleton);
    STORED_GUARD.watch(decorator.as_raw(), Watch::Every);
    let colon = rb::utf8_string(b":");
    // SAFETY: `colon` is a new String on this stack.
    unsafe { rb_sys::rb_obj_freeze(colon) };
    rb::pin_forever(colon);
    COLON.store(colon as usize, Ordering::Relaxed);
    ORIGINALS.keep(ruby, multiplexed.as_raw(), false)?;
    registry::define_method(
        ruby,
        multiplexed,
        "write_message_begin",
        magnus::method!(write_message_begin, 3),
    )
}
