//! `Thrift::Struct#read/#write` and `Thrift::Union#read/#write`, arity `(prot, depth = DEFAULT_RECURSION_DEPTH)`.
//!
//! The algorithm and the wire rules are the core's (`thrift_native_core::codec`); this folder supplies Ruby:
//! - `field_plan.rs`: each class's `FIELDS` compiled once into what the codec walks;
//! - `build.rs`: the Ruby objects the decoder makes (with `defaults.rs`: field defaults);
//! - `inspect.rs`: Ruby objects read back for the encoder;
//! - `fast.rs`: the fast path, when the protocol is exactly `BinaryProtocolAccelerated`, `Thrift::BinaryProtocol` or
//!   `Thrift::CompactProtocol` with our methods over a plain MemoryBufferTransport, an exact FramedTransport or
//!   BufferedTransport, or the StringIO an exact HTTPClientTransport or IOStreamTransport lends, or an exact
//!   `HeaderProtocol` over its HeaderTransport with its `BinaryProtocol` or `CompactProtocol` inside (thrift
//!   master): the whole tree is decoded from, and encoded into, the transport's buffer, with no method call per
//!   field and no field-header Arrays;
//! - `json/`: the same for an exact `Thrift::JsonProtocol` over a plain MemoryBufferTransport or an exact
//!   FramedTransport or BufferedTransport;
//! - `initialize.rs`: `Thrift::Struct#initialize` and `Thrift::Union#initialize`, for classes whose methods are the
//!   library's (`owners.rs`, which the decoder asks too before it allocates a nested struct);
//! - `calls.rs`: `new`, `read` and `write` as the RPC code calls them, without dispatch where they are ours;
//! - `decorators.rs`: a MultiplexedProtocol or StoredMessageProtocol that only passes the codec's calls on takes
//!   the fast path of the protocol inside;
//! - `dispatch.rs`: every other protocol, called as the C accelerator calls it, so that mocks and other protocols
//!   see the same call sequence.

mod build;
pub(crate) mod calls;
mod decorators;
mod defaults;
mod dispatch;
mod fast;
pub mod field_plan;
mod initialize;
mod inspect;
mod json;
mod owners;
mod sets;

use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, RModule, Ruby, Value};
use rb_sys::VALUE;
use thrift_native_core::codec::binary::{BinaryIn, BinaryOut};
use thrift_native_core::codec::compact::{CompactIn, CompactOut};
use thrift_native_core::codec::{
    check_depth, read_struct, write_struct, write_union, Encoder, Sink,
};

use self::build::RubyStruct;
use self::dispatch::{DispatchSink, DispatchSource};
use self::inspect::RubyValues;
use crate::protocols;
use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{IVAR_HEADER_TRANSPORT, IVAR_PROTOCOL, IVAR_TRANS};
use crate::ruby::{rb, registry};
use crate::struct_codec::field_plan::{plan_for, ClassPlan, RubyField};
use crate::thrift::errors;
use crate::thrift::thrift;
use crate::thrift::values::RubyBuilder;
use crate::transports::layered::LayeredBuffer;
use crate::transports::memory_buffer::MemoryBuffer;
use crate::transports::string_io::StringIoBuffer;

/// Tripped once Ruby code changes `read` or `write` of Thrift::Struct or Thrift::Union: `calls.rs` then calls them.
static CODEC: Guard = Guard::new();
/// Tripped once Ruby code changes a method of BinaryProtocolAccelerated (or CompactProtocol): the struct codec then
/// dispatches to that protocol's methods.
static BINARY: Guard = Guard::new();
static COMPACT: Guard = Guard::new();
/// Tripped once Ruby code changes a method of the pure-Ruby BinaryProtocol or of HeaderProtocol: struct read and
/// write through a HeaderProtocol then dispatch to its methods.
static PURE_BINARY: Guard = Guard::new();
static HEADER_PROTOCOL: Guard = Guard::new();

/// Which encoding the fast path may use for `protocol`: its transport, and the protocol object of that encoding
/// (`protocol` itself, or a HeaderProtocol's inner one). `plain`: the encoder is the plain BinaryProtocol, whose
/// `read_uuid` answers UTF-8 text (interpolated) where the C accelerator's answers BINARY.
enum Fast {
    Binary {
        trans: VALUE,
        encoder: VALUE,
        plain: bool,
    },
    Compact {
        trans: VALUE,
        encoder: VALUE,
    },
    No,
}

fn fast_protocol(protocol: VALUE) -> Fast {
    if BINARY.intact() && rb::is_exact_instance(protocol, protocols::binary::class()) {
        let trans = protocols::binary::TRANS.get(protocol);
        return Fast::Binary {
            trans,
            encoder: protocol,
            plain: false,
        };
    }
    if let Some(trans) = protocols::plain_binary::exact_trans(protocol) {
        return Fast::Binary {
            trans,
            encoder: protocol,
            plain: true,
        };
    }
    if COMPACT.intact() && rb::is_exact_instance(protocol, thrift().compact_protocol) {
        let trans = protocols::compact::TRANS.get(protocol);
        return Fast::Compact {
            trans,
            encoder: protocol,
        };
    }
    header_protocol(protocol).unwrap_or(Fast::No)
}

/// An exact HeaderProtocol whose methods are the library's, over an exact HeaderTransport handled natively, with
/// an exact BinaryProtocol (the pure-Ruby one, whose methods are unchanged) or CompactProtocol (ours) over that
/// transport inside: its encoding, read and written through the header transport's buffers.
fn header_protocol(protocol: VALUE) -> Option<Fast> {
    let h = thrift().header.as_ref()?;
    if !rb::is_exact_instance(protocol, h.protocol) || !HEADER_PROTOCOL.intact() {
        return None;
    }
    let trans = rb::ivar_get(protocol, IVAR_HEADER_TRANSPORT.get());
    let encoder = rb::ivar_get(protocol, IVAR_PROTOCOL.get());
    if !crate::transports::header::owns(trans) || rb::ivar_get(encoder, IVAR_TRANS.get()) != trans {
        return None;
    }
    if PURE_BINARY.intact() && rb::is_exact_instance(encoder, thrift().binary_protocol) {
        return Some(Fast::Binary {
            trans,
            encoder,
            plain: true,
        });
    }
    if COMPACT.intact() && rb::is_exact_instance(encoder, thrift().compact_protocol) {
        return Some(Fast::Compact { trans, encoder });
    }
    None
}

/// For `ThriftNative.explain`: the protocol a struct read or write through `protocol` reads (a decorator that only
/// passes the calls on seen through), its transport, and the encoding whose fast path it takes where that transport
/// lends its buffer ("binary", "compact", "json"; None: the protocol's methods, one call per value).
pub(crate) fn fast_path(protocol: VALUE) -> (VALUE, VALUE, Option<&'static str>) {
    let through = decorators::inner(protocol).unwrap_or(protocol);
    match fast_protocol(through) {
        Fast::Binary { trans, .. } => (through, trans, Some("binary")),
        Fast::Compact { trans, .. } => (through, trans, Some("compact")),
        Fast::No => match json::JsonEncoder::eligible(through) {
            Some((trans, ..)) => (through, trans, Some("json")),
            None => (through, rb::ivar_get(through, IVAR_TRANS.get()), None),
        },
    }
}

/// `(prot, depth = DEFAULT_RECURSION_DEPTH)`, as the C accelerator parses it (NUM2INT).
fn parse_args(ruby: &Ruby, args: &[Value]) -> Result<(VALUE, i64), Error> {
    if args.is_empty() || args.len() > 2 {
        return Err(crate::thrift::errors::exception(
            ruby.exception_arg_error(),
            &format!(
                "wrong number of arguments (given {}, expected 1..2)",
                args.len()
            ),
        ));
    }
    let depth = match args.get(1) {
        Some(d) => i64::from(rb::num2int(d.as_raw())?),
        None => thrift().default_recursion_depth,
    };
    let depth = check_depth(depth).map_err(|e| errors::from_core(ruby, e))?;
    Ok((args[0].as_raw(), depth))
}

/// `Struct#read` and `Union#read` (the class's plan says which it is).
fn read(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    let obj = rb_self.as_raw();
    let plan = plan_for(ruby, rb::heap_class(obj).unwrap_or(obj))?;
    read_planned(ruby, obj, plan, protocol, depth)
}

/// `read`, for `obj`, an instance of `plan`'s class.
fn read_planned(
    ruby: &Ruby,
    obj: VALUE,
    plan: &'static ClassPlan,
    protocol: VALUE,
    depth: i64,
) -> Result<(), Error> {
    let target = RubyStruct::existing(obj, plan);
    let b = &mut RubyBuilder::new(ruby);
    // The fast paths read through a decorator's inner protocol; the dispatch path calls the decorator.
    let through = decorators::inner(protocol).unwrap_or(protocol);
    // One monomorphised decoder per encoding and buffer.
    macro_rules! fast {
        ($buffer:ty, $encoding:expr, $trans:expr, $encoder:expr) => {
            let src = fast::source::<$buffer, _>(ruby, through, $encoder, $trans, $encoding);
            if let Some(mut src) = src {
                let result = read_struct(&mut src, b, target, &plan.def, depth);
                src.finish();
                return result.map(drop);
            }
        };
    }
    match fast_protocol(through) {
        Fast::Binary {
            trans,
            encoder,
            plain,
        } => {
            b.utf8_uuids = plain;
            fast!(MemoryBuffer, binary_in, trans, encoder);
            fast!(LayeredBuffer, binary_in, trans, encoder);
            fast!(StringIoBuffer, binary_in, trans, encoder);
        }
        Fast::Compact { trans, encoder } => {
            fast!(MemoryBuffer, compact_in, trans, encoder);
            fast!(LayeredBuffer, compact_in, trans, encoder);
            fast!(StringIoBuffer, compact_in, trans, encoder);
        }
        Fast::No => {
            macro_rules! json {
                ($bytes:ty) => {
                    if let Some(mut src) = json::JsonSource::<$bytes>::new(through) {
                        let result = read_struct(&mut src, b, target, &plan.def, depth);
                        let finished = src.finish(result.is_ok());
                        return result.and(finished);
                    }
                };
            }
            json!(MemoryBuffer);
            json!(LayeredBuffer);
        }
    }
    let mut src = DispatchSource::new(protocol);
    read_struct(&mut src, b, target, &plan.def, depth).map(drop)
}

/// The decoders under the loaded thrift's wire rules (UUID, negative sizes, varint32 overflow).
fn binary_in<H>(host: H) -> BinaryIn<H> {
    BinaryIn::with_rules(host, thrift().contract.rules())
}

fn compact_in<H>(host: H) -> CompactIn<H> {
    CompactIn::with_rules(host, thrift().contract.rules())
}

fn write_with<S>(
    values: &mut RubyValues,
    sink: &mut S,
    obj: VALUE,
    depth: i64,
    union: bool,
) -> Result<(), Error>
where
    S: Sink<VALUE, RubyField, Error = Error>,
{
    if union {
        write_union(values, sink, obj, depth)
    } else {
        write_struct(values, sink, obj, depth)
    }
}

fn write_fast<E: Encoder + fast::RubyState>(
    values: &mut RubyValues,
    sink: Option<fast::FastSink<E>>,
    obj: VALUE,
    depth: i64,
    union: bool,
) -> Option<Result<(), Error>> {
    let mut sink = sink?;
    let result = write_with(values, &mut sink, obj, depth, union);
    let finished = sink.finish(result.is_ok());
    Some(result.and(finished))
}

fn write(ruby: &Ruby, rb_self: Value, args: &[Value], union: bool) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    write_known(ruby, rb_self.as_raw(), None, protocol, depth, union)
}

/// `write`, for `obj`, whose class's plan the caller may know already (`calls.rs`).
fn write_known(
    ruby: &Ruby,
    obj: VALUE,
    known: Option<&'static ClassPlan>,
    protocol: VALUE,
    depth: i64,
    union: bool,
) -> Result<(), Error> {
    let values = &mut RubyValues::new(ruby).knowing(obj, known);
    let through = decorators::inner(protocol).unwrap_or(protocol);
    let done = match fast_protocol(through) {
        Fast::Binary { trans, .. } => write_fast(
            values,
            fast::sink(through, trans, BinaryOut::new),
            obj,
            depth,
            union,
        ),
        Fast::Compact { trans, .. } => write_fast(
            &mut RubyValues::new(ruby).knowing(obj, known).compact(),
            fast::sink(through, trans, CompactOut::new),
            obj,
            depth,
            union,
        ),
        Fast::No => json::JsonEncoder::eligible(through).and_then(|(trans, parent, context)| {
            let json_values = &mut RubyValues::json(ruby).knowing(obj, known);
            let encoder = |out| json::JsonEncoder::new(out, through, parent, context);
            write_fast(
                json_values,
                fast::sink(through, trans, encoder),
                obj,
                depth,
                union,
            )
        }),
    };
    done.unwrap_or_else(|| write_with(values, &mut DispatchSink::new(protocol), obj, depth, union))
}

fn struct_write(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    write(ruby, rb_self, args, false)
}

fn union_write(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    write(ruby, rb_self, args, true)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    sets::init();
    decorators::init(ruby)?;
    let t = thrift();
    CODEC.watch(t.struct_module, Watch::Methods(&["read", "write"]));
    CODEC.watch(t.union, Watch::Methods(&["read", "write"]));
    BINARY.watch(protocols::binary::class(), Watch::Every);
    COMPACT.watch(t.compact_protocol, Watch::Every);
    if let Some(h) = &t.header {
        PURE_BINARY.watch(t.binary_protocol, Watch::Every);
        HEADER_PROTOCOL.watch(h.protocol, Watch::Every);
    }
    // SAFETY: Thrift::Struct and Thrift::Union are pinned at load time.
    let (struct_module, union) = unsafe { (rb::value(t.struct_module), rb::value(t.union)) };
    let struct_module = RModule::from_value(struct_module).expect("Thrift::Struct is a module");
    let union = RClass::from_value(union).expect("Thrift::Union is a class");
    registry::define_method(ruby, struct_module, "read", magnus::method!(read, -1))?;
    registry::define_method(
        ruby,
        struct_module,
        "write",
        magnus::method!(struct_write, -1),
    )?;
    registry::define_method(ruby, union, "read", magnus::method!(read, -1))?;
    registry::define_method(ruby, union, "write", magnus::method!(union_write, -1))?;
    initialize::init(ruby)?;
    registry::define_method(
        ruby,
        struct_module,
        "initialize",
        magnus::method!(initialize::struct_initialize, -1),
    )?;
    registry::define_method(
        ruby,
        union,
        "initialize",
        magnus::method!(initialize::union_initialize, -1),
    )?;
    Ok(())
}
