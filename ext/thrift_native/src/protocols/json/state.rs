//! Thrift::JsonProtocol's state, which stays in its Ruby objects: the contexts (`@context`, and the `@contexts` stack,
//! instances of the three context classes with their `@first`/`@colon` flags) and the byte its `@reader` (a
//! LookaheadReader) holds. The native methods and the struct codec read it into the core's `Context`s and held byte,
//! and store it back as the Ruby methods would have left it.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::json::{Context, JsonIn, JsonRules};

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{
    IVAR_COLON, IVAR_CONTEXT, IVAR_CONTEXTS, IVAR_DATA, IVAR_FIRST, IVAR_HAS_DATA, IVAR_READER,
    IVAR_TRANS,
};
use crate::ruby::rb;
use crate::thrift::thrift;
use crate::transports::buffer::ReadBuffer;

/// Tripped once Ruby code changes a method of JsonProtocol or of a class it relies on (its contexts, its reader,
/// BaseProtocol's `skip`): struct reads and writes then call them.
static GUARD: Guard = Guard::new();

/// Registers the classes the native methods and the struct codec's JSON paths rely on.
pub fn watch() {
    let j = &thrift().json;
    for class in [j.protocol, j.top, j.pair, j.list, j.reader, j.base] {
        GUARD.watch(class, Watch::Every);
    }
}

/// A context object's state: exactly one of the three context classes, its flags true or false.
pub fn context_of(obj: VALUE) -> Option<Context> {
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
pub fn store(obj: VALUE, c: Context) -> Result<(), Error> {
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
pub fn new_object(c: Context) -> Result<VALUE, Error> {
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
pub fn contexts(protocol: VALUE) -> Result<VALUE, Error> {
    let contexts = rb::ivar_get(protocol, IVAR_CONTEXTS.get());
    rb::check_type(contexts, rb_sys::ruby_value_type::RUBY_T_ARRAY)?;
    Ok(contexts)
}

/// The context a struct is read or written in, when the fast path may go on from the protocol's state: an exact
/// JsonProtocol whose Ruby methods (and its helpers') are the library's, its `@contexts` an Array and its `@context`
/// exactly one of the context classes, none of them frozen (the Ruby methods would fail at once).
pub fn protocol_context(protocol: VALUE) -> Option<(VALUE, Context)> {
    let contexts = rb::ivar_get(protocol, IVAR_CONTEXTS.get());
    let parent = rb::ivar_get(protocol, IVAR_CONTEXT.get());
    if !GUARD.intact()
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
pub fn show_contexts(
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

/// The byte `@reader` holds (`Some(None)` when none), if the reader is exactly a LookaheadReader over a plain
/// MemoryBufferTransport and not frozen.
fn reader_state(reader: VALUE) -> Option<Option<u8>> {
    if !rb::is_exact_instance(reader, thrift().json.reader) || rb::is_frozen(reader) {
        return None;
    }
    match rb::ivar_get(reader, IVAR_HAS_DATA.get()) {
        rb::QTRUE => {
            let data = rb::ivar_get(reader, IVAR_DATA.get());
            if !rb::is_string(data) {
                return None;
            }
            // SAFETY: `data` is a String, read at once.
            match unsafe { rb::str_bytes(data) } {
                &[b] => Some(Some(b)),
                _ => None,
            }
        }
        rb::QFALSE | rb::QNIL => Some(None),
        _ => None,
    }
}

/// A native read in progress: the protocol's state as the core's reader holds it, over the bytes of its `@reader`'s
/// transport.
pub struct Reading<B> {
    pub json: JsonIn,
    pub buffer: B,
    pub protocol: VALUE,
    pub reader: VALUE,
    /// The reader's transport.
    pub trans: VALUE,
    /// The context object the read starts in (`@context`).
    pub parent: VALUE,
    /// `@reader` held a byte when the read began.
    held_before: bool,
}

/// `B`: the reader's transport's bytes, read as its Ruby `read(1)` calls would take them
/// ([`ReadBuffer::advance_bytewise`]), up to the buffer's end (a refill is the transport's method).
impl<B: ReadBuffer> Reading<B> {
    /// The protocol's state, when a native read may go on from it: `protocol_context`, and an exact, unfrozen
    /// LookaheadReader over a transport whose bytes are `B`.
    pub fn new(protocol: VALUE) -> Option<Self> {
        let (parent, context) = protocol_context(protocol)?;
        let reader = rb::ivar_get(protocol, IVAR_READER.get());
        let held = reader_state(reader)?;
        let trans = rb::ivar_get(reader, IVAR_TRANS.get());
        let buffer = B::plain(trans)?;
        Some(Reading {
            json: JsonIn::new(context, held, rules()),
            buffer,
            protocol,
            reader,
            trans,
            parent,
            held_before: held.is_some(),
        })
    }

    /// Stores the state as the Ruby objects would hold it: the reader's held byte in `@hasData` and `@data` (`@data`
    /// is only read while a byte is held, so a stale one is left as it is), the contexts (`show_contexts`).
    pub fn show(&self) -> Result<(), Error> {
        match self.json.held() {
            Some(b) => {
                rb::ivar_set(self.reader, IVAR_DATA.get(), rb::binary_string(&[b]))?;
                rb::ivar_set(self.reader, IVAR_HAS_DATA.get(), rb::QTRUE)?;
            }
            None if self.held_before => rb::ivar_set(self.reader, IVAR_HAS_DATA.get(), rb::QFALSE)?,
            None => {}
        }
        show_contexts(
            self.protocol,
            self.parent,
            self.json.stack(),
            self.json.context(),
        )
    }
}

/// How the loaded thrift's JsonProtocol reads text (UUID's name; thrift master's UTF-8 strings).
pub fn rules() -> JsonRules {
    JsonRules {
        uuid: thrift().has_uuid_type,
        utf8: thrift().contract.json_utf8_strings,
    }
}
