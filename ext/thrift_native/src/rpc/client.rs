//! `Thrift::Client`'s methods, native: the client's half of a call without the Ruby frames of the library's methods,
//! the block of `args.each`, or the two Strings of each `data.send("#{k}=", v)`.
//!
//! Each native method makes the calls the loaded version's Ruby method makes, in its order, on the same receivers,
//! each dispatched (`rb_funcall`): the protocol's methods, `args_class.new`, the argument setters, `data.write`, and
//! the client's own methods it calls (`send_message_args`, `handle_exception`, `next_seqid!`, ...), so that a
//! subclass, a mock or a redefined method sees what it sees with the library. Four versions of client.rb
//! ([`Flavor`], probed at load time): 0.14/0.17 (`receive_message` reads the message begin and calls
//! `handle_exception`), 0.19 (`receive_message_begin` and `reply_seqid` beside it), 0.24 (sequence ids in
//! `@pending_seqids` and `validate_message_begin`, sent by 0.19's methods), master (private `write_message`, which
//! also closes the transport after a failed send).
//!
//! The arguments: an exact Hash whose `each` is Hash's is walked live (`rb_hash_foreach`, as `each` walks it: a
//! setter that adds a key raises as in Ruby); anything else gets the library's own method. Each setter `"#{k}="` is
//! looked up as an existing method name (`rb_check_id_cstr`, what `send` with a String does) for a Symbol or String
//! key whose `to_s` is its class's, and called directly when `data.send` is Kernel's; any other key, or a name no
//! method has, goes through `send` with the String the library makes.
//!
//! One call is not dispatched: 0.14's `receive_message` keeps only the type of `@iprot.read_message_begin`, which,
//! where that is our own method on an exact protocol, is read without the name String and the Array it drops.

mod own;
mod seqids;

use seqids::{
    dequeue_pending_seqid, dequeue_pending_seqid_of, next_seqid, next_seqid_of, push_pending,
};

use std::sync::atomic::{AtomicI64, AtomicU8, AtomicUsize, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Module, RModule, Ruby, Value};
use rb_sys::{ID, VALUE};

use super::decorated::Forwarded;
use super::{basic, destructure, equal, k, message_types, not_equal};
use crate::protocols::message_name::NameRead;
use crate::ruby::guard::Originals;
use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{
    CLOSE, DEQUEUE_PENDING_SEQID, EACH_ID, HANDLE_EXCEPTION, IVAR_IPROT, IVAR_OPROT, IVAR_SEQID,
    NEW, NEXT_SEQID, RAISE_APPLICATION_EXCEPTION, READ, READ_MESSAGE_BEGIN, SEND,
    SEND_MESSAGE_ARGS, TO_S, TRANS, WRITE_MESSAGE,
};
use crate::ruby::{rb, registry};
use crate::struct_codec::calls::{self, Made, ReusedArgs};
use crate::thrift::thrift;

/// Which client.rb the loaded thrift has.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Flavor {
    /// 0.14-0.17: `receive_message` reads the message begin and calls `handle_exception`.
    V014 = 0,
    /// 0.19: `receive_message_begin`, `reply_seqid`; `receive_message` reads only the result.
    V019 = 1,
    /// master: private `write_message`, `@pending_seqids`, `validate_message_begin`.
    Master = 2,
    /// 0.24: `next_seqid!`, `@pending_seqids`, `validate_message_begin`; `send_message` and `send_oneway_message`
    /// write the message begin and call 0.19's `send_message_args`.
    V024 = 3,
}

static FLAVOR: AtomicU8 = AtomicU8::new(0);

fn flavor() -> Flavor {
    match FLAVOR.load(Ordering::Relaxed) {
        1 => Flavor::V019,
        2 => Flavor::Master,
        3 => Flavor::V024,
        _ => Flavor::V014,
    }
}

/// The library's constants, read at load time.
struct Constants {
    invalid_message_type: AtomicI64,
    wrong_method_name: AtomicI64,
    bad_sequence_id: AtomicI64,
    min_seqid: AtomicI64,
    max_seqid: AtomicI64,
    application_exception: AtomicUsize,
}

static K: Constants = Constants {
    invalid_message_type: AtomicI64::new(2),
    wrong_method_name: AtomicI64::new(3),
    bad_sequence_id: AtomicI64::new(4),
    min_seqid: AtomicI64::new(i32::MIN as i64),
    max_seqid: AtomicI64::new(i32::MAX as i64),
    application_exception: AtomicUsize::new(0),
};

/// The library's methods that the native ones hand a call they do not take to.
const FALLBACK: [&str; 2] = ["send_message_args", "write_message"];
const SEND_MESSAGE_ARGS_M: usize = 0;
const WRITE_MESSAGE_M: usize = 1;
static ORIGINALS: Originals<2> = Originals::new(FALLBACK);
/// The client's ivars that a call reads, each through its own site.
static OPROT: IvarSite = IvarSite::new();
static IPROT: IvarSite = IvarSite::new();
static SEQID: IvarSite = IvarSite::new();
static PENDING_SEQIDS: IvarSite = IvarSite::new();

/// The client's own methods the native methods call on `self`, run without a call where they are ours
/// ([`own::own_methods`]).
#[derive(Clone, Copy)]
enum SelfCall {
    WriteMessage,
    NextSeqid,
    SendMessageArgs,
    HandleException,
    DequeuePendingSeqid,
    RaiseApplicationException,
}

impl SelfCall {
    fn id(self) -> ID {
        match self {
            SelfCall::WriteMessage => WRITE_MESSAGE.get(),
            SelfCall::NextSeqid => NEXT_SEQID.get(),
            SelfCall::SendMessageArgs => SEND_MESSAGE_ARGS.get(),
            SelfCall::HandleException => HANDLE_EXCEPTION.get(),
            SelfCall::DequeuePendingSeqid => DEQUEUE_PENDING_SEQID.get(),
            SelfCall::RaiseApplicationException => RAISE_APPLICATION_EXCEPTION.get(),
        }
    }
}

/// `self.<call>(*args)`: our method's work at once where the client's class keeps Thrift::Client's methods, else
/// dispatched.
fn call_self(this: VALUE, call: SelfCall, args: &[VALUE]) -> Result<VALUE, Error> {
    if !own::own_methods(this) {
        return rb::funcall(this, call.id(), args);
    }
    match (call, args) {
        (SelfCall::WriteMessage, &[a, b, c, d]) => write_message_master(this, &[a, b, c, d]),
        (SelfCall::NextSeqid, []) => next_seqid_of(this),
        (SelfCall::SendMessageArgs, &[args_class, arguments]) => {
            send_message_args_v014(this, args_class, arguments)
        }
        (SelfCall::HandleException, &[mtype]) => handle_exception_of(this, mtype),
        (SelfCall::DequeuePendingSeqid, []) => dequeue_pending_seqid_of(this),
        (SelfCall::RaiseApplicationException, []) => Err(raise_application_exception(this)),
        _ => rb::funcall(this, call.id(), args),
    }
}

fn ivar(this: VALUE, site: &'static IvarSite, id: &rb::StaticId) -> VALUE {
    site.get(this, id.get())
}

/// True when `args.each { |k, v| ... }` can be walked here: an exact Hash whose `each` is Hash's.
fn plain_hash(args: VALUE) -> bool {
    rb::is_exact_instance(args, rb::hash_class()) && basic(rb::hash_class(), EACH_ID.get())
}

/// The method name `"#{key}="` for a key whose `to_s` is its class's own (a static Symbol, an exact String), if a
/// method of that name can exist (its Symbol does): what `send` would call. 0 otherwise.
fn setter_id(key: VALUE) -> Result<ID, Error> {
    let name = if rb::is_static_symbol(key) && basic(rb::symbol_class(), TO_S.get()) {
        // SAFETY: rb_sym2str of a static Symbol answers its frozen name without allocating.
        unsafe { rb_sys::rb_sym2str(key) }
    } else if rb::is_exact_instance(key, rb::string_class())
        && basic(rb::string_class(), TO_S.get())
    {
        key
    } else {
        return Ok(0);
    };
    // SAFETY: `name` is a String on this stack; its bytes are copied out before anything else runs.
    let bytes = unsafe { rb::str_bytes(name) };
    if bytes.len() > 255 {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()] = b'=';
    // SAFETY: `name` is a String on this stack; rb_enc_get reads its encoding.
    let enc = unsafe { rb_sys::rb_enc_get(name) };
    super::existing_method_id(&buf[..bytes.len() + 1], enc)
}

/// `data.send("#{k}=", v)` (0.14-0.19: `"#{k.to_s}="`).
fn set_argument(data: VALUE, own_send: bool, key: VALUE, value: VALUE) -> Result<(), Error> {
    let id = if own_send { setter_id(key)? } else { 0 };
    if id != 0 {
        return rb::funcall(data, id, &[value]).map(drop);
    }
    // The library's way: a new String, through `send`.
    let name = if flavor() == Flavor::Master {
        key
    } else {
        rb::funcall(key, TO_S.get(), &[])?
    };
    let setter = rb::interpolate(&[name, rb::utf8_string(b"=")])?;
    rb::funcall(data, SEND.get(), &[setter, value]).map(drop)
}

/// The arguments' struct: the args class's reused instance where nothing could tell it from a new one
/// (struct_codec/calls.rs), else a new one.
enum ArgsData {
    Reused(ReusedArgs),
    Made(Made),
}

impl ArgsData {
    fn write(&mut self, prot: VALUE) -> Result<(), Error> {
        match self {
            ArgsData::Reused(r) => r.write(prot),
            ArgsData::Made(m) => m.write(prot),
        }
    }
}

/// `data = args_class.new; args.each { |k, v| data.send("#{k}=", v) }`.
fn args_data(args_class: VALUE, args: VALUE) -> Result<ArgsData, Error> {
    if let Some(reused) = ReusedArgs::fill(args_class, args)? {
        return Ok(ArgsData::Reused(reused));
    }
    make_args(args_class, args).map(ArgsData::Made)
}

/// `data = args_class.new; args.each { |k, v| data.send("#{k}=", v) }`, walking the live Hash as `each` does.
fn make_args(args_class: VALUE, args: VALUE) -> Result<Made, Error> {
    let data = calls::new_instance(args_class)?;
    let obj = data.obj;
    let own_send = rb::heap_class(obj).is_some_and(|c| basic(c, SEND.get()));
    // Setters that only set their instance variable are done here (struct_codec/calls.rs), until a call runs (Ruby
    // code, which might turn type checking on).
    let mut direct = data.direct_setters(own_send)?;
    rb::hash_foreach(args, |key, value| {
        if direct.as_ref().is_some_and(|d| d.set(key, value)) {
            return Ok(());
        }
        direct = None;
        set_argument(obj, own_send, key, value)
    })?;
    Ok(data)
}

/// The exception in `e`, when it is a StandardError (what a bare `rescue` catches).
fn standard_error(e: &Error) -> Option<VALUE> {
    let ruby = Ruby::get().expect("called from a Ruby thread");
    let exception = e.value()?;
    e.is_kind_of(ruby.exception_standard_error())
        .then(|| exception.as_raw())
}

fn oprot_trans(this: VALUE) -> Result<VALUE, Error> {
    super::decorated::call(ivar(this, &OPROT, &IVAR_OPROT), Forwarded::Trans)
}

/// 0.14-0.19 `send_message_args`: the arguments written (a failed write closes the transport), the message end,
/// the flush.
fn send_message_args_v014(this: VALUE, args_class: VALUE, args: VALUE) -> Result<VALUE, Error> {
    if !plain_hash(args) {
        return ORIGINALS.call(SEND_MESSAGE_ARGS_M, this, &[args_class, args]);
    }
    let mut data = args_data(args_class, args)?;
    if let Err(e) = data.write(ivar(this, &OPROT, &IVAR_OPROT)) {
        if let Some(exception) = standard_error(&e) {
            crate::ruby::rescue::rescuing(exception, |r| {
                let trans = r.call(ivar(this, &OPROT, &IVAR_OPROT), TRANS.get(), &[])?;
                r.call(trans, CLOSE.get(), &[])
            })?;
        }
        return Err(e);
    }
    super::decorated::call(ivar(this, &OPROT, &IVAR_OPROT), Forwarded::WriteMessageEnd)?;
    super::direct::flush(oprot_trans(this)?)
}

/// master's private `write_message(name, type, args_class, args)`.
fn write_message_master(this: VALUE, args: &[VALUE; 4]) -> Result<VALUE, Error> {
    let [name, kind, args_class, arguments] = *args;
    if !plain_hash(arguments) {
        return ORIGINALS.call(WRITE_MESSAGE_M, this, args);
    }
    let mut data = args_data(args_class, arguments)?;
    let seqid = if rb::is_nil(name) {
        rb::QNIL
    } else {
        call_self(this, SelfCall::NextSeqid, &[])?
    };
    let sent = (|| {
        if !rb::is_nil(name) {
            super::direct::write_message_begin(ivar(this, &OPROT, &IVAR_OPROT), name, kind, seqid)?;
        }
        data.write(ivar(this, &OPROT, &IVAR_OPROT))?;
        super::decorated::call(ivar(this, &OPROT, &IVAR_OPROT), Forwarded::WriteMessageEnd)?;
        super::direct::flush(oprot_trans(this)?)
    })();
    let flush_result = match sent {
        Ok(v) => v,
        Err(e) => match standard_error(&e) {
            // `begin @oprot.trans.close rescue StandardError end`: the send's error is the one raised.
            Some(exception) => {
                let closed = crate::ruby::rescue::rescuing(exception, |r| {
                    let trans = r.call(ivar(this, &OPROT, &IVAR_OPROT), TRANS.get(), &[])?;
                    r.call(trans, CLOSE.get(), &[])
                });
                match closed {
                    Err(close_error) if standard_error(&close_error).is_none() => {
                        return Err(close_error)
                    }
                    _ => return Err(e),
                }
            }
            None => return Err(e),
        },
    };
    if equal(kind, k(&message_types().call))? {
        return push_pending(this, seqid);
    }
    Ok(flush_result)
}

/// `send_message(name, args_class, args = {})` and `send_oneway_message`, of message type `kind`.
fn send(this: VALUE, kind: VALUE, args: &[Value]) -> Result<VALUE, Error> {
    let (name, args_class, arguments) = match args {
        [name, class] => (name.as_raw(), class.as_raw(), rb_sys_hash_new()),
        [name, class, arguments] => (name.as_raw(), class.as_raw(), arguments.as_raw()),
        _ => return Err(arity_error(args.len(), 2, 3)),
    };
    match flavor() {
        Flavor::Master => call_self(
            this,
            SelfCall::WriteMessage,
            &[name, kind, args_class, arguments],
        ),
        Flavor::V014 | Flavor::V019 => {
            let seqid = ivar(this, &SEQID, &IVAR_SEQID);
            super::direct::write_message_begin(ivar(this, &OPROT, &IVAR_OPROT), name, kind, seqid)?;
            call_self(this, SelfCall::SendMessageArgs, &[args_class, arguments])
        }
        Flavor::V024 => {
            let seqid = call_self(this, SelfCall::NextSeqid, &[])?;
            super::direct::write_message_begin(ivar(this, &OPROT, &IVAR_OPROT), name, kind, seqid)?;
            let sent = call_self(this, SelfCall::SendMessageArgs, &[args_class, arguments])?;
            if !equal(kind, k(&message_types().call))? {
                return Ok(sent);
            }
            push_pending(this, seqid)
        }
    }
}

fn rb_sys_hash_new() -> VALUE {
    // SAFETY: rb_hash_new allocates an empty Hash (the default `args = {}`), held on the caller's stack.
    unsafe { rb_sys::rb_hash_new() }
}

/// Ruby's own ArgumentError for `given` arguments where `min..max` are taken (its message, in its encoding).
fn arity_error(given: usize, min: i32, max: i32) -> Error {
    // SAFETY: protected; rb_error_arity always raises.
    match magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_error_arity(given as _, min, max);
        #[allow(unreachable_code)]
        rb::QNIL
    }) {
        Err(e) => e,
        Ok(_) => unreachable!("rb_error_arity returned"),
    }
}

fn send_message(rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    send(rb_self.as_raw(), k(&message_types().call), args).map(rb::returned)
}

fn send_oneway_message(rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    send(rb_self.as_raw(), k(&message_types().oneway), args).map(rb::returned)
}

fn send_message_args(rb_self: Value, args_class: Value, args: Value) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    match flavor() {
        Flavor::Master => call_self(
            this,
            SelfCall::WriteMessage,
            &[rb::QNIL, rb::QNIL, args_class.as_raw(), args.as_raw()],
        ),
        Flavor::V014 | Flavor::V019 | Flavor::V024 => {
            send_message_args_v014(this, args_class.as_raw(), args.as_raw())
        }
    }
    .map(rb::returned)
}

fn write_message(
    rb_self: Value,
    name: Value,
    kind: Value,
    args_class: Value,
    args: Value,
) -> Result<Value, Error> {
    let args = [
        name.as_raw(),
        kind.as_raw(),
        args_class.as_raw(),
        args.as_raw(),
    ];
    write_message_master(rb_self.as_raw(), &args).map(rb::returned)
}

/// `receive_message(result_klass)`: 0.14 reads the message begin and calls `handle_exception` first.
fn receive_message(rb_self: Value, result_klass: Value) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    if flavor() == Flavor::V014 {
        let mtype = message_type(ivar(this, &IPROT, &IVAR_IPROT))?;
        call_self(this, SelfCall::HandleException, &[mtype])?;
    }
    let result = calls::new_instance(result_klass.as_raw())?;
    result.read(ivar(this, &IPROT, &IVAR_IPROT))?;
    super::decorated::call(ivar(this, &IPROT, &IVAR_IPROT), Forwarded::ReadMessageEnd)?;
    Ok(rb::returned(result.obj))
}

/// The type of `iprot.read_message_begin` (0.14's `receive_message` drops the name and the sequence id): for an
/// exact BinaryProtocolAccelerated or CompactProtocol whose `read_message_begin` is ours, read as it reads it but
/// with no name String and no Array; for any other protocol, its method's answer.
fn message_type(iprot: VALUE) -> Result<VALUE, Error> {
    if let Some(begin) = super::read_begin(iprot, NameRead::Skip) {
        return begin.map(|(_, mtype, _)| rb::integer(mtype));
    }
    let begin = rb::funcall(iprot, READ_MESSAGE_BEGIN.get(), &[])?;
    let [_, mtype, _] = destructure(begin)?;
    Ok(mtype)
}

/// 0.19 on: `fname, mtype, rseqid = @iprot.read_message_begin; [fname, mtype, rseqid]`, where our own
/// method reads it without the Array it answers (`super::read_begin`).
fn receive_message_begin(rb_self: Value) -> Result<Value, Error> {
    let iprot = ivar(rb_self.as_raw(), &IPROT, &IVAR_IPROT);
    let parts = match super::read_begin(iprot, NameRead::String) {
        Some(begin) => {
            let (fname, mtype, rseqid) = begin?;
            [fname, rb::integer(mtype), rb::integer(rseqid.into())]
        }
        None => destructure(rb::funcall(iprot, READ_MESSAGE_BEGIN.get(), &[])?)?,
    };
    // SAFETY: the three VALUEs are on this stack; rb_ary_new_from_values copies them.
    Ok(rb::returned(unsafe {
        rb_sys::rb_ary_new_from_values(3, parts.as_ptr())
    }))
}

/// The ApplicationException read from the input (and its message end), raised: 0.14-0.19's `handle_exception` for
/// an EXCEPTION message, 0.24's and master's `raise_application_exception`.
fn raise_application_exception(this: VALUE) -> Error {
    let read = || -> Result<VALUE, Error> {
        let class = K.application_exception.load(Ordering::Relaxed) as VALUE;
        let x = rb::funcall(class, NEW.get(), &[])?;
        rb::funcall(x, READ.get(), &[ivar(this, &IPROT, &IVAR_IPROT)])?;
        super::decorated::call(ivar(this, &IPROT, &IVAR_IPROT), Forwarded::ReadMessageEnd)?;
        Ok(x)
    };
    match read() {
        Ok(x) => crate::ruby::rescue::raise_value(x),
        Err(e) => e,
    }
}

/// 0.14-0.19 `handle_exception(mtype)`.
fn handle_exception(rb_self: Value, mtype: Value) -> Result<Value, Error> {
    handle_exception_of(rb_self.as_raw(), mtype.as_raw()).map(rb::returned)
}

fn handle_exception_of(this: VALUE, mtype: VALUE) -> Result<VALUE, Error> {
    if equal(mtype, k(&message_types().exception))? {
        return Err(raise_application_exception(this));
    }
    Ok(rb::QNIL)
}

/// 0.19 `reply_seqid(rseqid)`: `rseqid == @seqid`, as true or false.
fn reply_seqid(rb_self: Value, rseqid: Value) -> Result<bool, Error> {
    equal(rseqid.as_raw(), ivar(rb_self.as_raw(), &SEQID, &IVAR_SEQID))
}

/// `ApplicationException.new(code, "#{expected_name} failed: <what>")`, raised.
fn application_error(code: &AtomicI64, expected_name: VALUE, what: &str) -> Error {
    let make = || -> Result<VALUE, Error> {
        let tail = rb::utf8_string(format!(" failed: {what}").as_bytes());
        let message = rb::interpolate(&[expected_name, tail])?;
        let class = K.application_exception.load(Ordering::Relaxed) as VALUE;
        rb::funcall(class, NEW.get(), &[k(code), message])
    };
    match make() {
        Ok(x) => crate::ruby::rescue::raise_value(x),
        Err(e) => e,
    }
}

/// 0.24's and master's `validate_message_begin(fname, mtype, rseqid, expected_name)`.
fn validate_message_begin(
    rb_self: Value,
    fname: Value,
    mtype: Value,
    rseqid: Value,
    expected_name: Value,
) -> Result<Value, Error> {
    let [fname, mtype, rseqid, expected_name] = [
        fname.as_raw(),
        mtype.as_raw(),
        rseqid.as_raw(),
        expected_name.as_raw(),
    ];
    let this = rb_self.as_raw();
    let expected_seqid = call_self(this, SelfCall::DequeuePendingSeqid, &[])?;
    if equal(mtype, k(&message_types().exception))? {
        call_self(this, SelfCall::RaiseApplicationException, &[])?;
    }
    if not_equal(mtype, k(&message_types().reply))? {
        return Err(application_error(
            &K.invalid_message_type,
            expected_name,
            "invalid message type",
        ));
    }
    if not_equal(fname, expected_name)? {
        return Err(application_error(
            &K.wrong_method_name,
            expected_name,
            "wrong method name",
        ));
    }
    if !rb::is_nil(expected_seqid) && equal(rseqid, expected_seqid)? {
        return Ok(rb::returned(rb::QNIL));
    }
    Err(application_error(
        &K.bad_sequence_id,
        expected_name,
        "out of sequence response",
    ))
}

fn raise_application_exception_method(rb_self: Value) -> Result<Value, Error> {
    Err(raise_application_exception(rb_self.as_raw()))
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    // SAFETY: the Thrift module is pinned at load time.
    let thrift_module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let client: RModule = thrift_module.const_get("Client")?;
    let application_exception: magnus::RClass = thrift_module.const_get("ApplicationException")?;
    let sym = |name: &str| ruby.to_symbol(name);
    use magnus::value::ReprValue;
    let private_defined = |name: &str| -> Result<bool, Error> {
        client
            .as_value()
            .funcall("private_method_defined?", (sym(name),))
    };
    let public_defined = |name: &str| -> Result<bool, Error> {
        client.as_value().funcall("method_defined?", (sym(name),))
    };
    let flavor = if private_defined("write_message")? {
        Flavor::Master
    } else if public_defined("validate_message_begin")? {
        Flavor::V024
    } else if public_defined("receive_message_begin")? {
        Flavor::V019
    } else {
        Flavor::V014
    };
    FLAVOR.store(flavor as u8, Ordering::Relaxed);
    let store = |slot: &AtomicI64,
                 scope: &dyn Fn(&str) -> Result<i64, Error>,
                 name: &str|
     -> Result<(), Error> {
        slot.store(scope(name)?, Ordering::Relaxed);
        Ok(())
    };
    let codes = |name: &str| application_exception.const_get::<_, i64>(name);
    store(&K.invalid_message_type, &codes, "INVALID_MESSAGE_TYPE")?;
    store(&K.wrong_method_name, &codes, "WRONG_METHOD_NAME")?;
    store(&K.bad_sequence_id, &codes, "BAD_SEQUENCE_ID")?;
    rb::pin_forever(application_exception.as_raw());
    K.application_exception
        .store(application_exception.as_raw() as usize, Ordering::Relaxed);
    if matches!(flavor, Flavor::Master | Flavor::V024) {
        let seq = |name: &str| client.const_get::<_, i64>(name);
        store(&K.min_seqid, &seq, "MIN_SEQUENCE_ID")?;
        store(&K.max_seqid, &seq, "MAX_SEQUENCE_ID")?;
    }
    ORIGINALS.keep(ruby, client.as_raw(), true)?;
    let self_called = match flavor {
        Flavor::Master => vec![
            "write_message",
            "next_seqid!",
            "dequeue_pending_seqid",
            "raise_application_exception",
        ],
        Flavor::V024 => vec![
            "send_message_args",
            "next_seqid!",
            "dequeue_pending_seqid",
            "raise_application_exception",
        ],
        Flavor::V014 | Flavor::V019 => vec!["send_message_args", "handle_exception"],
    };
    rb::pin_forever(client.as_raw());
    own::init(ruby, client.as_raw(), self_called);

    registry::define_method(
        ruby,
        client,
        "send_message",
        magnus::method!(send_message, -1),
    )?;
    registry::define_method(
        ruby,
        client,
        "send_oneway_message",
        magnus::method!(send_oneway_message, -1),
    )?;
    registry::define_method(
        ruby,
        client,
        "send_message_args",
        magnus::method!(send_message_args, 2),
    )?;
    registry::define_method(
        ruby,
        client,
        "receive_message",
        magnus::method!(receive_message, 1),
    )?;
    match flavor {
        Flavor::V014 | Flavor::V019 => {
            registry::define_method(
                ruby,
                client,
                "handle_exception",
                magnus::method!(handle_exception, 1),
            )?;
        }
        Flavor::Master | Flavor::V024 => {
            registry::define_method(
                ruby,
                client,
                "validate_message_begin",
                magnus::method!(validate_message_begin, 4),
            )?;
            if flavor == Flavor::Master {
                registry::define_private_method(
                    ruby,
                    client,
                    "write_message",
                    magnus::method!(write_message, 4),
                )?;
            }
            registry::define_private_method(
                ruby,
                client,
                "next_seqid!",
                magnus::method!(next_seqid, 0),
            )?;
            registry::define_private_method(
                ruby,
                client,
                "dequeue_pending_seqid",
                magnus::method!(dequeue_pending_seqid, 0),
            )?;
            registry::define_private_method(
                ruby,
                client,
                "raise_application_exception",
                magnus::method!(raise_application_exception_method, 0),
            )?;
        }
    }
    if flavor != Flavor::V014 {
        registry::define_method(
            ruby,
            client,
            "receive_message_begin",
            magnus::method!(receive_message_begin, 0),
        )?;
    }
    if flavor == Flavor::V019 {
        registry::define_method(ruby, client, "reply_seqid", magnus::method!(reply_seqid, 1))?;
    }
    Ok(())
}
