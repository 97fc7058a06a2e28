//! The exceptions of the thrift contract (ProtocolException and TransportException with their codes, the
//! MemoryBufferTransport EOF, the argument checks' messages), and the mapping of every core error to its exception.
//! Zlib's exceptions are built by the GzipWriter; Ruby's own (TypeError from a conversion, FrozenError) by Ruby.
//!
//! Messages are BINARY Strings, as the C accelerator's (`rb_raise` and `rb_str_new` make ASCII-8BIT messages) and the
//! transports' Ruby files (`# encoding: ascii-8bit`) make theirs; only the JSON protocol's, which json_protocol.rb
//! raises from UTF-8 source, are UTF-8.

use magnus::prelude::*;
use magnus::{Error, Ruby, Value};
use thrift_native_core::CoreError;

use crate::thrift::thrift;

/// The C accelerator's message for every MemoryBufferTransport EOF.
pub const MEMORY_BUFFER_EOF: &str = "Not enough bytes remain in memory buffer";

fn new_exception(class: rb_sys::VALUE, code: i64, message: &str) -> Error {
    new_exception_of(
        class,
        code,
        crate::ruby::rb::binary_string(message.as_bytes()),
    )
}

fn new_exception_of(class: rb_sys::VALUE, code: i64, message: rb_sys::VALUE) -> Error {
    // SAFETY: `class` is a pinned exception class cached at load time; `message` a String on this stack.
    let (class, message) = unsafe {
        (
            crate::ruby::rb::value(class),
            crate::ruby::rb::value(message),
        )
    };
    match class.funcall::<_, _, Value>("new", (code, message)) {
        Ok(exception) => Error::from(
            magnus::Exception::from_value(exception).expect("an Exception subclass's new"),
        ),
        Err(e) => e,
    }
}

/// `class.new(message)` of one of Ruby's exception classes, the message BINARY.
pub fn exception(class: magnus::ExceptionClass, message: &str) -> Error {
    let message = crate::ruby::rb::binary_string(message.as_bytes());
    // SAFETY: `message` is a String on this stack.
    match class.funcall::<_, _, Value>("new", (unsafe { crate::ruby::rb::value(message) },)) {
        Ok(exception) => Error::from(
            magnus::Exception::from_value(exception).expect("an Exception subclass's new"),
        ),
        Err(e) => e,
    }
}

/// `Thrift::ProtocolException.new(code, message)`.
pub fn protocol(code: i64, message: &str) -> Error {
    new_exception(thrift().protocol_exception, code, message)
}

/// `Thrift::TransportException.new(code, message)`.
pub fn transport(code: i64, message: &str) -> Error {
    new_exception(thrift().transport_exception, code, message)
}

/// `Thrift::TransportException.new(NEGATIVE_SIZE, "Negative size")` (code 5 on thrift 0.14, which lacks the constant).
pub fn transport_negative_size() -> Error {
    new_exception(
        thrift().transport_exception,
        thrift().transport_negative_size,
        "Negative size",
    )
}

pub fn negative_size() -> Error {
    protocol(thrift().codes.negative_size, "Negative size")
}

pub fn eof(ruby: &Ruby) -> Error {
    exception(ruby.exception_eof_error(), MEMORY_BUFFER_EOF)
}

/// `StandardError "nil argument not allowed!"` (the class is exactly StandardError).
pub fn nil_argument(ruby: &Ruby) -> Error {
    exception(ruby.exception_standard_error(), "nil argument not allowed!")
}

pub fn integer_expected(ruby: &Ruby) -> Error {
    exception(ruby.exception_type_error(), "integer argument expected")
}

pub fn out_of_bounds(ruby: &Ruby) -> Error {
    exception(ruby.exception_range_error(), "integer out of bounds")
}

/// Maps a core error to the exception the C accelerator raises for it.
pub fn from_core(ruby: &Ruby, error: CoreError) -> Error {
    match error {
        CoreError::Eof { .. } => eof(ruby),
        CoreError::NegativeSize => negative_size(),
        CoreError::UnknownCompactType(t) if !thrift().contract.compact_unknown_type_errors => {
            exception(
                ruby.exception_standard_error(),
                &format!("don't know what type: {t}"),
            )
        }
        CoreError::InvalidUuid
        | CoreError::VarintTooLong32
        | CoreError::VarintOverflow32
        | CoreError::VarintTooLong64
        | CoreError::UnknownCompactType(_) => {
            protocol(thrift().codes.invalid_data, &error.to_string())
        }
        // The struct decoder of thrift 0.14-0.22 met a negative list or set size in `rb_ary_new2`.
        CoreError::NegativeContainerSize if !thrift().contract.typed_errors => exception(
            ruby.exception_arg_error(),
            "negative array size (or size too big)",
        ),
        CoreError::NegativeContainerSize => {
            protocol(thrift().codes.negative_size, &error.to_string())
        }
        // FIX2INT's own RangeError, worded by this Ruby (3.4 quotes 'int', 3.1 `int').
        CoreError::IntOutOfRange(n) => {
            match crate::ruby::rb::num2int(crate::ruby::rb::integer(n)) {
                Err(range_error) => range_error,
                Ok(_) => exception(ruby.exception_range_error(), &error.to_string()),
            }
        }
        CoreError::ContainerSizeLimit | CoreError::BinarySizeLimit => {
            protocol(thrift().codes.size_limit, &error.to_string())
        }
        CoreError::DepthLimit => protocol(thrift().codes.depth_limit, &error.to_string()),
        CoreError::TooManyUnionFields | CoreError::InvalidUnionField
            if !thrift().contract.typed_errors =>
        {
            exception(ruby.exception_runtime_error(), &error.to_string())
        }
        CoreError::TooManyUnionFields | CoreError::InvalidUnionField | CoreError::InvalidData => {
            protocol(thrift().codes.invalid_data, &error.to_string())
        }
        CoreError::UnknownReadType(_) | CoreError::UnknownWriteType(_) => {
            exception(ruby.exception_not_imp_error(), &error.to_string())
        }
        CoreError::MissingElementType | CoreError::MissingKeyOrValueType => {
            exception(ruby.exception_arg_error(), &error.to_string())
        }
        CoreError::Unencodable => exception(ruby.exception_type_error(), &error.to_string()),
        // The JSON reader of the binding calls the protocol's method instead; never raised.
        CoreError::JsonDeclined => exception(ruby.exception_runtime_error(), &error.to_string()),
        // json_protocol.rb's own raise, from UTF-8 source.
        CoreError::UnknownJsonType(_) if thrift().contract.json_unknown_type_errors => {
            let message = crate::ruby::rb::utf8_string(error.to_string().as_bytes());
            new_exception_of(
                thrift().protocol_exception,
                thrift().codes.invalid_data,
                message,
            )
        }
        // Before thrift master JsonProtocol raised `NotImplementedError.new` (its message, the class name).
        CoreError::UnknownJsonType(_) => match ruby
            .exception_not_imp_error()
            .funcall::<_, _, Value>("new", ())
        {
            Ok(e) => Error::from(magnus::Exception::from_value(e).expect("an exception")),
            Err(e) => e,
        },
    }
}
