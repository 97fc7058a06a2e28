//! The JSON fast paths of `Struct#read/#write` and `Union#read/#write` through an exact `Thrift::JsonProtocol`
//! (its methods, its contexts', its lookahead reader's and BaseProtocol's `skip` as the library defines them) over a
//! plain MemoryBufferTransport (writing, also an exact Framed or BufferedTransport): `write.rs` writes with the core's
//! `JsonOut`, `read.rs` reads with its `JsonIn`.
//!
//! The protocol keeps its state in Ruby objects: its contexts (`@context`, and the `@contexts` stack) and, reading,
//! the byte its `@reader` holds. The native code keeps them natively, starting from the context the struct is
//! written or read in and storing that one's flags back at the end; whenever the protocol's Ruby methods take over
//! (a value or step left to them, a failure, a transport no longer plain) they are shown as Ruby objects, as the
//! Ruby methods would have left them.

mod read;
mod write;

use std::sync::atomic::{AtomicBool, Ordering};

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::json::Context;

use crate::names::{IVAR_COLON, IVAR_CONTEXT, IVAR_CONTEXTS, IVAR_FIRST};
use crate::rb;
use crate::thrift::thrift;

pub use read::JsonSource;
pub use write::JsonEncoder;

/// False once Ruby code changes a method of JsonProtocol or of a class it relies on: struct reads and writes then
/// call them.
static JSON_METHODS_UNCHANGED: AtomicBool = AtomicBool::new(true);

pub fn method_changed() {
    JSON_METHODS_UNCHANGED.store(false, Ordering::Relaxed);
}

/// A context object's state: exactly one of the three context classes, its flags true or false.
pub(super) fn context_of(obj: VALUE) -> Option<Context> {
    let j = &thrift().json;
    let class = rb::heap_class(obj)?;
    let flag = |ivar| match rb::ivar_get(obj, ivar) {
        rb::QTRUE => Some(true),
        rb::QFALSE => Some(false),
        _ => None,
    };
    if class == j.top {
        Some(Context::Top)
    } else if class == j.pair {
        Some(Context::Pair {
            first: flag(IVAR_FIRST.get())?,
            colon: flag(IVAR_COLON.get())?,
        })
    } else if class == j.list {
        Some(Context::List {
            first: flag(IVAR_FIRST.get())?,
        })
    } else {
        None
    }
}

fn flag(b: bool) -> VALUE {
    if b {
        rb::QTRUE
    } else {
        rb::QFALSE
    }
}

/// Sets a context object's flags to `c`'s (the object is of `c`'s class).
pub(super) fn store(obj: VALUE, c: Context) -> Result<(), Error> {
    match c {
        Context::Top => Ok(()),
        Context::Pair { first, colon } => {
            rb::ivar_set(obj, IVAR_FIRST.get(), flag(first))?;
            rb::ivar_set(obj, IVAR_COLON.get(), flag(colon))
        }
        Context::List { first } => rb::ivar_set(obj, IVAR_FIRST.get(), flag(first)),
    }
}

/// A context object in `c`'s state, its ivars set in the order its `initialize` sets them.
pub(super) fn new_object(c: Context) -> Result<VALUE, Error> {
    let j = &thrift().json;
    let class = match c {
        Context::Top => j.top,
        Context::Pair { .. } => j.pair,
        Context::List { .. } => j.list,
    };
    // SAFETY: protected; rb_obj_alloc runs the class's allocator.
    let obj = protect(|| unsafe { rb_sys::rb_obj_alloc(class) })?;
    store(obj, c)?;
    Ok(obj)
}

/// The protocol's `@contexts`, which Ruby code may have made something else than an Array.
pub(super) fn contexts(protocol: VALUE) -> Result<VALUE, Error> {
    let contexts = rb::ivar_get(protocol, IVAR_CONTEXTS.get());
    rb::check_type(contexts, rb_sys::ruby_value_type::RUBY_T_ARRAY)?;
    Ok(contexts)
}

/// The context a struct is read or written in, when the fast path may go on from the protocol's state: an exact
/// JsonProtocol whose Ruby methods (and its helpers') are the library's, its `@contexts` an Array and its `@context`
/// exactly one of the context classes, none of them frozen (the Ruby methods would fail at once).
pub(super) fn protocol_context(protocol: VALUE) -> Option<(VALUE, Context)> {
    let contexts = rb::ivar_get(protocol, IVAR_CONTEXTS.get());
    let parent = rb::ivar_get(protocol, IVAR_CONTEXT.get());
    if !JSON_METHODS_UNCHANGED.load(Ordering::Relaxed)
        || !rb::is_exact_instance(protocol, thrift().json.protocol)
        || !rb::is_array(contexts)
        || [protocol, contexts, parent].into_iter().any(rb::is_frozen)
    {
        return None;
    }
    Some((parent, context_of(parent)?))
}

/// Shows native contexts to the protocol's Ruby methods: `parent` (the context the struct is in) takes the state of
/// the outermost, the ones opened since are pushed on `@contexts` as new objects, and `@context` is the current one.
pub(super) fn show_contexts(
    protocol: VALUE,
    parent: VALUE,
    stack: &[Context],
    current: Context,
) -> Result<(), Error> {
    let Some((&outermost, opened)) = stack.split_first() else {
        return store(parent, current);
    };
    store(parent, outermost)?;
    let contexts = contexts(protocol)?;
    // SAFETY: `contexts` is an Array (checked).
    unsafe { rb::ary_push(contexts, parent)? };
    for &c in opened {
        let obj = new_object(c)?;
        // SAFETY: as above.
        unsafe { rb::ary_push(contexts, obj)? };
    }
    rb::ivar_set(protocol, IVAR_CONTEXT.get(), new_object(current)?)
}
