//! The one error type of the core; the binding maps each variant to the exact Ruby exception of the contract.

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CoreError {
    /// Fewer bytes remain than a read needs. `available` bytes were there.
    #[error("not enough bytes: needed {needed}, {available} available")]
    Eof { needed: usize, available: usize },
    /// A size read off the wire was negative.
    #[error("Negative size")]
    NegativeSize,
    /// A container the struct decoder was to read whose declared size is negative (where the loaded thrift's
    /// protocol lets one through).
    #[error("Negative container size")]
    NegativeContainerSize,
    /// A UUID's text is not `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in hex.
    #[error("Invalid UUID format")]
    InvalidUuid,
    /// A compact 32-bit varint whose 5th byte still has the continuation bit.
    #[error("Variable-length int over 5 bytes.")]
    VarintTooLong32,
    /// A compact 32-bit varint whose 5th byte carries bits beyond 32.
    #[error("Variable-length int overflows uint32.")]
    VarintOverflow32,
    /// A compact 64-bit varint longer than 10 bytes.
    #[error("Variable-length int over 10 bytes.")]
    VarintTooLong64,
    /// A Thrift type with no compact type, or a compact type with no Thrift type.
    #[error("Unknown compact type: {0}")]
    UnknownCompactType(i64),
    /// A compact container size above INT32_MAX.
    #[error("Container size limit exceeded")]
    ContainerSizeLimit,
    /// A container the struct decoder was to read whose size is beyond INT32_MAX (thrift 0.24's compact encoding
    /// answers one, and its C accelerator's FIX2INT refused it with RangeError).
    #[error("integer {0} too big to convert to 'int'")]
    IntOutOfRange(i64),
    /// A compact binary length above INT32_MAX.
    #[error("Binary size limit exceeded")]
    BinarySizeLimit,
    /// A struct nested deeper than the depth `read` or `write` was given (and, skipping natively, any container).
    #[error("Maximum recursion depth exceeded")]
    DepthLimit,
    /// A union with a second field before its STOP.
    #[error("too many fields in union!")]
    TooManyUnionFields,
    /// A union whose set field is none of its declared fields, when it is written.
    #[error("set_field is not valid for this union!")]
    InvalidUnionField,
    /// A Thrift type with no JSON type name, or a JSON type name with no Thrift type.
    #[error("Unknown type id: {0}")]
    UnknownJsonType(i64),
    /// `skip` of a type code that has no encoding (`BaseProtocol#skip`).
    #[error("Invalid data")]
    InvalidData,
    /// A declared type the codec does not know, reached while reading.
    #[error("read_anything not implemented for type {0}!")]
    UnknownReadType(i64),
    /// A declared type the codec does not know, reached while writing.
    #[error("Unknown type for binary_encoding: {0}")]
    UnknownWriteType(i64),
    /// A list or set declaration without its element type, reached while writing.
    #[error("container field info has no :element")]
    MissingElementType,
    /// A map declaration without its key or value type, reached while writing.
    #[error("container field info has no :key or :value")]
    MissingKeyOrValueType,
    /// A JSON step the core does not read natively (the binding calls the protocol's Ruby method for it); only
    /// reading from a plain slice reports it.
    #[error("left to the JSON protocol's own methods")]
    JsonDeclined,
    /// A value that is not of its declared type (a nil inside a container, say), which an encoder cannot write.
    #[error("value does not match its declared type")]
    Unencodable,
}
