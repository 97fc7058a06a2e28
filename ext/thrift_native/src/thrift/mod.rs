//! What the loaded thrift library provides, probed once at load time and cached (GC-pinned).
//!
//! thrift 0.14 (Debian's) lacks `Types::UUID`, `DEFAULT_RECURSION_DEPTH` and `TransportException::NEGATIVE_SIZE`;
//! newer versions have them. Where the versions' C accelerators behave differently, [`Contract`] says which to
//! follow. Probing never raises anything but the LoadError built in `lib.rs`.

pub mod bytes;
pub mod errors;

use std::sync::OnceLock;

use magnus::rb_sys::AsRawValue;
use magnus::value::ReprValue;
use magnus::{Error, Module, RClass, RModule, Ruby, Value};
use rb_sys::VALUE;

use thrift_native_core::wire::{NegativeSizes, Rules, Varint32Rule};

use crate::ruby::rb;

/// Values used in place of constants that thrift 0.14 does not define.
pub const FALLBACK_UUID_TYPE: i64 = 16;
pub const FALLBACK_RECURSION_DEPTH: i64 = 64;
pub const FALLBACK_TRANSPORT_NEGATIVE_SIZE: i64 = 5;

/// ProtocolException type codes (identical in every supported thrift).
#[derive(Debug, Clone, Copy)]
pub struct ProtocolErrorCodes {
    pub invalid_data: i64,
    pub negative_size: i64,
    pub size_limit: i64,
    pub bad_version: i64,
    pub depth_limit: i64,
}

/// `Thrift::CompactProtocol`'s message-header constants (the same in every supported thrift).
#[derive(Debug, Clone, Copy)]
pub struct CompactConstants {
    pub protocol_id: i64,
    pub version: i64,
    pub version_mask: i64,
    pub type_mask: i64,
    pub type_bits: i64,
    pub type_shift_amount: i64,
}

#[derive(Debug)]
pub struct Thrift {
    pub module: VALUE,
    /// `Thrift::Struct` (a module) and `Thrift::Union` (a class).
    pub struct_module: VALUE,
    pub union: VALUE,
    /// `::Set`.
    pub set_class: VALUE,
    pub bytes: VALUE,
    pub memory_buffer: VALUE,
    pub framed_transport: VALUE,
    pub buffered_transport: VALUE,
    /// `BufferedTransport::DEFAULT_BUFFER` (4096 in every supported thrift).
    pub buffered_default: usize,
    pub binary_protocol: VALUE,
    pub compact_protocol: VALUE,
    pub compact: CompactConstants,
    pub protocol_exception: VALUE,
    pub transport_exception: VALUE,
    pub codes: ProtocolErrorCodes,
    pub transport_negative_size: i64,
    pub garbage_buffer_size: usize,
    pub version_1: i64,
    pub version_mask: i64,
    pub type_mask: i64,
    /// `Types::UUID` when the library defines it, else 16.
    pub uuid_type: i64,
    pub has_uuid_type: bool,
    /// `Thrift::DEFAULT_RECURSION_DEPTH` when defined, else 64.
    pub default_recursion_depth: i64,
    /// HeaderTransport and HeaderProtocol, when the library has them (thrift master).
    pub header: Option<HeaderClasses>,
    /// `Thrift::JsonProtocol` and its three context classes (every supported thrift has them).
    pub json: JsonClasses,
    /// Where the C accelerators of thrift versions differ, which one the loaded library calls for.
    pub contract: Contract,
}

/// The loaded thrift's own accelerator's behaviour where versions differ, told by what its pure-Ruby library has
/// (a constant or method that came in the same upstream change), never by a version number. Unsafe old behaviour
/// (crashes, unbounded recursion or allocation) is not among these: it is not reproduced (README, "What is
/// accelerated", lists both).
#[derive(Debug, Clone, Copy)]
pub struct Contract {
    /// thrift 0.24 on (`BinaryProtocol::BYTE_MAX` came with it): BinaryProtocolAccelerated's integer arguments are
    /// range-checked (TypeError, RangeError "integer out of bounds"). Before, the C accelerator converted them with
    /// NUM2INT/NUM2LL and kept the low bytes, as the pure-Ruby protocol's `pack` does.
    pub checked_binary_writes: bool,
    /// thrift 0.23 on (`Types::UUID` came in that release): a union's errors are ProtocolException(INVALID_DATA)
    /// and BinaryProtocolAccelerated's version errors carry BAD_VERSION. Before, RuntimeError, and type 0 (the old C
    /// accelerator never set its BAD_VERSION).
    pub typed_errors: bool,
    /// thrift master (`CompactProtocol::I16_MAX` came with it, THRIFT-6139): CompactProtocol's integer arguments are
    /// range-checked, sizes too, and a field type is checked before `@last_field` is popped. Before, NUM2INT/NUM2LL
    /// (an i16 written as the i32 it is, a byte's low 8 bits, a negative size as it is).
    pub checked_compact_writes: bool,
    /// thrift master (the pure `CompactTypes.get_ttype` raises ProtocolException for an unknown type, THRIFT-6126):
    /// an unknown compact type is ProtocolException(INVALID_DATA, "Unknown compact type: N"). Before, StandardError
    /// "don't know what type: N".
    pub compact_unknown_type_errors: bool,
    /// thrift master (the pure `read_message_begin`'s header errors carry BAD_VERSION, THRIFT-6102): CompactProtocol's
    /// header errors are BAD_VERSION with "Expected version 1 but got N". Before, type -1 and the old C
    /// accelerator's swapped "Expected version id N but got 1". `write_bool` testing truthiness (THRIFT-6101, the same
    /// batch, with no pure-Ruby trace of its own) follows this too; before, only `true` was written as true.
    pub compact_header_codes: bool,
    /// thrift master (`BaseProtocol::MAX_CONTAINER_SIZE`, THRIFT-6136): a compact list, set or map size beyond
    /// INT32_MAX is ProtocolException(SIZE_LIMIT). Before, `read_*_begin` returned it as a negative int32.
    pub container_size_limit: bool,
    /// thrift master (the pure `MemoryBufferTransport#read(-1)` raises TransportException, THRIFT-6099, the batch of
    /// THRIFT-6103 and 6105 that left no pure-Ruby trace): MemoryBufferTransport#read_byte is unsigned and
    /// `read_into_buffer` keeps the bytes it consumed before EOFError. Before, a signed byte, and nothing consumed.
    pub memory_buffer_fixes: bool,
    /// thrift 0.24 on (`TransportException::NEGATIVE_SIZE`, THRIFT-6025): MemoryBufferTransport has its own
    /// `read_all`, which consumes nothing when too few bytes remain. Before, BaseTransport#read_all over the C
    /// accelerator's `read`, which consumed what remained before EOFError.
    pub memory_buffer_read_all: bool,
    /// thrift 0.24 on (the same change): BinaryProtocolAccelerated refuses a negative size (ProtocolException
    /// NEGATIVE_SIZE). Before, `read_*_begin` answered it, `read_binary` asked `read_all` for it (which answers ""),
    /// and the struct decoder met it: thrift 0.14-0.22 raised ArgumentError "negative array size" for a list or set
    /// to read and read a map as empty, 0.23 raised ProtocolException "Negative container size" for both.
    pub negative_sizes_refused: bool,
    /// thrift 0.24 on (`CompactProtocol::MAX_VARINT32_BYTES`): a compact varint32 is 5 bytes at most. Before, the C
    /// accelerator read every varint as a varint64 and cut it to 32 bits (the 10-byte limit is kept: its loop had
    /// none).
    pub varint32_limit: bool,
    /// thrift master (`CompactProtocol::MAX_VARINT32_LAST_BYTE`, THRIFT-6145): a 5-byte varint32 with bits beyond 32
    /// is refused. Before, the C accelerator dropped them.
    pub varint32_overflow_refused: bool,
    /// thrift master (the pure `Struct#read` of an instance with fields set clears them first, THRIFT-6124):
    /// `Struct#read` into an instance that has ivars checks that it is not frozen and resets its fields to their
    /// defaults first; `Union#read` clears `@setfield` and `@value` first and sets `@setfield` with the value. Before,
    /// an instance kept what the message did not set, and a union's `@setfield` was set before its value was read.
    pub reused_structs_reset: bool,
    /// thrift master (THRIFT-6104, the batch of `memory_buffer_fixes`, with no pure-Ruby trace of its own):
    /// `Struct#write` takes any `Set` (a subclass, a Set with singleton methods) as a set. Before, only an instance
    /// of exactly `::Set`; anything else had to be a Hash (TypeError).
    pub set_subclass_writes: bool,
    /// thrift master (THRIFT-6126's JSON part: the pure `JsonProtocol#get_type_id_for_type_name` raises it): a type
    /// with no JSON name is ProtocolException(INVALID_DATA, "Unknown type id: N"). Before, NotImplementedError.
    pub json_unknown_type_errors: bool,
    /// thrift master (the pure `JsonProtocol#decode_json_string`, THRIFT-6130's Unicode batch): JsonProtocol reads
    /// every string as UTF-8 (refusing invalid text) and joins `\u` surrogate pairs. Before, a string with raw
    /// non-ASCII bytes was BINARY and a surrogate escape a RangeError.
    pub json_utf8_strings: bool,
}

impl Contract {
    /// The wire rules of the core's readers for this contract.
    pub fn rules(&self) -> Rules {
        Rules {
            uuid: self.typed_errors,
            negative_sizes: NegativeSizes {
                binary: !self.negative_sizes_refused,
                compact: !self.container_size_limit,
            },
            varint32: if self.varint32_overflow_refused {
                Varint32Rule::Refusing
            } else if self.varint32_limit {
                Varint32Rule::Dropping
            } else {
                Varint32Rule::Wide
            },
        }
    }
}

/// `Thrift::JsonProtocol` and the contexts it keeps in `@context` (`JSONContext`, `JSONPairContext`,
/// `JSONListContext`), whose Ruby methods the struct codec's JSON encoder reproduces.
#[derive(Debug)]
pub struct JsonClasses {
    pub protocol: VALUE,
    pub top: VALUE,
    pub pair: VALUE,
    pub list: VALUE,
    /// `Thrift::LookaheadReader`, the protocol's `@reader`.
    pub reader: VALUE,
    /// `Thrift::BaseProtocol`, whose `skip` the JSON reader reproduces.
    pub base: VALUE,
}

impl JsonClasses {
    /// Whether `class` is one of them.
    pub fn holds(&self, class: VALUE) -> bool {
        [
            self.protocol,
            self.top,
            self.pair,
            self.list,
            self.reader,
            self.base,
        ]
        .contains(&class)
    }
}

/// thrift master's THeader classes and what their native methods need.
#[derive(Debug)]
pub struct HeaderClasses {
    pub transport: VALUE,
    pub protocol: VALUE,
    /// `::StringIO`, the transport's read and write buffers.
    pub string_io: VALUE,
    /// `Zlib::NeedDict`, which the Ruby transport lets through from a ZLIB payload needing a dictionary.
    pub zlib_need_dict: VALUE,
    /// `Zlib::Inflate` and `Zlib::Deflate`: while their methods are unchanged (not mocked), the ZLIB transform runs
    /// natively (lib/thrift_native.rb watches them).
    pub zlib_inflate: VALUE,
    pub zlib_deflate: VALUE,
    /// TransportException codes.
    pub unknown: i64,
    pub end_of_file: i64,
    pub size_limit: i64,
}

// SAFETY: the VALUEs are pinned classes and modules that live as long as the process; they are only used while
// holding the GVL.
unsafe impl Send for Thrift {}
// SAFETY: as for Send: read-only after the probe, and only under the GVL.
unsafe impl Sync for Thrift {}

static THRIFT: OnceLock<Thrift> = OnceLock::new();

#[inline(always)]
pub fn thrift() -> &'static Thrift {
    THRIFT
        .get()
        .expect("thrift_native is initialised before any of its methods can run")
}

fn const_value(scope: impl Module, name: &str) -> Result<Value, Error> {
    scope.const_get::<_, Value>(name)
}

fn optional_integer(
    ruby: &Ruby,
    scope: impl Module,
    name: &str,
    fallback: i64,
) -> Result<(i64, bool), Error> {
    let defined: bool = scope
        .as_value()
        .funcall("const_defined?", (ruby.to_symbol(name), false))?;
    if defined {
        Ok((scope.const_get::<_, i64>(name)?, true))
    } else {
        Ok((fallback, false))
    }
}

/// The marker of thrift master's batch of CompactProtocol and MemoryBufferTransport fixes (THRIFT-6099 to 6139), for
/// a probe whose method another accelerator, loaded before this one, has already replaced: calling that one could
/// crash (thrift 0.14's C `MemoryBufferTransport#read(-1)` does).
const BATCH_MARKER: &str = "Thrift::CompactProtocol.const_defined?(:I16_MAX, false)";

/// Whether the loaded library's own Ruby `code` answers true (`#{BATCH_MARKER}` in it stands for that marker). It
/// runs on fresh objects before this extension replaces any method; anything it raises (a library too different to
/// answer) counts as false, the older behaviour.
fn behaves(ruby: &Ruby, code: &str) -> bool {
    let code = code.replace("#{BATCH_MARKER}", BATCH_MARKER);
    let guarded = format!("begin\n{code}\nrescue StandardError, NotImplementedError\nfalse\nend");
    ruby.eval::<bool>(&guarded).unwrap_or(false)
}

fn pinned(v: impl ReprValue) -> VALUE {
    let raw = v.as_value().as_raw();
    rb::pin_forever(raw);
    raw
}

/// Probes the loaded thrift library. Any error here becomes the LoadError raised by `init`.
pub fn probe(ruby: &Ruby) -> Result<&'static Thrift, Error> {
    let module: RModule = ruby.class_object().const_get("Thrift")?;
    let types: RModule = module.const_get("Types")?;
    let protocol_exception: RClass = module.const_get("ProtocolException")?;
    let transport_exception: RClass = module.const_get("TransportException")?;
    let memory_buffer: RClass = module.const_get("MemoryBufferTransport")?;
    let framed_transport: RClass = module.const_get("FramedTransport")?;
    let buffered_transport: RClass = module.const_get("BufferedTransport")?;
    let buffered_default: i64 = buffered_transport.const_get("DEFAULT_BUFFER")?;
    let binary_protocol: RClass = module.const_get("BinaryProtocol")?;
    let compact_protocol: RClass = module.const_get("CompactProtocol")?;
    let bytes: RModule = module.const_get("Bytes")?;
    let struct_module = const_value(module, "Struct")?;
    let union = const_value(module, "Union")?;
    let set_class = const_value(ruby.class_object(), "Set")?;

    let code = |name: &str| protocol_exception.const_get::<_, i64>(name);
    let codes = ProtocolErrorCodes {
        invalid_data: code("INVALID_DATA")?,
        negative_size: code("NEGATIVE_SIZE")?,
        size_limit: code("SIZE_LIMIT")?,
        bad_version: code("BAD_VERSION")?,
        depth_limit: code("DEPTH_LIMIT")?,
    };
    let (uuid_type, has_uuid_type) = optional_integer(ruby, types, "UUID", FALLBACK_UUID_TYPE)?;
    let (default_recursion_depth, _) = optional_integer(
        ruby,
        module,
        "DEFAULT_RECURSION_DEPTH",
        FALLBACK_RECURSION_DEPTH,
    )?;
    let (transport_negative_size, has_transport_negative_size) = optional_integer(
        ruby,
        transport_exception,
        "NEGATIVE_SIZE",
        FALLBACK_TRANSPORT_NEGATIVE_SIZE,
    )?;
    let compact_const = |name: &str| compact_protocol.const_get::<_, i64>(name);
    let compact = CompactConstants {
        protocol_id: compact_const("PROTOCOL_ID")?,
        version: compact_const("VERSION")?,
        version_mask: compact_const("VERSION_MASK")?,
        type_mask: compact_const("TYPE_MASK")?,
        type_bits: compact_const("TYPE_BITS")?,
        type_shift_amount: compact_const("TYPE_SHIFT_AMOUNT")?,
    };
    let garbage_buffer_size: i64 = memory_buffer.const_get("GARBAGE_BUFFER_SIZE")?;
    let header = probe_header(ruby, module, transport_exception)?;
    let defined = |scope: RClass, name: &str| -> Result<bool, Error> {
        scope
            .as_value()
            .funcall("const_defined?", (ruby.to_symbol(name), false))
    };
    let memory_buffer_fixes = behaves(
        ruby,
        "if Thrift::MemoryBufferTransport.instance_method(:read).source_location.nil?
           #{BATCH_MARKER}
         else
           begin; Thrift::MemoryBufferTransport.new(\"x\").read(-1); false
           rescue Thrift::TransportException; true; end
         end",
    );
    let contract = Contract {
        checked_binary_writes: defined(binary_protocol, "BYTE_MAX")?,
        typed_errors: has_uuid_type,
        checked_compact_writes: defined(compact_protocol, "I16_MAX")?,
        compact_unknown_type_errors: behaves(
            ruby,
            "begin; Thrift::CompactProtocol::CompactTypes.get_ttype(14); false
             rescue Thrift::ProtocolException; true; end",
        ),
        compact_header_codes: behaves(
            ruby,
            "if Thrift::CompactProtocol.instance_method(:read_message_begin).source_location.nil?
               #{BATCH_MARKER}
             else
               begin; Thrift::CompactProtocol.new(Thrift::MemoryBufferTransport.new(\"\\0\")).read_message_begin; false
               rescue Thrift::ProtocolException => e; e.type == Thrift::ProtocolException::BAD_VERSION; end
             end",
        ),
        container_size_limit: defined(module.const_get("BaseProtocol")?, "MAX_CONTAINER_SIZE")?,
        memory_buffer_fixes,
        memory_buffer_read_all: has_transport_negative_size,
        negative_sizes_refused: has_transport_negative_size,
        varint32_limit: defined(compact_protocol, "MAX_VARINT32_BYTES")?,
        varint32_overflow_refused: defined(compact_protocol, "MAX_VARINT32_LAST_BYTE")?,
        reused_structs_reset: behaves(
            ruby,
            "k = Class.new do
               include Thrift::Struct
               include Thrift::Struct_Union
               const_set(:FIELDS, { 1 => { type: Thrift::Types::I32, name: 'a' } })
               def struct_fields; self.class::FIELDS; end
               def validate; end
             end
             o = k.new
             o.instance_variable_set(:@a, 5)
             o.read(Thrift::BinaryProtocol.new(Thrift::MemoryBufferTransport.new(\"\\0\".b)))
             o.instance_variable_get(:@a).nil?",
        ),
        set_subclass_writes: memory_buffer_fixes,
        json_unknown_type_errors: behaves(
            ruby,
            "begin; Thrift::JsonProtocol.allocate.get_type_name_for_type_id(0); false
             rescue Thrift::ProtocolException; true; end",
        ),
        json_utf8_strings: behaves(
            ruby,
            "Thrift::JsonProtocol.private_method_defined?(:decode_json_string)",
        ),
    };
    let json = JsonClasses {
        protocol: pinned(const_value(module, "JsonProtocol")?),
        top: pinned(const_value(module, "JSONContext")?),
        pair: pinned(const_value(module, "JSONPairContext")?),
        list: pinned(const_value(module, "JSONListContext")?),
        reader: pinned(const_value(module, "LookaheadReader")?),
        base: pinned(const_value(module, "BaseProtocol")?),
    };

    let found = Thrift {
        module: pinned(module),
        struct_module: pinned(struct_module),
        union: pinned(union),
        set_class: pinned(set_class),
        bytes: pinned(bytes),
        memory_buffer: pinned(memory_buffer),
        framed_transport: pinned(framed_transport),
        buffered_transport: pinned(buffered_transport),
        buffered_default: usize::try_from(buffered_default).unwrap_or(4096),
        binary_protocol: pinned(binary_protocol),
        compact_protocol: pinned(compact_protocol),
        compact,
        protocol_exception: pinned(protocol_exception),
        transport_exception: pinned(transport_exception),
        codes,
        transport_negative_size,
        garbage_buffer_size: usize::try_from(garbage_buffer_size).unwrap_or(4096),
        version_1: binary_protocol.const_get("VERSION_1")?,
        version_mask: binary_protocol.const_get("VERSION_MASK")?,
        type_mask: binary_protocol.const_get("TYPE_MASK")?,
        uuid_type,
        has_uuid_type,
        default_recursion_depth,
        header,
        json,
        contract,
    };
    let _ = THRIFT.set(found);
    Ok(thrift())
}

/// HeaderTransport and HeaderProtocol, if the library defines both (thrift master; not 0.14 to 0.22).
fn probe_header(
    ruby: &Ruby,
    module: RModule,
    transport_exception: RClass,
) -> Result<Option<HeaderClasses>, Error> {
    let defined = |scope: Value, name: &str| -> Result<bool, Error> {
        scope.funcall("const_defined?", (ruby.to_symbol(name), false))
    };
    let m = module.as_value();
    if !defined(m, "HeaderTransport")? || !defined(m, "HeaderProtocol")? {
        return Ok(None);
    }
    let transport: RClass = module.const_get("HeaderTransport")?;
    let protocol: RClass = module.const_get("HeaderProtocol")?;
    let string_io = const_value(ruby.class_object(), "StringIO")?;
    let zlib: RModule = ruby.class_object().const_get("Zlib")?;
    let zlib_need_dict = const_value(zlib, "NeedDict")?;
    let zlib_inflate = const_value(zlib, "Inflate")?;
    let zlib_deflate = const_value(zlib, "Deflate")?;
    let code = |name: &str| transport_exception.const_get::<_, i64>(name);
    Ok(Some(HeaderClasses {
        transport: pinned(transport),
        protocol: pinned(protocol),
        string_io: pinned(string_io),
        zlib_need_dict: pinned(zlib_need_dict),
        zlib_inflate: pinned(zlib_inflate),
        zlib_deflate: pinned(zlib_deflate),
        unknown: code("UNKNOWN")?,
        end_of_file: code("END_OF_FILE")?,
        size_limit: code("SIZE_LIMIT")?,
    }))
}
