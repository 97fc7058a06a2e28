//! The dispatch path: a protocol that is not exactly one we accelerate (a subclass, a mock, a decorator), or one
//! over a transport whose bytes we do not own, is called exactly as the C accelerator calls it, so that mocks and
//! other protocols see the same method calls with the same arguments.

use magnus::rb_sys::protect;
use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::codec::{
    FieldBegin, FieldDef, ListBegin, MapBegin, Primitive, Scalar, Sequence, Sink, Source,
};

use crate::ruby::names::*;
use crate::ruby::rb;
use crate::struct_codec::field_plan::RubyField;
use crate::thrift::errors;
use crate::thrift::thrift;
use crate::thrift::values::RubyBuilder;

/// Reads through the protocol's methods.
pub struct DispatchSource {
    protocol: VALUE,
}

impl DispatchSource {
    pub fn new(protocol: VALUE) -> Self {
        DispatchSource { protocol }
    }

    fn call(&self, method: &StaticId) -> Result<VALUE, Error> {
        rb::funcall(self.protocol, method.get(), &[])
    }
}

use crate::ruby::rb::StaticId;

/// `header[i]` of a protocol's header Array; TypeError when the protocol returned something else (the C
/// accelerator would read past it).
fn header_entry(header: VALUE, i: usize) -> Result<VALUE, Error> {
    if !rb::is_array(header) {
        return Err(crate::thrift::errors::exception(
            Ruby::get().expect("Ruby thread").exception_type_error(),
            "protocol header is not an Array",
        ));
    }
    // SAFETY: `header` is an Array; rb_ary_entry answers nil past its end.
    Ok(unsafe { rb::array_entry(header, i) })
}

/// The C accelerator's `container_size(size)`: a Fixnum in 0..=INT32_MAX, else the contract's errors; other
/// objects go through `prot.validate_container_size` (master only) and NUM2INT. Before thrift 0.24 a negative size
/// is let through (`(0, true)`: the builder says what it means), and before master a size beyond INT32_MAX met
/// FIX2INT's RangeError.
fn container_size(protocol: VALUE, size: VALUE) -> Result<(usize, bool), Error> {
    let contract = &thrift().contract;
    let n = match rb::fixnum_value(size) {
        Some(n) if n > i64::from(i32::MAX) && contract.container_size_limit => {
            return Err(errors::protocol(
                thrift().codes.size_limit,
                "Container size limit exceeded",
            ));
        }
        Some(n) if n >= 0 && n <= i64::from(i32::MAX) => n,
        Some(n) if n < 0 && !contract.negative_sizes_refused => n,
        Some(n) if n < 0 => return Err(errors::negative_size()),
        _ => {
            if contract.container_size_limit {
                rb::funcall(protocol, VALIDATE_CONTAINER_SIZE.get(), &[size])?;
            }
            rb::num2int(size)?.into()
        }
    };
    match usize::try_from(n) {
        Ok(n) => Ok((n, false)),
        Err(_) if !contract.negative_sizes_refused => Ok((0, true)),
        Err(_) => Err(errors::negative_size()),
    }
}

fn read_method(kind: Scalar) -> &'static StaticId {
    match kind {
        Scalar::Bool => &READ_BOOL,
        Scalar::Byte => &READ_BYTE,
        Scalar::I16 => &READ_I16,
        Scalar::I32 => &READ_I32,
        Scalar::I64 => &READ_I64,
        Scalar::Double => &READ_DOUBLE,
        Scalar::String => &READ_STRING,
        Scalar::Binary => &READ_BINARY,
        Scalar::Uuid => &READ_UUID,
    }
}

pub fn write_method(kind: Scalar) -> &'static StaticId {
    match kind {
        Scalar::Bool => &WRITE_BOOL,
        Scalar::Byte => &WRITE_BYTE,
        Scalar::I16 => &WRITE_I16,
        Scalar::I32 => &WRITE_I32,
        Scalar::I64 => &WRITE_I64,
        Scalar::Double => &WRITE_DOUBLE,
        Scalar::String => &WRITE_STRING,
        Scalar::Binary => &WRITE_BINARY,
        Scalar::Uuid => &WRITE_UUID,
    }
}

impl<'r> Source<RubyBuilder<'r>> for DispatchSource {
    fn native(&self) -> bool {
        false
    }

    fn remaining(&self) -> Option<usize> {
        None
    }

    fn resync(&mut self) {}

    fn struct_begin(&mut self) -> Result<i64, Error> {
        self.call(&READ_STRUCT_BEGIN).map(|_| 0)
    }

    fn struct_end(&mut self, _saved: i64) -> Result<(), Error> {
        self.call(&READ_STRUCT_END).map(drop)
    }

    fn field_begin(&mut self) -> Result<FieldBegin, Error> {
        let header = self.call(&READ_FIELD_BEGIN)?;
        let ttype = rb::to_i64(header_entry(header, 1)?)?;
        let id = rb::fixnum_value(header_entry(header, 2)?);
        Ok(FieldBegin { ttype, id })
    }

    fn field_end(&mut self) -> Result<(), Error> {
        self.call(&READ_FIELD_END).map(drop)
    }

    fn map_begin(&mut self) -> Result<MapBegin, Error> {
        let header = self.call(&READ_MAP_BEGIN)?;
        let key = rb::to_i64(header_entry(header, 0)?)?;
        let value = rb::to_i64(header_entry(header, 1)?)?;
        let (size, negative) = container_size(self.protocol, header_entry(header, 2)?)?;
        Ok(MapBegin {
            key,
            value,
            size,
            negative,
        })
    }

    fn map_end(&mut self) -> Result<(), Error> {
        self.call(&READ_MAP_END).map(drop)
    }

    fn list_begin(&mut self, seq: Sequence) -> Result<ListBegin, Error> {
        let method = match seq {
            Sequence::List => &READ_LIST_BEGIN,
            Sequence::Set => &READ_SET_BEGIN,
        };
        let header = self.call(method)?;
        let element = rb::to_i64(header_entry(header, 0)?)?;
        let (size, negative) = container_size(self.protocol, header_entry(header, 1)?)?;
        Ok(ListBegin {
            element,
            size,
            negative,
        })
    }

    fn list_end(&mut self, seq: Sequence) -> Result<(), Error> {
        let method = match seq {
            Sequence::List => &READ_LIST_END,
            Sequence::Set => &READ_SET_END,
        };
        self.call(method).map(drop)
    }

    fn scalar(&mut self, kind: Scalar, _values: &mut RubyBuilder<'r>) -> Result<VALUE, Error> {
        self.call(read_method(kind))
    }

    fn skip(
        &mut self,
        ttype: i64,
        _depth: i64,
        _values: &mut RubyBuilder<'r>,
    ) -> Result<(), Error> {
        rb::funcall(self.protocol, SKIP.get(), &[rb::integer(ttype)]).map(drop)
    }
}

/// Writes through the protocol's methods.
pub struct DispatchSink {
    protocol: VALUE,
}

impl DispatchSink {
    pub fn new(protocol: VALUE) -> Self {
        DispatchSink { protocol }
    }

    fn call(&self, method: &StaticId, args: &[VALUE]) -> Result<(), Error> {
        rb::funcall(self.protocol, method.get(), args).map(drop)
    }
}

impl Sink<VALUE, RubyField> for DispatchSink {
    type Error = Error;

    fn native(&self) -> bool {
        false
    }

    fn host<T>(&mut self, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        f()
    }

    /// `write_struct_begin(rb_class_name(CLASS_OF(obj)))`: a stubbed object's singleton class names itself.
    fn struct_begin(&mut self, obj: VALUE) -> Result<i64, Error> {
        let class = rb::heap_class(obj).unwrap_or(obj);
        // SAFETY: protected; rb_class_name may call Ruby for an anonymous class.
        let name = protect(|| unsafe { rb_sys::rb_class_name(class) })?;
        self.call(&WRITE_STRUCT_BEGIN, &[name]).map(|()| 0)
    }

    fn struct_end(&mut self, _saved: i64) -> Result<(), Error> {
        self.call(&WRITE_STRUCT_END, &[])
    }

    fn field_begin<C>(
        &mut self,
        field: &FieldDef<C, RubyField>,
        name: Option<VALUE>,
    ) -> Result<(), Error> {
        let name = name.unwrap_or(field.extra.name);
        let args = [name, rb::integer(field.ty.code), field.extra.id_value];
        self.call(&WRITE_FIELD_BEGIN, &args)
    }

    fn field_end(&mut self) -> Result<(), Error> {
        self.call(&WRITE_FIELD_END, &[])
    }

    fn field_stop(&mut self) -> Result<(), Error> {
        self.call(&WRITE_FIELD_STOP, &[])
    }

    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), Error> {
        let args = [
            rb::integer(key),
            rb::integer(value),
            rb::integer(size as i64),
        ];
        self.call(&WRITE_MAP_BEGIN, &args)
    }

    fn map_end(&mut self) -> Result<(), Error> {
        self.call(&WRITE_MAP_END, &[])
    }

    fn list_begin(&mut self, seq: Sequence, element: i64, size: usize) -> Result<(), Error> {
        let method = match seq {
            Sequence::List => &WRITE_LIST_BEGIN,
            Sequence::Set => &WRITE_SET_BEGIN,
        };
        self.call(method, &[rb::integer(element), rb::integer(size as i64)])
    }

    fn list_end(&mut self, seq: Sequence) -> Result<(), Error> {
        let method = match seq {
            Sequence::List => &WRITE_LIST_END,
            Sequence::Set => &WRITE_SET_END,
        };
        self.call(method, &[])
    }

    /// Never reached ([`Sink::native`] is false); a primitive would go to the protocol as a Ruby value.
    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) -> Result<(), Error> {
        let v = match p {
            Primitive::Bool(b) => {
                if b {
                    rb::QTRUE
                } else {
                    rb::QFALSE
                }
            }
            Primitive::Byte(n) => rb::integer(n.into()),
            Primitive::I16(n) => rb::integer(n.into()),
            Primitive::I32(n) => rb::integer(n.into()),
            Primitive::I64(n) => rb::integer(n),
            Primitive::Double(f) => rb::float(f),
            Primitive::Bytes(b) if kind == Scalar::String => rb::utf8_string(b),
            Primitive::Bytes(b) => rb::binary_string(b),
            Primitive::Uuid(b) => rb::binary_string(&thrift_native_core::uuid::format(&b)),
        };
        self.value(kind, v)
    }

    fn value(&mut self, kind: Scalar, v: VALUE) -> Result<(), Error> {
        self.call(write_method(kind), &[v])
    }
}
