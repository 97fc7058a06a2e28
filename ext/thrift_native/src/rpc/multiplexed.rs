//! `Thrift::MultiplexedProcessor#process`, native: the service name split off the message name without the Ruby
//! frame, the header's Array and name String, the `[CALL, ONEWAY]` Array of `check_type` or the Array and String of
//! `split`.
//!
//! The library's steps, in its order: `iprot.read_message_begin` (ours read natively as in processor.rs, the name
//! kept as bytes), `check_type(type)`, the separator check, `name.split(':')` (0.14-0.19: every part, trailing empty
//! ones dropped, the first two kept; master: `split(":", 2)`, and a name with no colon goes to the processor given
//! to `register_default`, after `check_default_processor`), `processor(service_name)` (looked up in a plain
//! `@actual_processors` Hash, else the library's protected method, called), then that processor's `process` with a
//! new `StoredMessageProtocol` (rpc/decorated.rs) over `iprot` holding
//! `[method, type, seqid]`. Where a value is not one this file decides without Ruby code (a type that is no Integer,
//! a name that is no String of UTF-8 or BINARY bytes), the library's own protected method or the value's own method
//! (`check_type`, `count`, `split`) is called instead. An instance of a subclass, or of a class whose `process`,
//! `processor` or check methods have changed, gets the library's `process`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Module, RModule, Ruby, Value};
use rb_sys::VALUE;

use super::{destructure, message_types, read_begin_keeping_name};
use crate::protocols::message_name::MessageName;
use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::names::{
    CHECK_DEFAULT_PROCESSOR, CHECK_SEPARATOR, CHECK_TYPE, COMPARE_BY_IDENTITY_P, COUNT,
    IVAR_ACTUAL_PROCESSORS, IVAR_DEFAULT_PROCESSOR, LESS_THAN, NEW, PROCESS, PROCESSOR, SPLIT,
};
use crate::ruby::{rb, registry};
use crate::thrift::{bytes, thrift};

/// The methods whose change sends `process` back to the library's.
const WATCHED: [&str; 5] = [
    "process",
    "processor",
    "check_type",
    "check_separator",
    "check_default_processor",
];

static GUARD: Guard = Guard::new();
static ORIGINALS: Originals<1> = Originals::new(["process"]);
static CLASS: AtomicUsize = AtomicUsize::new(0);
static THRIFT_EXCEPTION: AtomicUsize = AtomicUsize::new(0);
/// master: `split(":", 2)`, and a name without a colon goes to the default processor (`register_default`).
static MASTER: AtomicBool = AtomicBool::new(false);

fn class_value(slot: &AtomicUsize) -> VALUE {
    slot.load(Ordering::Relaxed) as VALUE
}

/// `process(iprot, oprot)`.
fn process(rb_self: Value, iprot: Value, oprot: Value) -> Result<Value, Error> {
    let (this, iprot, oprot) = (rb_self.as_raw(), iprot.as_raw(), oprot.as_raw());
    if !GUARD.intact() || !rb::is_exact_instance(this, class_value(&CLASS)) {
        return ORIGINALS.call(0, this, &[iprot, oprot]).map(rb::returned);
    }
    let mut name = MessageName::new();
    let (kind, seqid) = read_begin_keeping_name(iprot, &mut name)?;
    check_type(this, kind)?;
    let master = MASTER.load(Ordering::Relaxed);
    if let Some(found) = by_service_bytes(this, &name, master)? {
        let method = found.method.map_or(rb::QNIL, |b| found.string(b));
        let stored = stored_protocol(iprot, [method, kind, seqid])?;
        return rb::funcall(found.processor, PROCESS.get(), &[stored, oprot]).map(rb::returned);
    }
    let Some((service, method)) = split(&mut name, master)? else {
        let name = name.value();
        if !master {
            // check_separator raises (its message names the name).
            rb::funcall(this, CHECK_SEPARATOR.get(), &[name])?;
            return Err(separator_not_raised());
        }
        rb::funcall(this, CHECK_DEFAULT_PROCESSOR.get(), &[name])?;
        let default = rb::ivar_get(this, IVAR_DEFAULT_PROCESSOR.get());
        let stored = stored_protocol(iprot, [name, kind, seqid])?;
        return rb::funcall(default, PROCESS.get(), &[stored, oprot]).map(rb::returned);
    };
    let processor = processor(this, service)?;
    let stored = stored_protocol(iprot, [method, kind, seqid])?;
    rb::funcall(processor, PROCESS.get(), &[stored, oprot]).map(rb::returned)
}

/// `check_type(type)`: `[CALL, ONEWAY].include?(type)` for an Integer, else the library's method.
fn check_type(this: VALUE, kind: VALUE) -> Result<(), Error> {
    let Some(kind) = rb::fixnum_value(kind) else {
        return rb::funcall(this, CHECK_TYPE.get(), &[kind]).map(|_| ());
    };
    let t = message_types();
    if kind == t.call.load(Ordering::Relaxed) || kind == t.oneway.load(Ordering::Relaxed) {
        return Ok(());
    }
    Err(thrift_exception(b"This should not have happened!?"))
}

/// `Thrift::Exception.new(message)`, raised.
#[cold]
fn thrift_exception(message: &[u8]) -> Error {
    let exception = rb::funcall(
        class_value(&THRIFT_EXCEPTION),
        NEW.get(),
        &[rb::utf8_string(message)],
    );
    match exception {
        Ok(x) => crate::ruby::rescue::raise_value(x),
        Err(e) => e,
    }
}

/// check_separator returned where it raises for a name without a colon (a name whose `count` said otherwise).
#[cold]
fn separator_not_raised() -> Error {
    thrift_exception(b"Service name not found in message name")
}

/// `StoredMessageProtocol.new(iprot, [a, b, c])`.
fn stored_protocol(iprot: VALUE, message_begin: [VALUE; 3]) -> Result<VALUE, Error> {
    // SAFETY: the three VALUEs are on this stack; rb_ary_new_from_values copies them.
    let begin = unsafe { rb_sys::rb_ary_new_from_values(3, message_begin.as_ptr()) };
    super::decorated::new_stored(iprot, begin)
}

/// The library's protected `processor(service_name)`: `@actual_processors[service_name]` if it has the key, read
/// here from a plain Hash; else (or for any other `@actual_processors`) the method, which raises.
fn processor(this: VALUE, service: VALUE) -> Result<VALUE, Error> {
    const UNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
    let processors = rb::ivar_get(this, IVAR_ACTUAL_PROCESSORS.get());
    if rb::is_exact_instance(processors, rb::hash_class()) {
        // SAFETY: protected; `processors` is a Hash and `service` (a String, or nil) is on this stack; the lookup
        // hashes it as Hash#has_key? and Hash#[] would.
        let found = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_hash_lookup2(processors, service, UNDEF)
        })?;
        if found != UNDEF {
            return Ok(found);
        }
    }
    rb::funcall(this, PROCESSOR.get(), &[service])
}

/// A service's processor found without the service name's String, and the method name's bytes.
struct Found<'a> {
    processor: VALUE,
    method: Option<&'a [u8]>,
    utf8: bool,
}

impl Found<'_> {
    /// A String of the name's encoding, as `split` makes its pieces.
    fn string(&self, b: &[u8]) -> VALUE {
        if self.utf8 {
            rb::utf8_string(b)
        } else {
            rb::binary_string(b)
        }
    }
}

/// The processor `processor(service_name)` answers, looked up by the service name's bytes, where the name is still
/// bytes (valid UTF-8, or BINARY) with a non-empty service part and `@actual_processors` a plain Hash, not
/// compare_by_identity, that has it: the key is found through the interned String of those bytes (which a Hash's
/// String key already is: Hash#[]= interns an unfrozen String key), equal to the library's new String as a Hash
/// key. None where the library's steps are needed: a miss, any other Hash or name.
fn by_service_bytes<'a>(
    this: VALUE,
    name: &'a MessageName,
    master: bool,
) -> Result<Option<Found<'a>>, Error> {
    const UNDEF: VALUE = rb_sys::special_consts::Qundef as VALUE;
    let Some((bytes, utf8)) = name.bytes() else {
        return Ok(None);
    };
    if utf8 && std::str::from_utf8(bytes).is_err() {
        return Ok(None);
    }
    let Some((service, method)) = split_ranges(bytes, master) else {
        return Ok(None);
    };
    let Some(service) = service.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let processors = rb::ivar_get(this, IVAR_ACTUAL_PROCESSORS.get());
    if !rb::is_exact_instance(processors, rb::hash_class()) {
        return Ok(None);
    }
    // SAFETY: the encodings are Ruby's own; `service` is a slice of the name's own array (Rust memory), copied.
    let key = unsafe {
        let enc = if utf8 {
            rb_sys::rb_utf8_encoding()
        } else {
            rb_sys::rb_ascii8bit_encoding()
        };
        rb_sys::rb_enc_interned_str(service.as_ptr() as *const _, service.len() as _, enc)
    };
    // SAFETY: protected; `processors` is a Hash and `key` a String on this stack; the lookup hashes it as Hash#[]
    // would.
    let found =
        magnus::rb_sys::protect(|| unsafe { rb_sys::rb_hash_lookup2(processors, key, UNDEF) })?;
    // A compare_by_identity Hash never finds the library's new String.
    if found == UNDEF || rb::truthy(rb::funcall(processors, COMPARE_BY_IDENTITY_P.get(), &[])?) {
        return Ok(None);
    }
    Ok(Some(Found {
        processor: found,
        method,
        utf8,
    }))
}

/// The service name's and the method name's bytes (each None for a nil part).
type SplitName<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Where `split` puts the service name and the method name in `name` (each None for a nil part), or None for a name
/// without a colon: [`split_bytes`]'s rule.
fn split_ranges(name: &[u8], master: bool) -> Option<SplitName<'_>> {
    let first = name.iter().position(|&b| b == b':')?;
    if master {
        // split(":", 2): what comes before the first colon, and all after it.
        return Some((Some(&name[..first]), Some(&name[first + 1..])));
    }
    // split(":"): the parts, trailing empty ones dropped (the trailing colons'), the first two, or nil.
    let end = name.iter().rposition(|&b| b != b':').map_or(0, |i| i + 1);
    let mut parts = name[..end].split(|&b| b == b':').filter(|_| end > 0);
    let service = parts.next();
    Some((service, parts.next()))
}

/// The service name and the method name (`service_name, method = name.split(...)`), or None when the name has no
/// colon (`name.count(':') < 1`).
fn split(name: &mut MessageName, master: bool) -> Result<Option<(VALUE, VALUE)>, Error> {
    if let Some((bytes, utf8)) = name.bytes() {
        if !utf8 || std::str::from_utf8(bytes).is_ok() {
            return Ok(split_bytes(bytes, utf8, master));
        }
    }
    let value = name.value();
    if rb::is_exact_instance(value, rb::string_class())
        && (bytes::is_valid_utf8_string(value) || bytes::is_binary_string(value))
    {
        let utf8 = bytes::is_utf8_string(value);
        // SAFETY: `value` is a String held by `name`; the pieces are copied out before any Ruby call.
        let b = unsafe { rb::str_bytes(value) };
        return Ok(split_bytes(b, utf8, master));
    }
    // Any other name: its own `count` and `split`, as the library calls them.
    let colon = rb::utf8_string(b":");
    let count = rb::funcall(value, COUNT.get(), &[colon])?;
    if rb::truthy(rb::funcall(count, LESS_THAN.get(), &[rb::integer(1)])?) {
        return Ok(None);
    }
    let parts = if master {
        rb::funcall(value, SPLIT.get(), &[colon, rb::integer(2)])?
    } else {
        rb::funcall(value, SPLIT.get(), &[colon])?
    };
    let [service, method, _] = destructure(parts)?;
    Ok(Some((service, method)))
}

/// `split` of a name's bytes (valid UTF-8, or BINARY), the pieces Strings of the name's encoding.
fn split_bytes(name: &[u8], utf8: bool, master: bool) -> Option<(VALUE, VALUE)> {
    let string = |b: Option<&[u8]>| {
        b.map_or(rb::QNIL, |b| {
            if utf8 {
                rb::utf8_string(b)
            } else {
                rb::binary_string(b)
            }
        })
    };
    let (service, method) = split_ranges(name, master)?;
    let service = string(service);
    Some((service, string(method)))
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    use magnus::value::ReprValue;
    // SAFETY: the Thrift module is pinned at load time.
    let thrift_module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let class: magnus::RClass = thrift_module.const_get("MultiplexedProcessor")?;
    let exception: magnus::RClass = thrift_module.const_get("Exception")?;
    for (slot, value) in [
        (&CLASS, class.as_raw()),
        (&THRIFT_EXCEPTION, exception.as_raw()),
    ] {
        rb::pin_forever(value);
        slot.store(value as usize, Ordering::Relaxed);
    }
    let master: bool = class
        .as_value()
        .funcall("method_defined?", (ruby.to_symbol("register_default"),))?;
    MASTER.store(master, Ordering::Relaxed);
    GUARD.watch(class.as_raw(), Watch::Methods(&WATCHED));
    ORIGINALS.keep(ruby, class.as_raw(), false)?;
    registry::define_method(ruby, class, "process", magnus::method!(process, 2))?;
    Ok(())
}
