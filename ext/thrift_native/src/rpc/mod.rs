//! The Ruby around the codec in an RPC call, native: `client.rs` (`Thrift::Client`, the client's half of a call),
//! `processor.rs` (`Thrift::Processor`, the server's half) and `multiplexed.rs` (`Thrift::MultiplexedProcessor`);
//! `decorated.rs` sees through the protocol decorators, `direct.rs` calls our own protocol and transport methods
//! without dispatch, `method_ids.rs` looks a method's ID up from its name's bytes without making its Symbol.
//! What they use is here: the message types, Ruby's answers to `==`, `!=`, a multiple assignment and "is this method
//! still Ruby's own", and the message header read by our protocols without the objects the caller would drop.

mod client;
pub(crate) mod decorated;
mod direct;
mod method_ids;
mod multiplexed;
mod processor;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use magnus::{Error, Module, RModule, Ruby};
use rb_sys::{ID, VALUE};

use crate::protocols;
use crate::protocols::message_name::{MessageName, NameRead};
use crate::ruby::guard::{Guard, Watch};
use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{EQ, IVAR_PROTOCOL, NOT_EQ};
use crate::ruby::rb;
use crate::thrift::thrift;

pub(crate) use method_ids::existing_method_id;

/// `Thrift::MessageTypes`, read at load time.
pub(crate) struct MessageTypes {
    pub call: AtomicI64,
    pub reply: AtomicI64,
    pub exception: AtomicI64,
    pub oneway: AtomicI64,
}

static MESSAGE_TYPES: MessageTypes = MessageTypes {
    call: AtomicI64::new(1),
    reply: AtomicI64::new(2),
    exception: AtomicI64::new(3),
    oneway: AtomicI64::new(4),
};

pub(crate) fn message_types() -> &'static MessageTypes {
    &MESSAGE_TYPES
}

/// An Integer constant read at load time, as a VALUE.
pub(crate) fn k(v: &AtomicI64) -> VALUE {
    rb::integer(v.load(Ordering::Relaxed))
}

/// `a == b`, as Ruby answers it (Integers, and Strings while String#== is Ruby's, compared here).
pub(crate) fn equal(a: VALUE, b: VALUE) -> Result<bool, Error> {
    if let (Some(x), Some(y)) = (rb::fixnum_value(a), rb::fixnum_value(b)) {
        return Ok(x == y);
    }
    if let Some(same) = strings_equal(a, b, EQ.get()) {
        return Ok(same);
    }
    Ok(rb::truthy(rb::funcall(a, EQ.get(), &[b])?))
}

/// `a != b`, as Ruby answers it (Integers, and Strings while their `!=` is BasicObject's and `==` String's,
/// compared here).
pub(crate) fn not_equal(a: VALUE, b: VALUE) -> Result<bool, Error> {
    if let (Some(x), Some(y)) = (rb::fixnum_value(a), rb::fixnum_value(b)) {
        return Ok(x != y);
    }
    if let Some(same) = strings_equal(a, b, NOT_EQ.get()) {
        return Ok(!same);
    }
    Ok(rb::truthy(rb::funcall(a, NOT_EQ.get(), &[b])?))
}

/// String#== of two exact Strings (`rb_str_equal`: the same bytes in comparable encodings), where `method` (`==`
/// or `!=`, which calls `==`) is still Ruby's own for Strings. None otherwise.
fn strings_equal(a: VALUE, b: VALUE, method: ID) -> Option<bool> {
    let string = rb::string_class();
    if !rb::is_exact_instance(a, string)
        || !rb::is_exact_instance(b, string)
        || !basic(string, method)
        || !basic(string, EQ.get())
    {
        return None;
    }
    // SAFETY: two Strings on the caller's stack; rb_str_equal compares them without calling Ruby code.
    Some(rb::truthy(unsafe { rb_sys::rb_str_equal(a, b) }))
}

/// `ary << v` (`ary.shift` for [`ArrayCall::Shift`]) on an exact, unfrozen Array while the method is Ruby's own,
/// without a call; None otherwise.
pub(crate) fn array_call(ary: VALUE, call: ArrayCall) -> Option<VALUE> {
    // SAFETY: rb_cArray is set when Ruby boots and never changes.
    let array = unsafe { rb_sys::rb_cArray };
    let method = match call {
        ArrayCall::Push(_) => crate::ruby::names::APPEND.get(),
        ArrayCall::Shift => crate::ruby::names::SHIFT.get(),
    };
    if !rb::is_exact_instance(ary, array) || rb::is_frozen(ary) || !basic(array, method) {
        return None;
    }
    // SAFETY: `ary` is an unfrozen Array held by the caller: rb_ary_push and rb_ary_shift raise nothing else.
    Some(unsafe {
        match call {
            ArrayCall::Push(v) => rb_sys::rb_ary_push(ary, v),
            ArrayCall::Shift => rb_sys::rb_ary_shift(ary),
        }
    })
}

#[derive(Clone, Copy)]
pub(crate) enum ArrayCall {
    Push(VALUE),
    Shift,
}

/// `a, b, c = v`'s view of `v`: its elements when it is (or converts `to_ary` to) an Array, else `[v]`.
pub(crate) fn destructure(v: VALUE) -> Result<[VALUE; 3], Error> {
    // SAFETY: protected; rb_check_array_type may call `to_ary`.
    let ary = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_check_array_type(v) })?;
    if rb::is_nil(ary) {
        return Ok([v, rb::QNIL, rb::QNIL]);
    }
    // SAFETY: `ary` is an Array held on this stack; its entries are read at once.
    let len = unsafe { rb::array_len(ary) };
    let at = |i: usize| {
        if i >= len {
            return rb::QNIL;
        }
        // SAFETY: as above, an index below `len`.
        unsafe { rb::array_entry(ary, i) }
    };
    Ok([at(0), at(1), at(2)])
}

/// True when `method` of objects of `class` is the one Ruby defines (not redefined, no module in front of it).
pub(crate) fn basic(class: VALUE, method: ID) -> bool {
    // SAFETY: `class` is a live class; rb_method_basic_definition_p only looks the method up.
    unsafe { rb_sys::rb_method_basic_definition_p(class, method) != 0 }
}

/// Tripped by a change to `read_message_begin` of BinaryProtocolAccelerated, CompactProtocol, MultiplexedProtocol
/// or ProtocolDecorator.
static READ_BEGIN: Guard = Guard::new();
/// `@protocol` of a MultiplexedProtocol.
static DECORATED: IvarSite = IvarSite::new();
/// Thrift::MultiplexedProtocol, while its `read_message_begin` is ProtocolDecorator's (`@protocol.read_message_begin`);
/// 0 if it was not at load time.
static MULTIPLEXED_PROTOCOL: AtomicUsize = AtomicUsize::new(0);

/// `iprot.read_message_begin` read as our method reads it, with the name read as `name` says (no String and no
/// Array where the caller does not need them): for an exact BinaryProtocolAccelerated or CompactProtocol while that
/// method is ours, or an exact MultiplexedProtocol over one while its method is ProtocolDecorator's forwarder. None
/// for any other protocol, whose method the caller calls.
pub(crate) fn read_begin(iprot: VALUE, name: NameRead) -> Option<Result<(VALUE, i64, i32), Error>> {
    if !READ_BEGIN.intact() {
        return None;
    }
    // An exact MultiplexedProtocol passes the call on to the protocol it decorates.
    let multiplexed = MULTIPLEXED_PROTOCOL.load(Ordering::Relaxed) as VALUE;
    let iprot = if multiplexed != 0 && rb::is_exact_instance(iprot, multiplexed) {
        DECORATED.get(iprot, IVAR_PROTOCOL.get())
    } else {
        iprot
    };
    let ruby = Ruby::get().expect("called from a Ruby thread");
    if rb::is_exact_instance(iprot, protocols::binary::class()) {
        return Some(protocols::binary::message_begin(&ruby, iprot, name));
    }
    if rb::is_exact_instance(iprot, thrift().compact_protocol) {
        return Some(protocols::compact::message_begin(&ruby, iprot, name));
    }
    None
}

/// `name, type, seqid = iprot.read_message_begin` for a caller that needs the name only now and then: read
/// natively where [`read_begin`] may (the name kept as bytes), else the protocol's method (the name held as it
/// answers it). The type and the sequence id.
pub(crate) fn read_begin_keeping_name(
    iprot: VALUE,
    name: &mut MessageName,
) -> Result<(VALUE, VALUE), Error> {
    if let Some(begin) = read_begin(iprot, NameRead::InPlace(name)) {
        return begin.map(|(_, kind, seqid)| (rb::integer(kind), rb::integer(seqid.into())));
    }
    // A StoredMessageProtocol's (a MultiplexedProcessor's service processor) answers its `@message_begin`.
    let header = match decorated::stored_message_begin(iprot) {
        Some(header) => header,
        None => rb::funcall(iprot, crate::ruby::names::READ_MESSAGE_BEGIN.get(), &[])?,
    };
    let [fname, kind, seqid] = destructure(header)?;
    name.hold(fname);
    Ok((kind, seqid))
}

/// Defines the native methods of the RPC modules.
pub fn init(ruby: &Ruby) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::value::ReprValue;
    // SAFETY: the Thrift module is pinned at load time.
    let thrift_module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let types: RModule = thrift_module.const_get("MessageTypes")?;
    for (slot, name) in [
        (&MESSAGE_TYPES.call, "CALL"),
        (&MESSAGE_TYPES.reply, "REPLY"),
        (&MESSAGE_TYPES.exception, "EXCEPTION"),
        (&MESSAGE_TYPES.oneway, "ONEWAY"),
    ] {
        slot.store(types.const_get::<_, i64>(name)?, Ordering::Relaxed);
    }
    let multiplexed: magnus::RClass = thrift_module.const_get("MultiplexedProtocol")?;
    let decorator: RModule = thrift_module.const_get("ProtocolDecorator")?;
    let method: magnus::Value =
        multiplexed.funcall("instance_method", (ruby.to_symbol("read_message_begin"),))?;
    let owner: magnus::Value = method.funcall("owner", ())?;
    let watched = [
        protocols::binary::class(),
        thrift().compact_protocol,
        multiplexed.as_raw(),
        decorator.as_raw(),
    ];
    for class in watched {
        READ_BEGIN.watch(class, Watch::Methods(&["read_message_begin"]));
    }
    if owner.as_raw() == decorator.as_raw() {
        rb::pin_forever(multiplexed.as_raw());
        MULTIPLEXED_PROTOCOL.store(multiplexed.as_raw() as usize, Ordering::Relaxed);
    }
    decorated::init(ruby)?;
    direct::init()?;
    client::init(ruby)?;
    processor::init(ruby)?;
    multiplexed::init(ruby)
}
