//! `Thrift::BinaryProtocol`'s writes: the arguments every thrift version writes alike appended to the buffer its
//! transport is written to in place, answering what the transport's `write` would; else the library's own method,
//! nothing written before it.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Value};
use rb_sys::VALUE;
use thrift_native_core::{binary, uuid};

use super::{original, target};
use crate::ruby::names::IVAR_STRICT_WRITE;
use crate::ruby::rb;
use crate::thrift::{bytes, thrift};

/// A Fixnum within `min..=max`.
#[inline(always)]
fn fixnum_in(v: VALUE, min: i64, max: i64) -> Option<i64> {
    rb::fixnum_value(v).filter(|n| (min..=max).contains(n))
}

/// Appends `bytes` (what the library's method writes, in one or more `trans.write` calls, the last of them `last`
/// bytes long) where `this` writes in place and `bytes` is Some; else the library's method.
#[inline(always)]
pub(super) fn write_with(
    this: VALUE,
    name: &str,
    args: &[VALUE],
    bytes: Option<&[u8]>,
    last: usize,
) -> Result<Value, Error> {
    if let (Some(bytes), Some(target)) = (bytes, target(this)) {
        target.append(bytes)?;
        return Ok(rb::returned(target.answer(last)));
    }
    original(this, name, args)
}

pub(super) fn write_byte(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = fixnum_in(v.as_raw(), i8::MIN.into(), i8::MAX.into()).map(|n| [n as u8]);
    write_with(
        rb_self.as_raw(),
        "write_byte",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        1,
    )
}

pub(super) fn write_bool(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = [u8::from(rb::truthy(v.as_raw()))];
    write_with(
        rb_self.as_raw(),
        "write_bool",
        &[v.as_raw()],
        Some(&b[..]),
        1,
    )
}

pub(super) fn write_i16(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = fixnum_in(v.as_raw(), i16::MIN.into(), i16::MAX.into())
        .map(|n| binary::encode_i16(n as i16));
    write_with(
        rb_self.as_raw(),
        "write_i16",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        2,
    )
}

pub(super) fn write_i32(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = fixnum_in(v.as_raw(), i32::MIN.into(), i32::MAX.into())
        .map(|n| binary::encode_i32(n as i32));
    write_with(
        rb_self.as_raw(),
        "write_i32",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        4,
    )
}

pub(super) fn write_i64(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = rb::fixnum_value(v.as_raw()).map(binary::encode_i64);
    write_with(
        rb_self.as_raw(),
        "write_i64",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        8,
    )
}

pub(super) fn write_double(rb_self: Value, v: Value) -> Result<Value, Error> {
    let raw = v.as_raw();
    let f = rb::float_of(raw).or_else(|| rb::fixnum_value(raw).map(|n| n as f64));
    let b = f.map(binary::encode_double);
    write_with(
        rb_self.as_raw(),
        "write_double",
        &[raw],
        b.as_ref().map(|b| &b[..]),
        8,
    )
}

/// A String's bytes with their i32 size before them, where `plain` says the library writes its bytes as they are
/// (`write_string`: a UTF-8 String; `write_binary`: a BINARY one), in place; else the library's method.
pub(super) fn write_sized(this: VALUE, name: &str, s: VALUE, plain: bool) -> Result<Value, Error> {
    if plain {
        // SAFETY: `s` is a String (the caller's check), held by the caller's frame.
        let len = unsafe { rb::str_len(s) };
        if let (Ok(size), Some(target)) = (i32::try_from(len), target(this)) {
            target.append(&binary::encode_i32(size))?;
            target.append_str(s)?;
            return Ok(rb::returned(target.answer(len)));
        }
    }
    original(this, name, &[s])
}

pub(super) fn write_string(rb_self: Value, s: Value) -> Result<Value, Error> {
    let s = s.as_raw();
    write_sized(
        rb_self.as_raw(),
        "write_string",
        s,
        bytes::is_utf8_string(s),
    )
}

/// A BINARY String only: the library hands any other to `trans.write`, whose `force_binary_encoding` re-tags the
/// caller's String.
pub(super) fn write_binary(rb_self: Value, s: Value) -> Result<Value, Error> {
    let s = s.as_raw();
    write_sized(
        rb_self.as_raw(),
        "write_binary",
        s,
        bytes::is_binary_string(s),
    )
}

/// UUID text (hex digits and dashes where `UUID_REGEX` has them) in an ASCII-compatible String: its 16 bytes.
pub(super) fn write_uuid(rb_self: Value, u: Value) -> Result<Value, Error> {
    let raw = u.as_raw();
    let parsed = (bytes::is_ascii_compatible_string(raw))
        // SAFETY: `raw` is a String; the slice is dropped before anything else runs.
        .then(|| uuid::parse(unsafe { rb::str_bytes(raw) }).ok())
        .flatten();
    write_with(
        rb_self.as_raw(),
        "write_uuid",
        &[raw],
        parsed.as_ref().map(|b| &b[..]),
        16,
    )
}

pub(super) fn write_field_begin(
    rb_self: Value,
    name: Value,
    ftype: Value,
    id: Value,
) -> Result<Value, Error> {
    let header = fixnum_in(ftype.as_raw(), i8::MIN.into(), i8::MAX.into())
        .zip(fixnum_in(id.as_raw(), i16::MIN.into(), i16::MAX.into()))
        .map(|(t, id)| {
            let [a, b] = binary::encode_i16(id as i16);
            [t as u8, a, b]
        });
    let args = [name.as_raw(), ftype.as_raw(), id.as_raw()];
    write_with(
        rb_self.as_raw(),
        "write_field_begin",
        &args,
        header.as_ref().map(|b| &b[..]),
        2,
    )
}

pub(super) fn write_field_stop(rb_self: Value) -> Result<Value, Error> {
    write_with(
        rb_self.as_raw(),
        "write_field_stop",
        &[],
        Some(&[0u8][..]),
        1,
    )
}

/// An element type and a size as every version writes them: a type within a byte, a size not negative.
fn type_and_size(ttype: VALUE, size: VALUE) -> Option<(u8, [u8; 4])> {
    let t = fixnum_in(ttype, i8::MIN.into(), i8::MAX.into())?;
    let n = fixnum_in(size, 0, i32::MAX.into())?;
    Some((t as u8, binary::encode_i32(n as i32)))
}

pub(super) fn write_map_begin(
    rb_self: Value,
    key: Value,
    value: Value,
    size: Value,
) -> Result<Value, Error> {
    let header = fixnum_in(key.as_raw(), i8::MIN.into(), i8::MAX.into())
        .zip(type_and_size(value.as_raw(), size.as_raw()))
        .map(|(k, (v, [a, b, c, d]))| [k as u8, v, a, b, c, d]);
    let args = [key.as_raw(), value.as_raw(), size.as_raw()];
    write_with(
        rb_self.as_raw(),
        "write_map_begin",
        &args,
        header.as_ref().map(|b| &b[..]),
        4,
    )
}

fn sequence_header(this: VALUE, name: &str, etype: Value, size: Value) -> Result<Value, Error> {
    let header =
        type_and_size(etype.as_raw(), size.as_raw()).map(|(e, [a, b, c, d])| [e, a, b, c, d]);
    write_with(
        this,
        name,
        &[etype.as_raw(), size.as_raw()],
        header.as_ref().map(|b| &b[..]),
        4,
    )
}

pub(super) fn write_list_begin(rb_self: Value, etype: Value, size: Value) -> Result<Value, Error> {
    sequence_header(rb_self.as_raw(), "write_list_begin", etype, size)
}

pub(super) fn write_set_begin(rb_self: Value, etype: Value, size: Value) -> Result<Value, Error> {
    sequence_header(rb_self.as_raw(), "write_set_begin", etype, size)
}

/// `strict_write` (truthy): the version word with the type (0..=127, which every version writes alike), the name
/// (`write_string`), the seqid; else the name, the type byte, the seqid. The name a UTF-8 String.
pub(super) fn write_message_begin(
    rb_self: Value,
    name: Value,
    mtype: Value,
    seqid: Value,
) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    let (n, k, s) = (name.as_raw(), mtype.as_raw(), seqid.as_raw());
    let parts = fixnum_in(k, 0, i8::MAX.into()).zip(fixnum_in(s, i32::MIN.into(), i32::MAX.into()));
    // SAFETY: `n` is a String when is_utf8_string says so.
    let len = bytes::is_utf8_string(n).then(|| unsafe { rb::str_len(n) });
    let header = parts.zip(len.and_then(|l| i32::try_from(l).ok()));
    if let (Some(((k, s), len)), Some(target)) = (header, target(this)) {
        let seqid = binary::encode_i32(s as i32);
        if rb::truthy(rb::ivar_get(this, IVAR_STRICT_WRITE.get())) {
            let word = binary::encode_i32((thrift().version_1 as u32 | k as u32) as i32);
            target.append(&word)?;
            target.append(&binary::encode_i32(len))?;
            target.append_str(n)?;
        } else {
            target.append(&binary::encode_i32(len))?;
            target.append_str(n)?;
            target.append(&[k as u8])?;
        }
        target.append(&seqid)?;
        return Ok(rb::returned(target.answer(4)));
    }
    original(this, "write_message_begin", &[n, k, s])
}
