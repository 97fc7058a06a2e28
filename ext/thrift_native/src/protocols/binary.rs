//! `Thrift::BinaryProtocolAccelerated < Thrift::BinaryProtocol`: every method of the C accelerator, with its bytes,
//! exceptions, messages and codes. Fixed-width reads from a plain MemoryBufferTransport allocate nothing.

use magnus::prelude::*;
use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, Ruby, TryConvert, Value};
use rb_sys::VALUE;
use thrift_native_core::binary;

use crate::protocols::message_name::{read_name, NameRead};
use crate::protocols::shared::{
    append_pieces, binary_byte, binary_i16, binary_i32, binary_i64, binary_size,
    binary_version_word, float_value, not_nil, reset_message_size_if_asked, string_length,
    uuid_bytes, JoinedHeader, Pending,
};
use crate::ruby::ivars::{IvarSite, IvarSlot};
use crate::ruby::names::{IVAR_STRICT_READ, IVAR_STRICT_WRITE, IVAR_TRANS, READ_ALL};
use crate::ruby::{rb, registry};
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};
use crate::transports::io::{Input, Output, Wire};

const STRING_TOO_LONG: &str = "string too long";

/// `@trans` of exact BinaryProtocolAccelerated instances.
pub static TRANS: IvarSlot = IvarSlot::new();
static STRICT_WRITE: IvarSite = IvarSite::new();

static CLASS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `Thrift::BinaryProtocolAccelerated` (pinned).
#[inline(always)]
pub fn class() -> VALUE {
    CLASS.load(std::sync::atomic::Ordering::Relaxed) as VALUE
}

#[inline(always)]
fn input(protocol: Value) -> Input {
    Input::of(protocol.as_raw(), &TRANS)
}

#[inline(always)]
fn output(protocol: Value) -> Output {
    Output::of(protocol.as_raw(), &TRANS)
}

/// `write_string_direct`: "Value should be a string" for anything but a String, then the UTF-8 bytes with their
/// i32 length. A UTF-8 String bound for a plain buffer is appended as it is (no converted copy).
fn write_string_to(ruby: &Ruby, out: &Output, s: Value) -> Result<(), Error> {
    let raw = s.as_raw();
    if !rb::is_string(raw) {
        return Err(crate::thrift::errors::exception(
            ruby.exception_standard_error(),
            "Value should be a string",
        ));
    }
    let converted = match out {
        Output::Target(_) => bytes::utf8_bytes_of(raw)?,
        Output::Transport(_) => bytes::convert_to_utf8_byte_buffer(raw)?,
    };
    let len = string_length(ruby, converted, STRING_TOO_LONG)?;
    out.write(&binary::encode_i32(len))?;
    out.write_string_object(converted)
}

// ----- writes -----

fn native_p(_rb_self: Value) -> bool {
    true
}

fn nothing(_rb_self: Value) {}

fn nothing1(_rb_self: Value, _arg: Value) {}

pub(crate) fn write_message_begin(
    ruby: &Ruby,
    rb_self: Value,
    name: Value,
    mtype: Value,
    seqid: Value,
) -> Result<(), Error> {
    let out = output(rb_self);
    let strict_write = STRICT_WRITE.get(rb_self.as_raw(), IVAR_STRICT_WRITE.get());
    if strict_write == rb::QTRUE {
        out.write(&binary::encode_i32(binary_version_word(ruby, mtype)?))?;
        write_string_to(ruby, &out, name)?;
        out.write(&binary::encode_i32(binary_i32(ruby, seqid)?))
    } else {
        write_string_to(ruby, &out, name)?;
        out.write(&[binary_byte(ruby, mtype)? as u8])?;
        out.write(&binary::encode_i32(binary_i32(ruby, seqid)?))
    }
}

/// `write_message_begin(name, mtype, seqid)` of a [`JoinedHeader`]: the same bytes, appended to a plain write
/// buffer without the joined String. None, with nothing written, where the protocol writes to a transport (which is
/// handed the String itself) or the header is long.
pub(crate) fn write_joined_message_begin(
    prot: VALUE,
    h: &JoinedHeader,
) -> Option<Result<(), Error>> {
    // SAFETY: `prot` is a live VALUE of the caller's frame.
    let out = output(unsafe { rb::value(prot) });
    let len = binary::encode_i32(i32::try_from(h.name_len()).ok()?);
    let seqid = binary::encode_i32(h.seqid);
    let [a, b, c] = h.name;
    if rb::ivar_get(prot, IVAR_STRICT_WRITE.get()) == rb::QTRUE {
        let word = binary::encode_i32(thrift().version_1 as u32 as i32 | i32::from(h.mtype));
        append_pieces(out, &[&word, &len, a, b, c, &seqid])
    } else {
        append_pieces(out, &[&len, a, b, c, &[h.mtype], &seqid])
    }
}

fn write_field_begin(
    ruby: &Ruby,
    rb_self: Value,
    _name: Value,
    ftype: Value,
    id: Value,
) -> Result<(), Error> {
    let mut p = Pending::new(output(rb_self));
    let ftype = p.check(binary_byte(ruby, ftype))?;
    p.push(&[ftype as u8]);
    let id = p.check(binary_i16(ruby, id))?;
    p.push(&binary::encode_i16(id));
    p.flush()
}

fn write_field_stop(rb_self: Value) -> Result<(), Error> {
    output(rb_self).write(&[0])
}

fn write_map_begin(
    ruby: &Ruby,
    rb_self: Value,
    ktype: Value,
    vtype: Value,
    size: Value,
) -> Result<(), Error> {
    let mut p = Pending::new(output(rb_self));
    let k = p.check(binary_byte(ruby, ktype))?;
    p.push(&[k as u8]);
    let v = p.check(binary_byte(ruby, vtype))?;
    p.push(&[v as u8]);
    let size = p.check(binary_size(ruby, size))?;
    p.push(&binary::encode_i32(size));
    p.flush()
}

fn write_list_begin(ruby: &Ruby, rb_self: Value, etype: Value, size: Value) -> Result<(), Error> {
    let mut p = Pending::new(output(rb_self));
    let e = p.check(binary_byte(ruby, etype))?;
    p.push(&[e as u8]);
    let size = p.check(binary_size(ruby, size))?;
    p.push(&binary::encode_i32(size));
    p.flush()
}

fn write_bool(rb_self: Value, b: Value) -> Result<(), Error> {
    output(rb_self).write(&[u8::from(rb::truthy(b.as_raw()))])
}

fn write_byte(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let b = binary_byte(ruby, not_nil(ruby, v)?)?;
    output(rb_self).write(&[b as u8])
}

fn write_i16(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let n = binary_i16(ruby, not_nil(ruby, v)?)?;
    output(rb_self).write(&binary::encode_i16(n))
}

fn write_i32(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let n = binary_i32(ruby, not_nil(ruby, v)?)?;
    output(rb_self).write(&binary::encode_i32(n))
}

fn write_i64(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let n = binary_i64(ruby, not_nil(ruby, v)?)?;
    output(rb_self).write(&binary::encode_i64(n))
}

fn write_double(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let f = float_value(not_nil(ruby, v)?)?;
    output(rb_self).write(&binary::encode_double(f))
}

fn write_string(ruby: &Ruby, rb_self: Value, s: Value) -> Result<(), Error> {
    not_nil(ruby, s)?;
    write_string_to(ruby, &output(rb_self), s)
}

fn write_binary(ruby: &Ruby, rb_self: Value, b: Value) -> Result<(), Error> {
    not_nil(ruby, b)?;
    let out = output(rb_self);
    let buf = bytes::force_binary_encoding(b.as_raw())?;
    // SAFETY: the argument or its binary copy, on this stack.
    let buf = magnus::RString::try_convert(unsafe { rb::value(buf) })?.as_raw();
    let len = string_length(ruby, buf, STRING_TOO_LONG)?;
    out.write(&binary::encode_i32(len))?;
    out.write_string_object(buf)
}

fn write_uuid(ruby: &Ruby, rb_self: Value, u: Value) -> Result<(), Error> {
    let bytes = uuid_bytes(ruby, u)?;
    output(rb_self).write(&bytes)
}

// ----- reads -----

fn read_i32_from(ruby: &Ruby, input: &mut Input) -> Result<i32, Error> {
    input.read_array::<4>(ruby).map(binary::decode_i32)
}

/// A byte string after its i32 length, as `read_all` gives it (`utf8`: as `read_string` converts it). Before thrift
/// 0.24 a negative length was asked of `read_all` as it is: a memory buffer's or a layered transport's (the base
/// transport's) answers "" without reading; another transport is asked.
fn read_bytes(ruby: &Ruby, input: &mut Input, utf8: bool) -> Result<VALUE, Error> {
    let n = read_i32_from(ruby, input)?;
    let len = match usize::try_from(n) {
        Ok(len) => len,
        Err(_) => return read_negative_length(ruby, input, n, utf8),
    };
    if utf8 {
        input.read_utf8(ruby, len)
    } else {
        input.read_all(ruby, len)
    }
}

/// A byte string of negative length `n`, as `read_bytes` reads it (see there).
#[cold]
fn read_negative_length(
    ruby: &Ruby,
    input: &mut Input,
    n: i32,
    utf8: bool,
) -> Result<VALUE, Error> {
    if thrift().contract.negative_sizes_refused {
        return Err(errors::negative_size());
    }
    match input {
        Input::Transport { trans, .. } => {
            let s = rb::funcall(*trans, READ_ALL.get(), &[rb::integer(n.into())])?;
            if utf8 {
                bytes::convert_to_string(s)
            } else {
                Ok(s)
            }
        }
        // `read_all` of a negative size: "", nothing read.
        _ if utf8 => input.read_utf8(ruby, 0),
        _ => input.read_all(ruby, 0),
    }
}

/// BAD_VERSION, or 0 where the loaded thrift's own C accelerator (before 0.23) never set it.
fn bad_version_code() -> i64 {
    let t = thrift();
    if t.contract.typed_errors {
        t.codes.bad_version
    } else {
        0
    }
}

fn read_message_begin(ruby: &Ruby, rb_self: Value) -> Result<magnus::RArray, Error> {
    let (name, mtype, seqid) = message_begin(ruby, rb_self.as_raw(), NameRead::String)?;
    // SAFETY: a String just read, on this stack.
    let name = unsafe { rb::value(name) };
    Ok(ruby.ary_new_from_values(&[name, rb::int(mtype), rb::int(seqid.into())]))
}

/// What `read_message_begin` reads: the name (read as `name` says: nil unless a String is asked for), the type and
/// the sequence id.
pub fn message_begin(
    ruby: &Ruby,
    this: VALUE,
    mut name: NameRead,
) -> Result<(VALUE, i64, i32), Error> {
    reset_message_size_if_asked(this)?;
    let t = thrift();
    let mut input = Input::of(this, &TRANS);
    let version = read_i32_from(ruby, &mut input)?;
    let (name, mtype) = if version < 0 {
        if (version as u32 & t.version_mask as u32) != t.version_1 as u32 {
            return Err(errors::protocol(
                bad_version_code(),
                "Missing version identifier",
            ));
        }
        let mtype = i64::from(version as u32 & t.type_mask as u32);
        (read_strict_name(ruby, &mut input, &mut name)?, mtype)
    } else {
        if rb::ivar_get(this, IVAR_STRICT_READ.get()) == rb::QTRUE {
            return Err(errors::protocol(
                bad_version_code(),
                "No version identifier, old protocol client?",
            ));
        }
        let name = read_name(ruby, &mut input, version as usize, false, &mut name)?;
        (name, i64::from(input.read_byte(ruby)?))
    };
    let seqid = read_i32_from(ruby, &mut input)?;
    Ok((name, mtype, seqid))
}

/// A message name after its i32 length, as `read_string` reads it, into `name`. A negative length is read as
/// `read_bytes` reads it.
fn read_strict_name(ruby: &Ruby, input: &mut Input, name: &mut NameRead) -> Result<VALUE, Error> {
    let n = read_i32_from(ruby, input)?;
    match (usize::try_from(n), name) {
        (Ok(len), name) => read_name(ruby, input, len, true, name),
        (Err(_), NameRead::String) => read_negative_length(ruby, input, n, true),
        (Err(_), NameRead::Skip) => read_negative_length(ruby, input, n, true).map(|_| rb::QNIL),
        (Err(_), NameRead::InPlace(name)) => {
            name.hold(read_negative_length(ruby, input, n, true)?);
            Ok(rb::QNIL)
        }
    }
}

fn read_field_begin(ruby: &Ruby, rb_self: Value) -> Result<magnus::RArray, Error> {
    let f = binary::read_field_header(&mut Wire::new(ruby, &mut input(rb_self)))?;
    Ok(ruby.ary_new_from_values(&[
        ruby.qnil().as_value(),
        rb::int(f.ttype.into()),
        rb::int(f.id),
    ]))
}

fn read_map_begin(ruby: &Ruby, rb_self: Value) -> Result<magnus::RArray, Error> {
    let rules = thrift().contract.rules();
    let h = binary::read_map_header(&mut Wire::new(ruby, &mut input(rb_self)), rules)?;
    Ok(ruby.ary_new_from_values(&[
        rb::int(h.key.into()),
        rb::int(h.value.into()),
        rb::int(h.size),
    ]))
}

fn read_list_begin(ruby: &Ruby, rb_self: Value) -> Result<magnus::RArray, Error> {
    let rules = thrift().contract.rules();
    let h = binary::read_list_header(&mut Wire::new(ruby, &mut input(rb_self)), rules)?;
    Ok(ruby.ary_new_from_values(&[rb::int(h.element.into()), rb::int(h.size)]))
}

fn read_bool(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    Ok(input(rb_self).read_byte(ruby)? != 0)
}

fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let b = input(rb_self).read_byte(ruby)?;
    Ok(rb::int(b.into()))
}

fn read_i16(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = binary::decode_i16(input(rb_self).read_array(ruby)?);
    Ok(rb::int(n.into()))
}

fn read_i32(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = read_i32_from(ruby, &mut input(rb_self))?;
    Ok(rb::int(n.into()))
}

fn read_i64(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = binary::decode_i64(input(rb_self).read_array(ruby)?);
    Ok(rb::int(n))
}

fn read_double(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let f = binary::decode_double(input(rb_self).read_array(ruby)?);
    Ok(rb::float_value(f))
}

fn read_binary(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let s = read_bytes(ruby, &mut input(rb_self), false)?;
    // SAFETY: a String just read, on this stack.
    Ok(unsafe { rb::value(s) })
}

fn read_string(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let s = read_bytes(ruby, &mut input(rb_self), true)?;
    // SAFETY: a String just read, on this stack.
    Ok(unsafe { rb::value(s) })
}

fn read_uuid(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let s = input(rb_self).read_uuid(ruby)?;
    // SAFETY: a String just read, on this stack.
    Ok(unsafe { rb::value(s) })
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    // SAFETY: Thrift and Thrift::BinaryProtocol are pinned at load time.
    let (module, superclass) = unsafe { (rb::value(t.module), rb::value(t.binary_protocol)) };
    let thrift_module = magnus::RModule::from_value(module).expect("Thrift is a module");
    let superclass = RClass::from_value(superclass).expect("BinaryProtocol is a class");
    let class = thrift_module.define_class("BinaryProtocolAccelerated", superclass)?;
    rb::pin_forever(class.as_raw());
    CLASS.store(
        class.as_raw() as usize,
        std::sync::atomic::Ordering::Relaxed,
    );
    TRANS.configure(class.as_raw(), IVAR_TRANS.get());

    macro_rules! def {
        ($name:expr, $m:expr) => {
            registry::define_method(ruby, class, $name, $m)
        };
    }
    def!("native?", magnus::method!(native_p, 0))?;
    def!(
        "write_message_begin",
        magnus::method!(write_message_begin, 3)
    )?;
    def!("write_field_begin", magnus::method!(write_field_begin, 3))?;
    def!("write_field_stop", magnus::method!(write_field_stop, 0))?;
    def!("write_map_begin", magnus::method!(write_map_begin, 3))?;
    def!("write_list_begin", magnus::method!(write_list_begin, 2))?;
    def!("write_set_begin", magnus::method!(write_list_begin, 2))?;
    def!("write_byte", magnus::method!(write_byte, 1))?;
    def!("write_bool", magnus::method!(write_bool, 1))?;
    def!("write_i16", magnus::method!(write_i16, 1))?;
    def!("write_i32", magnus::method!(write_i32, 1))?;
    def!("write_i64", magnus::method!(write_i64, 1))?;
    def!("write_double", magnus::method!(write_double, 1))?;
    def!("write_string", magnus::method!(write_string, 1))?;
    def!("write_binary", magnus::method!(write_binary, 1))?;
    def!("write_uuid", magnus::method!(write_uuid, 1))?;
    for name in [
        "write_message_end",
        "write_struct_end",
        "write_field_end",
        "write_map_end",
        "write_list_end",
        "write_set_end",
    ] {
        def!(name, magnus::method!(nothing, 0))?;
    }
    def!("write_struct_begin", magnus::method!(nothing1, 1))?;

    def!("read_message_begin", magnus::method!(read_message_begin, 0))?;
    def!("read_field_begin", magnus::method!(read_field_begin, 0))?;
    def!("read_map_begin", magnus::method!(read_map_begin, 0))?;
    def!("read_list_begin", magnus::method!(read_list_begin, 0))?;
    def!("read_set_begin", magnus::method!(read_list_begin, 0))?;
    def!("read_byte", magnus::method!(read_byte, 0))?;
    def!("read_bool", magnus::method!(read_bool, 0))?;
    def!("read_i16", magnus::method!(read_i16, 0))?;
    def!("read_i32", magnus::method!(read_i32, 0))?;
    def!("read_i64", magnus::method!(read_i64, 0))?;
    def!("read_double", magnus::method!(read_double, 0))?;
    def!("read_string", magnus::method!(read_string, 0))?;
    def!("read_binary", magnus::method!(read_binary, 0))?;
    def!("read_uuid", magnus::method!(read_uuid, 0))?;
    for name in [
        "read_message_end",
        "read_struct_begin",
        "read_struct_end",
        "read_field_end",
        "read_map_end",
        "read_list_end",
        "read_set_end",
    ] {
        def!(name, magnus::method!(nothing, 0))?;
    }
    Ok(())
}
