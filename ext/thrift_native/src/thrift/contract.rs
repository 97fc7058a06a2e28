//! The contract: where the C accelerators of thrift versions behave differently, which one the loaded library calls
//! for. Declared once, in the table below: each feature's name, what it means, and its probe, a Ruby expression
//! that answers it from what the loaded library's own Ruby code has (a constant or method that came in the same
//! upstream change), never from a version number. From the table come [`Contract`], `ThriftNative::THRIFT_FEATURES`
//! and `ThriftNative::CONTRACT_FEATURES` (the names, which the specs' expectations use).
//!
//! Unsafe old behaviour (crashes, unbounded recursion or allocation) is not among these: it is not reproduced
//! (ARCHITECTURE.md, "The contract", lists both).

use magnus::Ruby;
use thrift_native_core::wire::{NegativeSizes, Rules, Varint32Rule};

/// Declares the features: the [`Contract`] struct (a bool per feature), its names and its probes.
macro_rules! contract {
    ($($(#[doc = $doc:literal])* $name:ident = $probe:expr;)*) => {
        /// The loaded thrift's own accelerator's behaviour where versions differ (the module's table).
        #[derive(Debug, Clone, Copy)]
        pub struct Contract {
            $($(#[doc = $doc])* pub $name: bool,)*
        }

        impl Contract {
            /// Every feature's name, in the table's order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Each feature's probe run against the loaded library.
            pub fn probe(ruby: &Ruby) -> Contract {
                Contract {
                    $($name: behaves(ruby, $probe),)*
                }
            }

            /// Every feature's name and value, in the table's order.
            pub fn features(&self) -> Vec<(&'static str, bool)> {
                vec![$((stringify!($name), self.$name)),*]
            }
        }
    };
}

/// Thrift master's batch of CompactProtocol and MemoryBufferTransport fixes (THRIFT-6099 to 6139):
/// MemoryBufferTransport `read(-1)` raises TransportException, or, where another accelerator loaded before this one has
/// replaced that method already (calling it could crash: thrift 0.14's C `read(-1)` does), the batch's constant.
const MEMORY_BUFFER_FIXES: &str = r#"
    if Thrift::MemoryBufferTransport.instance_method(:read).source_location.nil?
      master_batch
    else
      begin; Thrift::MemoryBufferTransport.new("x").read(-1); false
      rescue Thrift::TransportException; true; end
    end
"#;

/// THRIFT-6155 (thrift master after 2026-08-24): the library's own FramedTransport `read_byte` of a zero-length frame
/// (after a frame of one byte, on a fresh transport): `[message, @index kept, @rbuf kept]` where it raises
/// TransportException(END_OF_FILE), else nil.
macro_rules! zero_frame_probe {
    () => {
        r#"(lambda do
          t = Thrift::FramedTransport.new(Thrift::MemoryBufferTransport.new("\0\0\0\1a\0\0\0\0".b))
          t.read_byte
          before = [t.instance_variable_get(:@index), t.instance_variable_get(:@rbuf)]
          t.read_byte
          nil
        rescue Thrift::TransportException => e
          if before && e.type == Thrift::TransportException::END_OF_FILE
            [e.message.dup.freeze, t.instance_variable_get(:@index) == before[0],
             t.instance_variable_get(:@rbuf).equal?(before[1])]
          end
        end).call"#
    };
}
pub const ZERO_FRAME_PROBE: &str = zero_frame_probe!();

/// thrift 0.24's `TransportException::NEGATIVE_SIZE` (THRIFT-6025).
const NEGATIVE_SIZE: &str = r#"Thrift::TransportException.const_defined?(:NEGATIVE_SIZE, false)"#;

contract! {
    /// thrift 0.24 on (`BinaryProtocol::BYTE_MAX` came with it): BinaryProtocolAccelerated's integer arguments are
    /// range-checked (TypeError, RangeError "integer out of bounds"). Before, the C accelerator converted them with
    /// NUM2INT/NUM2LL and kept the low bytes, as the pure-Ruby protocol's `pack` does.
    checked_binary_writes = r#"Thrift::BinaryProtocol.const_defined?(:BYTE_MAX, false)"#;

    /// thrift 0.23 on (`Types::UUID` came in that release): a union's errors are ProtocolException(INVALID_DATA)
    /// and BinaryProtocolAccelerated's version errors carry BAD_VERSION. Before, RuntimeError, and type 0 (the old C
    /// accelerator never set its BAD_VERSION).
    typed_errors = r#"Thrift::Types.const_defined?(:UUID, false)"#;

    /// thrift master (`CompactProtocol::I16_MAX` came with it, THRIFT-6139): CompactProtocol's integer arguments are
    /// range-checked, sizes too, and a field type is checked before `@last_field` is popped. Before, NUM2INT/NUM2LL
    /// (an i16 written as the i32 it is, a byte's low 8 bits, a negative size as it is).
    checked_compact_writes = r#"Thrift::CompactProtocol.const_defined?(:I16_MAX, false)"#;

    /// thrift master (the pure `CompactTypes.get_ttype` raises ProtocolException for an unknown type, THRIFT-6126):
    /// an unknown compact type is ProtocolException(INVALID_DATA, "Unknown compact type: N"). Before, StandardError
    /// "don't know what type: N".
    compact_unknown_type_errors = r#"
        begin; Thrift::CompactProtocol::CompactTypes.get_ttype(14); false
        rescue Thrift::ProtocolException; true; end
    "#;

    /// thrift master (the pure `read_message_begin`'s header errors carry BAD_VERSION, THRIFT-6102): CompactProtocol's
    /// header errors are BAD_VERSION with "Expected version 1 but got N". Before, type -1 and the old C
    /// accelerator's swapped "Expected version id N but got 1". `write_bool` testing truthiness (THRIFT-6101, the same
    /// batch, with no pure-Ruby trace of its own) follows this too; before, only `true` was written as true.
    compact_header_codes = r#"
        if Thrift::CompactProtocol.instance_method(:read_message_begin).source_location.nil?
          master_batch
        else
          begin; Thrift::CompactProtocol.new(Thrift::MemoryBufferTransport.new("\0")).read_message_begin; false
          rescue Thrift::ProtocolException => e; e.type == Thrift::ProtocolException::BAD_VERSION; end
        end
    "#;

    /// thrift master (`BaseProtocol::MAX_CONTAINER_SIZE`, THRIFT-6136): a compact list, set or map size beyond
    /// INT32_MAX is ProtocolException(SIZE_LIMIT). Before, `read_*_begin` returned it as a negative int32 (0.24: as
    /// the unsigned value, which the struct decoder's FIX2INT refused with RangeError).
    container_size_limit = r#"Thrift::BaseProtocol.const_defined?(:MAX_CONTAINER_SIZE, false)"#;

    /// thrift master (the pure `MemoryBufferTransport#read(-1)` raises TransportException, THRIFT-6099, the batch of
    /// THRIFT-6103 and 6105 that left no pure-Ruby trace): MemoryBufferTransport#read_byte is unsigned and
    /// `read_into_buffer` keeps the bytes it consumed before EOFError. Before, a signed byte, and nothing consumed.
    memory_buffer_fixes = MEMORY_BUFFER_FIXES;

    /// thrift 0.24 on (`TransportException::NEGATIVE_SIZE`, THRIFT-6025): MemoryBufferTransport has its own
    /// `read_all`, which consumes nothing when too few bytes remain. Before, BaseTransport#read_all over the C
    /// accelerator's `read`, which consumed what remained before EOFError.
    memory_buffer_read_all = NEGATIVE_SIZE;

    /// thrift 0.24 on (the same change): BinaryProtocolAccelerated refuses a negative size (ProtocolException
    /// NEGATIVE_SIZE). Before, `read_*_begin` answered it, `read_binary` asked `read_all` for it (which answers ""),
    /// and the struct decoder met it: thrift 0.14-0.22 raised ArgumentError "negative array size" for a list or set
    /// to read and read a map as empty, 0.23 raised ProtocolException "Negative container size" for both.
    negative_sizes_refused = NEGATIVE_SIZE;

    /// thrift 0.24 on (`CompactProtocol::MAX_VARINT32_BYTES`): a compact varint32 is 5 bytes at most. Before, the C
    /// accelerator read every varint as a varint64 and cut it to 32 bits (the 10-byte limit is kept: its loop had
    /// none).
    varint32_limit = r#"Thrift::CompactProtocol.const_defined?(:MAX_VARINT32_BYTES, false)"#;

    /// thrift master (`CompactProtocol::MAX_VARINT32_LAST_BYTE`, THRIFT-6145): a 5-byte varint32 with bits beyond 32
    /// is refused. Before, the C accelerator dropped them.
    varint32_overflow_refused = r#"Thrift::CompactProtocol.const_defined?(:MAX_VARINT32_LAST_BYTE, false)"#;

    /// thrift master (the pure `Struct#read` of an instance with fields set clears them first, THRIFT-6124):
    /// `Struct#read` into an instance that has ivars checks that it is not frozen and resets its fields to their
    /// defaults first; `Union#read` clears `@setfield` and `@value` first and sets `@setfield` with the value. Before,
    /// an instance kept what the message did not set, and a union's `@setfield` was set before its value was read.
    reused_structs_reset = r#"
        k = Class.new do
          include Thrift::Struct
          include Thrift::Struct_Union
          const_set(:FIELDS, { 1 => { type: Thrift::Types::I32, name: "a" } })
          def struct_fields; self.class::FIELDS; end
          def validate; end
        end
        o = k.new
        o.instance_variable_set(:@a, 5)
        o.read(Thrift::BinaryProtocol.new(Thrift::MemoryBufferTransport.new("\0".b)))
        o.instance_variable_get(:@a).nil?
    "#;

    /// thrift master (THRIFT-6104, the batch of `memory_buffer_fixes`, with no pure-Ruby trace of its own):
    /// `Struct#write` takes any `Set` (a subclass, a Set with singleton methods) as a set. Before, only an instance
    /// of exactly `::Set`; anything else had to be a Hash (TypeError).
    set_subclass_writes = MEMORY_BUFFER_FIXES;

    /// thrift master after our snapshot (THRIFT-6155, merged 2026-08-24; probed on the library's own FramedTransport):
    /// a zero-length frame is TransportException(END_OF_FILE), with the message and the `@index` and `@rbuf` the
    /// library's `read_frame` leaves (`Thrift::zero_frame`). Before, an empty frame was taken as it is (`read`
    /// answers "", `read_byte` nil, and the reads that need a byte fail on nil).
    zero_frames_refused = concat!("!", zero_frame_probe!(), ".nil?");

    /// thrift master (THRIFT-6126's JSON part: the pure `JsonProtocol#get_type_id_for_type_name` raises it): a type
    /// with no JSON name is ProtocolException(INVALID_DATA, "Unknown type id: N"). Before, NotImplementedError.
    json_unknown_type_errors = r#"
        begin; Thrift::JsonProtocol.allocate.get_type_name_for_type_id(0); false
        rescue Thrift::ProtocolException; true; end
    "#;

    /// thrift master (the pure `JsonProtocol#decode_json_string`, THRIFT-6130's Unicode batch): JsonProtocol reads
    /// every string as UTF-8 (refusing invalid text) and joins `\u` surrogate pairs. Before, a string with raw
    /// non-ASCII bytes was BINARY and a surrogate escape a RangeError.
    json_utf8_strings = r#"Thrift::JsonProtocol.private_method_defined?(:decode_json_string)"#;
}

/// Whether the loaded library's own Ruby `probe` answers true. It runs on fresh objects before this extension replaces
/// any method; `master_batch` in it is the marker of thrift master's batch of fixes (`CompactProtocol::I16_MAX` came
/// with it), for a probe whose method another accelerator has replaced already. Anything it raises (a library too
/// different to answer) counts as false, the older behaviour.
fn behaves(ruby: &Ruby, probe: &str) -> bool {
    let guarded = format!(
        "begin\nmaster_batch = Thrift::CompactProtocol.const_defined?(:I16_MAX, false)\n{probe}\n\
         rescue StandardError, NotImplementedError\nfalse\nend"
    );
    ruby.eval::<bool>(&guarded).unwrap_or(false)
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
