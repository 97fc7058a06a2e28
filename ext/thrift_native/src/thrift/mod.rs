//! What the loaded thrift library provides, probed once at load time and cached (GC-pinned).
//!
//! thrift 0.14 (Debian's) lacks `Types::UUID`, `DEFAULT_RECURSION_DEPTH` and `TransportException::NEGATIVE_SIZE`;
//! newer versions have them. Where the versions' C accelerators behave differently, [`Contract`] says which to
//! follow. Probing never raises anything but the LoadError built in `lib.rs`.

pub mod bytes;
pub mod contract;
pub mod errors;
pub mod values;

use std::sync::OnceLock;

use magnus::rb_sys::AsRawValue;
use magnus::value::ReprValue;
use magnus::{Error, Module, RClass, RModule, Ruby, Value};
use rb_sys::VALUE;

use crate::ruby::rb;
use contract::Contract;

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
    /// `Thrift::Struct_Union` (what both include: `name_to_id`) and `::Kernel` (`instance_variable_set`'s owner).
    pub struct_union: VALUE,
    pub kernel: VALUE,
    /// `::Set`.
    pub set_class: VALUE,
    pub bytes: VALUE,
    /// `Thrift::BaseTransport`, whose `read_all`, `read_byte` and `read_into_buffer` the StringIO transports use.
    pub base_transport: VALUE,
    pub memory_buffer: VALUE,
    pub framed_transport: VALUE,
    /// `Thrift::HTTPClientTransport` and `Thrift::IOStreamTransport`, where the library defines them (it does in
    /// every supported thrift; probed all the same).
    pub http_client_transport: Option<VALUE>,
    pub io_stream_transport: Option<VALUE>,
    /// `::StringIO` (thrift's HTTP client transport requires it): the buffers of the StringIO transports.
    pub string_io: VALUE,
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
    /// `TransportException::END_OF_FILE`.
    pub transport_end_of_file: i64,
    pub garbage_buffer_size: usize,
    pub version_1: i64,
    pub version_mask: i64,
    pub type_mask: i64,
    /// `Types::UUID` when the library defines it, else 16.
    pub uuid_type: i64,
    pub has_uuid_type: bool,
    /// `Thrift::UUID` (thrift 0.23 on), whose functions the plain BinaryProtocol's UUID methods call.
    pub uuid_module: Option<VALUE>,
    /// `Thrift::DEFAULT_RECURSION_DEPTH` when defined, else 64.
    pub default_recursion_depth: i64,
    /// HeaderTransport and HeaderProtocol, when the library has them (thrift master).
    pub header: Option<HeaderClasses>,
    /// `Thrift::JsonProtocol` and its three context classes (every supported thrift has them).
    pub json: JsonClasses,
    /// Where the C accelerators of thrift versions differ, which one the loaded library calls for.
    pub contract: Contract,
    /// How the library's FramedTransport refuses a zero-length frame, where it does (`zero_frames_refused`).
    pub zero_frame: Option<ZeroFrame>,
}

/// What the library's FramedTransport does with a zero-length frame where it refuses one (THRIFT-6155): raises
/// TransportException(END_OF_FILE) with `message` (pinned), leaving `@index` (`index_kept`) and `@rbuf`
/// (`rbuf_kept`) as they were, or not.
#[derive(Debug)]
pub struct ZeroFrame {
    pub message: VALUE,
    pub index_kept: bool,
    pub rbuf_kept: bool,
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

/// thrift master's THeader classes and what their native methods need.
#[derive(Debug)]
pub struct HeaderClasses {
    pub transport: VALUE,
    pub protocol: VALUE,
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

/// `scope::name`, pinned, if it is defined.
fn optional_class(ruby: &Ruby, scope: impl Module, name: &str) -> Result<Option<VALUE>, Error> {
    let defined: bool = scope
        .as_value()
        .funcall("const_defined?", (ruby.to_symbol(name), false))?;
    Ok(if defined {
        Some(pinned(const_value(scope, name)?))
    } else {
        None
    })
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
    let base_transport = const_value(module, "BaseTransport")?;
    let memory_buffer: RClass = module.const_get("MemoryBufferTransport")?;
    let http_client_transport = optional_class(ruby, module, "HTTPClientTransport")?;
    let io_stream_transport = optional_class(ruby, module, "IOStreamTransport")?;
    let string_io = const_value(ruby.class_object(), "StringIO")?;
    let framed_transport: RClass = module.const_get("FramedTransport")?;
    let buffered_transport: RClass = module.const_get("BufferedTransport")?;
    let buffered_default: i64 = buffered_transport.const_get("DEFAULT_BUFFER")?;
    let binary_protocol: RClass = module.const_get("BinaryProtocol")?;
    let compact_protocol: RClass = module.const_get("CompactProtocol")?;
    let bytes: RModule = module.const_get("Bytes")?;
    let struct_module = const_value(module, "Struct")?;
    let union = const_value(module, "Union")?;
    let struct_union = const_value(module, "Struct_Union")?;
    let kernel = const_value(ruby.class_object(), "Kernel")?;
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
    let (transport_negative_size, _) = optional_integer(
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
    let contract = Contract::probe(ruby);
    let zero_frame = contract
        .zero_frames_refused
        .then(|| probe_zero_frame(ruby))
        .flatten();
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
        struct_union: pinned(struct_union),
        kernel: pinned(kernel),
        set_class: pinned(set_class),
        bytes: pinned(bytes),
        base_transport: pinned(base_transport),
        memory_buffer: pinned(memory_buffer),
        http_client_transport,
        io_stream_transport,
        string_io: pinned(string_io),
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
        transport_end_of_file: transport_exception.const_get("END_OF_FILE")?,
        garbage_buffer_size: usize::try_from(garbage_buffer_size).unwrap_or(4096),
        version_1: binary_protocol.const_get("VERSION_1")?,
        version_mask: binary_protocol.const_get("VERSION_MASK")?,
        type_mask: binary_protocol.const_get("TYPE_MASK")?,
        uuid_type,
        has_uuid_type,
        uuid_module: optional_class(ruby, module, "UUID")?,
        default_recursion_depth,
        header,
        json,
        contract,
        zero_frame,
    };
    let _ = THRIFT.set(found);
    Ok(thrift())
}

/// The library's refusal of a zero-length frame (`contract::ZERO_FRAME_PROBE`): None if it answers otherwise.
fn probe_zero_frame(ruby: &Ruby) -> Option<ZeroFrame> {
    let found: magnus::RArray = ruby.eval(contract::ZERO_FRAME_PROBE).ok()?;
    let message: Value = found.entry(0).ok()?;
    let message = magnus::RString::from_value(message)?;
    Some(ZeroFrame {
        message: pinned(message),
        index_kept: found.entry(1).ok()?,
        rbuf_kept: found.entry(2).ok()?,
    })
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
    let zlib: RModule = ruby.class_object().const_get("Zlib")?;
    let zlib_need_dict = const_value(zlib, "NeedDict")?;
    let zlib_inflate = const_value(zlib, "Inflate")?;
    let zlib_deflate = const_value(zlib, "Deflate")?;
    let code = |name: &str| transport_exception.const_get::<_, i64>(name);
    Ok(Some(HeaderClasses {
        transport: pinned(transport),
        protocol: pinned(protocol),
        zlib_need_dict: pinned(zlib_need_dict),
        zlib_inflate: pinned(zlib_inflate),
        zlib_deflate: pinned(zlib_deflate),
        unknown: code("UNKNOWN")?,
        end_of_file: code("END_OF_FILE")?,
        size_limit: code("SIZE_LIMIT")?,
    }))
}
