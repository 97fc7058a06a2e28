//! `Thrift::Processor`'s methods, native: the server's half of a call (`process`, `read_args`, `write_result`,
//! `write_error`) without their Ruby frames, and `process_<name>` found and called without a String per call.
//!
//! As in client.rs, each call the loaded version's processor.rb makes is made in its order and dispatched: the
//! protocols' methods, `respond_to?`, `process_<name>` (through `send` when the processor's `send` is not Kernel's),
//! `write_error`, the logger's `debug` with the message it builds (eagerly, as the library does, whatever the level).
//! Two versions ([`MASTER`], probed by master's message-type check, THRIFT-6146): master answers a message that is
//! neither CALL nor ONEWAY with INVALID_MESSAGE_TYPE before looking the method up.
//!
//! The message header is read by our protocol's method where it is exactly ours (`super::read_begin`), with the name
//! kept as bytes: a String is made only where one is passed on (`send`, an error reply, a non-Kernel `respond_to?`).
//!
//! `respond_to?("process_#{name}")` for a String name is Kernel's `respond_to?` of the existing method name
//! (`rb_obj_respond_to`, which asks `respond_to_missing?` too); a name no Symbol has yet, a name that is not a String,
//! or a processor whose `respond_to?` is its own gets the library's String and call.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Module, RModule, Ruby, Value};
use rb_sys::{ID, VALUE};

use super::decorated::Forwarded;
use super::{basic, equal, k, message_types, read_begin_keeping_name};
use crate::protocols::message_name::MessageName;
use crate::ruby::names::{
    BACKTRACE, DEBUG, IVAR_LOGGER, JOIN, MESSAGE, NEW, RESPOND_TO_P, SEND, SKIP, WRITE_ERROR,
};
use crate::ruby::{rb, registry};
use crate::thrift::thrift;

static MASTER: AtomicBool = AtomicBool::new(false);
static STRUCT_TYPE: AtomicI64 = AtomicI64::new(12);
static INTERNAL_ERROR: AtomicI64 = AtomicI64::new(6);
static UNKNOWN_METHOD: AtomicI64 = AtomicI64::new(1);
static INVALID_MESSAGE_TYPE: AtomicI64 = AtomicI64::new(2);
static APPLICATION_EXCEPTION: AtomicUsize = AtomicUsize::new(0);

fn application_exception(code: &AtomicI64, message: VALUE) -> Result<VALUE, Error> {
    let class = APPLICATION_EXCEPTION.load(Ordering::Relaxed) as VALUE;
    rb::funcall(class, NEW.get(), &[k(code), message])
}

/// `"process_#{name}"`, built (a new String, as the library makes it).
fn method_string(name: VALUE) -> Result<VALUE, Error> {
    rb::interpolate(&[rb::utf8_string(b"process_"), name])
}

/// The ID of `process_<name>` if that name exists as a Symbol (0 if not, or for a name that is not an exact
/// String).
fn method_id(name: &MessageName) -> Result<ID, Error> {
    if let Some((bytes, utf8)) = name.bytes() {
        // SAFETY: the encodings are Ruby's own, always loaded.
        let enc = unsafe {
            if utf8 {
                rb_sys::rb_utf8_encoding()
            } else {
                rb_sys::rb_ascii8bit_encoding()
            }
        };
        return id_with_prefix(bytes, enc);
    }
    let name = name.object().unwrap_or(rb::QNIL);
    if !rb::is_exact_instance(name, rb::string_class()) {
        return Ok(0);
    }
    // SAFETY: `name` is a String on the caller's stack; rb_enc_get reads its encoding; the bytes are copied out at
    // once.
    let (bytes, enc) = unsafe { (rb::str_bytes(name), rb_sys::rb_enc_get(name)) };
    id_with_prefix(bytes, enc)
}

/// The ID of `"process_" + bytes` in encoding `enc`, if such a Symbol exists.
fn id_with_prefix(bytes: &[u8], enc: *mut rb_sys::rb_encoding) -> Result<ID, Error> {
    if bytes.len() > 247 {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    buf[..8].copy_from_slice(b"process_");
    buf[8..8 + bytes.len()].copy_from_slice(bytes);
    super::existing_method_id(&buf[..8 + bytes.len()], enc)
}

/// `iprot.skip(Types::STRUCT); iprot.read_message_end; write_error(ApplicationException.new(code, message), ...)`,
/// the message made after the two calls, as the library makes it.
fn refuse(
    this: VALUE,
    iprot: VALUE,
    oprot: VALUE,
    code: &AtomicI64,
    message: impl FnOnce(VALUE) -> Result<VALUE, Error>,
    name: &mut MessageName,
    seqid: VALUE,
) -> Result<(), Error> {
    rb::funcall(iprot, SKIP.get(), &[k(&STRUCT_TYPE)])?;
    super::decorated::call(iprot, Forwarded::ReadMessageEnd)?;
    let name = name.value();
    let x = application_exception(code, message(name)?)?;
    rb::funcall(this, WRITE_ERROR.get(), &[x, oprot, name, seqid])?;
    Ok(())
}

/// `process(iprot, oprot)`.
fn process(rb_self: Value, iprot: Value, oprot: Value) -> Result<bool, Error> {
    let (this, iprot, oprot) = (rb_self.as_raw(), iprot.as_raw(), oprot.as_raw());
    // The name stays bytes until something needs it as a String (`send`, an error reply).
    let mut name = MessageName::new();
    let (kind, seqid) = read_begin_keeping_name(iprot, &mut name)?;
    if MASTER.load(Ordering::Relaxed)
        && !equal(kind, k(&message_types().call))?
        && !equal(kind, k(&message_types().oneway))?
    {
        let message = |name| invalid_type_message(kind, name);
        refuse(
            this,
            iprot,
            oprot,
            &INVALID_MESSAGE_TYPE,
            message,
            &mut name,
            seqid,
        )?;
        return Ok(false);
    }
    let class = rb::heap_class(this).unwrap_or(0);
    let id = if class != 0 && basic(class, RESPOND_TO_P.get()) {
        method_id(&name)?
    } else {
        0
    };
    let (responds, id) = if id != 0 {
        // SAFETY: rb_obj_respond_to looks the method up and may call `respond_to_missing?` (Ruby code): protected.
        let r = magnus::rb_sys::protect(|| unsafe {
            if rb_sys::rb_obj_respond_to(this, id, 0) != 0 {
                rb::QTRUE
            } else {
                rb::QFALSE
            }
        })?;
        (rb::truthy(r), id)
    } else {
        let s = method_string(name.value())?;
        (rb::truthy(rb::funcall(this, RESPOND_TO_P.get(), &[s])?), 0)
    };
    if !responds {
        // `'Unknown function ' + name`: String#+ (a TypeError for a name that is not a String).
        let message = |name| {
            let prefix = rb::utf8_string(b"Unknown function ");
            rb::funcall(prefix, crate::ruby::names::PLUS.get(), &[name])
        };
        refuse(
            this,
            iprot,
            oprot,
            &UNKNOWN_METHOD,
            message,
            &mut name,
            seqid,
        )?;
        return Ok(false);
    }
    let handled = if id != 0 && basic(class, SEND.get()) {
        rb::funcall(this, id, &[seqid, iprot, oprot])
    } else {
        let s = method_string(name.value())?;
        rb::funcall(this, SEND.get(), &[s, seqid, iprot, oprot])
    };
    if let Err(e) = handled {
        let ruby = Ruby::get().expect("called from a Ruby thread");
        let Some(exception) = e
            .value()
            .filter(|_| e.is_kind_of(ruby.exception_standard_error()))
        else {
            return Err(e);
        };
        internal_error(this, exception.as_raw(), oprot, name.value(), seqid)?;
    }
    Ok(true)
}

/// `"Invalid message type #{type} for function #{name}"`.
fn invalid_type_message(kind: VALUE, name: VALUE) -> Result<VALUE, Error> {
    let parts = [
        rb::utf8_string(b"Invalid message type "),
        kind,
        rb::utf8_string(b" for function "),
        name,
    ];
    rb::interpolate(&parts)
}

/// The `rescue => e` of `process` (run with `$!` set to `e`): an INTERNAL_ERROR ApplicationException, the debug line,
/// `write_error`.
fn internal_error(
    this: VALUE,
    e: VALUE,
    oprot: VALUE,
    name: VALUE,
    seqid: VALUE,
) -> Result<(), Error> {
    crate::ruby::rescue::rescuing(e, |r| {
        let class = APPLICATION_EXCEPTION.load(Ordering::Relaxed) as VALUE;
        let code = k(&INTERNAL_ERROR);
        let x = r.call(
            class,
            NEW.get(),
            &[code, rb::utf8_string(b"Internal error")],
        )?;
        // "Internal error : #{e.message}\n#{e.backtrace.join("\n")}"
        let message = r.call(e, MESSAGE.get(), &[])?;
        let backtrace = r.call(e, BACKTRACE.get(), &[])?;
        let joined = r.call(backtrace, JOIN.get(), &[rb::utf8_string(b"\n")])?;
        let parts = [
            rb::utf8_string(b"Internal error : "),
            message,
            rb::utf8_string(b"\n"),
            joined,
        ];
        let line = rb::interpolate(&parts)?;
        r.call(rb::ivar_get(this, IVAR_LOGGER.get()), DEBUG.get(), &[line])?;
        r.call(this, WRITE_ERROR.get(), &[x, oprot, name, seqid])?;
        Ok(())
    })
}

/// `read_args(iprot, args_class)`.
fn read_args(iprot: Value, args_class: Value) -> Result<Value, Error> {
    let iprot = iprot.as_raw();
    let args = crate::struct_codec::calls::new_instance(args_class.as_raw())?;
    args.read(iprot)?;
    super::decorated::call(iprot, Forwarded::ReadMessageEnd)?;
    Ok(rb::returned(args.obj))
}

/// `write_result` (REPLY) and `write_error` (EXCEPTION): the message, then `oprot.trans.flush`.
fn write_message(
    kind: VALUE,
    body: VALUE,
    oprot: VALUE,
    name: VALUE,
    seqid: VALUE,
) -> Result<Value, Error> {
    super::direct::write_message_begin(oprot, name, kind, seqid)?;
    crate::struct_codec::calls::write_object(body, oprot)?;
    super::decorated::call(oprot, Forwarded::WriteMessageEnd)?;
    let trans = super::decorated::call(oprot, Forwarded::Trans)?;
    super::direct::flush(trans).map(rb::returned)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    // SAFETY: the Thrift module is pinned at load time.
    let thrift_module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let processor: RModule = thrift_module.const_get("Processor")?;
    let types: RModule = thrift_module.const_get("Types")?;
    let application_exception_class: magnus::RClass =
        thrift_module.const_get("ApplicationException")?;
    STRUCT_TYPE.store(types.const_get::<_, i64>("STRUCT")?, Ordering::Relaxed);
    for (slot, name) in [
        (&INTERNAL_ERROR, "INTERNAL_ERROR"),
        (&UNKNOWN_METHOD, "UNKNOWN_METHOD"),
        (&INVALID_MESSAGE_TYPE, "INVALID_MESSAGE_TYPE"),
    ] {
        slot.store(
            application_exception_class.const_get::<_, i64>(name)?,
            Ordering::Relaxed,
        );
    }
    rb::pin_forever(application_exception_class.as_raw());
    APPLICATION_EXCEPTION.store(
        application_exception_class.as_raw() as usize,
        Ordering::Relaxed,
    );
    MASTER.store(master_process(ruby, processor)?, Ordering::Relaxed);
    registry::define_method(ruby, processor, "process", magnus::method!(process, 2))?;
    registry::define_method(
        ruby,
        processor,
        "read_args",
        magnus::method!(read_args_method, 2),
    )?;
    registry::define_method(
        ruby,
        processor,
        "write_result",
        magnus::method!(write_result_method, 4),
    )?;
    registry::define_method(
        ruby,
        processor,
        "write_error",
        magnus::method!(write_error_method, 4),
    )?;
    Ok(())
}

fn read_args_method(_this: Value, iprot: Value, args_class: Value) -> Result<Value, Error> {
    read_args(iprot, args_class)
}

/// `write_result(result, oprot, name, seqid)`: a REPLY.
fn write_result_method(
    _this: Value,
    result: Value,
    oprot: Value,
    name: Value,
    seqid: Value,
) -> Result<Value, Error> {
    let reply = k(&message_types().reply);
    write_message(
        reply,
        result.as_raw(),
        oprot.as_raw(),
        name.as_raw(),
        seqid.as_raw(),
    )
}

/// `write_error(err, oprot, name, seqid)`: an EXCEPTION.
fn write_error_method(
    _this: Value,
    err: Value,
    oprot: Value,
    name: Value,
    seqid: Value,
) -> Result<Value, Error> {
    let exception = k(&message_types().exception);
    write_message(
        exception,
        err.as_raw(),
        oprot.as_raw(),
        name.as_raw(),
        seqid.as_raw(),
    )
}

/// Whether the loaded `Processor#process` checks the message type first (master's THRIFT-6146): the file that defines
/// it (`source_location`) has the check's message, "Invalid message type", which 0.14-0.24's never has.
fn master_process(ruby: &Ruby, processor: RModule) -> Result<bool, Error> {
    use magnus::value::ReprValue;
    let _ = ruby;
    let method: Value = processor
        .as_value()
        .funcall("instance_method", (ruby.to_symbol("process"),))?;
    let location: Value = method.funcall("source_location", ())?;
    let Some(location) = magnus::RArray::from_value(location) else {
        return Ok(false);
    };
    let file: String = location.entry(0)?;
    let source = std::fs::read_to_string(file).unwrap_or_default();
    Ok(source.contains("Invalid message type"))
}
