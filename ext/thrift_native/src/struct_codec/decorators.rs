//! Structs read and written through a `Thrift::MultiplexedProtocol` or `Thrift::StoredMessageProtocol` (a
//! `ProtocolDecorator`): on the fast path of the protocol inside (`@protocol`), where the decorator would only pass
//! the codec's calls on to it.
//!
//! A decorator forwards each protocol method to `@protocol`; the struct codec's calls are all forwarded except those
//! the decorator's version lacks, which fall to BaseProtocol's method on the decorator (`skip` everywhere;
//! `read_uuid`/`write_uuid` before master). Reading through the decorator is then reading through `@protocol` when,
//! for every method the codec may call, the decorator's method is ProtocolDecorator's forwarder or the very method
//! `@protocol`'s class has (BaseProtocol#skip for both, say). That is asked once per pair of classes; any method
//! change in the decorator classes, ProtocolDecorator or BaseProtocol trips the guard, and then every read and write
//! goes through the decorator's methods (the dispatch path), as it does for a decorator over any other protocol.
//! The UUID methods count only where the loaded thrift has `Types::UUID`: thrift 0.14's decorator has none, nor does
//! its library know UUID fields (our codec reads and writes them on every thrift).

use std::sync::Mutex;

use magnus::{Error, Module, RClass, RModule, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{INSTANCE_METHOD, IVAR_PROTOCOL, OWNER};
use crate::ruby::rb;
use crate::thrift::thrift;

/// Every protocol method the struct codec's dispatch path may call (dispatch.rs), which the fast path reproduces.
const CODEC_METHODS: [&str; 41] = [
    "read_struct_begin",
    "read_struct_end",
    "read_field_begin",
    "read_field_end",
    "read_map_begin",
    "read_map_end",
    "read_list_begin",
    "read_list_end",
    "read_set_begin",
    "read_set_end",
    "read_bool",
    "read_byte",
    "read_i16",
    "read_i32",
    "read_i64",
    "read_double",
    "read_string",
    "read_binary",
    "skip",
    "validate_container_size",
    "write_struct_begin",
    "write_struct_end",
    "write_field_begin",
    "write_field_end",
    "write_field_stop",
    "write_map_begin",
    "write_map_end",
    "write_list_begin",
    "write_list_end",
    "write_set_begin",
    "write_set_end",
    "write_bool",
    "write_byte",
    "write_i16",
    "write_i32",
    "write_i64",
    "write_double",
    "write_string",
    "write_binary",
    "read_uuid",
    "write_uuid",
];
const UUID_METHODS: usize = 2;

static GUARD: Guard = Guard::new();

struct Classes {
    multiplexed: VALUE,
    stored_message: VALUE,
    decorator: VALUE,
}

// SAFETY: pinned classes, used only under the GVL.
unsafe impl Send for Classes {}

static CLASSES: Mutex<Option<Classes>> = Mutex::new(None);
/// (decorator class, inner class, whether the decorator only forwards the codec's calls), asked once per pair.
static PAIRS: Mutex<Vec<(usize, usize, bool)>> = Mutex::new(Vec::new());

/// The protocol inside `protocol` when `protocol` is an exact MultiplexedProtocol or StoredMessageProtocol that
/// would pass every call of the struct codec on to it unchanged; None otherwise.
pub fn inner(protocol: VALUE) -> Option<VALUE> {
    if !GUARD.intact() {
        return None;
    }
    let class = rb::heap_class(protocol)?;
    let decorator = {
        let classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
        let c = classes.as_ref()?;
        if class != c.multiplexed && class != c.stored_message {
            return None;
        }
        c.decorator
    };
    let inner = rb::ivar_get(protocol, IVAR_PROTOCOL.get());
    let inner_class = rb::heap_class(inner)?;
    // Only the classes a fast path takes (pinned at load time): at most ten pairs are ever asked.
    let t = thrift();
    let fast_classes = [
        crate::protocols::binary::class(),
        t.binary_protocol,
        t.compact_protocol,
        t.json.protocol,
        t.header.as_ref().map_or(0, |h| h.protocol),
    ];
    if !fast_classes.contains(&inner_class) {
        return None;
    }
    let known = PAIRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(d, i, _)| *d == class as usize && *i == inner_class as usize)
        .map(|(_, _, ok)| *ok);
    let forwards = match known {
        Some(ok) => ok,
        None => {
            // A class whose methods cannot be asked (a Ruby error) is not unwrapped.
            let ok = forwards_all(class, inner_class, decorator).unwrap_or(false);
            let mut pairs = PAIRS.lock().unwrap_or_else(|e| e.into_inner());
            pairs.push((class as usize, inner_class as usize, ok));
            ok
        }
    };
    forwards.then_some(inner)
}

/// `class.instance_method(name)`, or None when the class has no such method.
fn instance_method(class: VALUE, name: &str) -> Result<Option<VALUE>, Error> {
    match rb::funcall(class, INSTANCE_METHOD.get(), &[rb::symbol(name)]) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.is_kind_of(Ruby::get().expect("Ruby thread").exception_name_error()) => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cold]
fn forwards_all(class: VALUE, inner_class: VALUE, decorator: VALUE) -> Result<bool, Error> {
    let methods = if thrift().has_uuid_type {
        &CODEC_METHODS[..]
    } else {
        &CODEC_METHODS[..CODEC_METHODS.len() - UUID_METHODS]
    };
    for name in methods {
        let Some(m) = instance_method(class, name)? else {
            // Neither has it, or only the inner: a call the decorator answers with NoMethodError.
            if instance_method(inner_class, name)?.is_some() {
                return Ok(false);
            }
            continue;
        };
        let owner = rb::funcall(m, OWNER.get(), &[])?;
        if owner == decorator {
            continue;
        }
        // The same module's method of that name is the same method (UnboundMethod#== also compares the classes
        // the methods were taken from, before Ruby 3.2).
        let Some(theirs) = instance_method(inner_class, name)? else {
            return Ok(false);
        };
        if rb::funcall(theirs, OWNER.get(), &[])? != owner {
            return Ok(false);
        }
    }
    Ok(true)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    // SAFETY: the module is pinned at load time.
    let module =
        RModule::from_value(unsafe { rb::value(thrift().module) }).expect("Thrift is a module");
    let multiplexed: RClass = module.const_get("MultiplexedProtocol")?;
    let stored_message: RClass = module.const_get("StoredMessageProtocol")?;
    let decorator: RModule = module.const_get("ProtocolDecorator")?;
    let base: RClass = module.const_get("BaseProtocol")?;
    let _ = ruby;
    for class in [
        multiplexed.as_raw(),
        stored_message.as_raw(),
        decorator.as_raw(),
        base.as_raw(),
    ] {
        rb::pin_forever(class);
        GUARD.watch(class, Watch::Every);
    }
    *CLASSES.lock().unwrap_or_else(|e| e.into_inner()) = Some(Classes {
        multiplexed: multiplexed.as_raw(),
        stored_message: stored_message.as_raw(),
        decorator: decorator.as_raw(),
    });
    Ok(())
}
