//! `Thrift::BinaryProtocol`'s methods, native: the plain binary protocol that `BinaryProtocolFactory`, the
//! Serializer and the Deserializer give, pure Ruby in every thrift (the C accelerator has only its subclass
//! BinaryProtocolAccelerated).
//!
//! Each method does natively what the library's does only where that is certain to be the same, and calls the
//! library's own method (kept at load time) for everything else, so that results, bytes and exceptions are the loaded
//! version's by construction, whatever it checks and raises:
//! - the receiver is exactly a BinaryProtocol (a subclass or a singleton class may have changed a method the
//!   library's methods call), and none of the methods it relies on has changed (`GUARD`: BinaryProtocol's own,
//!   BaseProtocol's `trans`, `Thrift::Bytes`' and `Thrift::UUID`'s);
//! - a read takes bytes from a buffer read in place (a plain MemoryBufferTransport, an exact FramedTransport's or
//!   BufferedTransport's read buffer, a StringIO an HTTPClientTransport, IOStreamTransport or HeaderTransport lends)
//!   only when the buffer holds all of them and they make a value every version reads alike (no negative size, a
//!   known version word): it moves past them as the library's calls on the transport would (`read_byte`,
//!   `read_into_buffer`, `read_all`, one per value). Anything else (the end of the bytes, a negative size, a bad
//!   version, `strict_read`'s refusal, master's `reset_message_size`) is the library's method from where the read
//!   began, nothing consumed;
//! - a write appends to a buffer written in place only the arguments every version writes alike (Fixnums in range,
//!   Floats, UTF-8 Strings for strings, BINARY ones for binaries, UUID text), and answers what the transport's
//!   `write` would; nil, a Bignum, another type or encoding is the library's method, which checks, converts and
//!   raises as that version does.
//!
//! Not kept: `@rbuf`, the library's scratch String for fixed-width reads, is not written by a read taken in place.
//!
//! `THRIFT_NATIVE_BINARY_PROTOCOL=ruby` in the environment when the extension loads keeps the library's methods and
//! the struct codec's dispatch to them (`enabled`).

use magnus::rb_sys::AsRawValue;
use magnus::{Error, RClass, Ruby, Value};
use rb_sys::VALUE;
use thrift_native_core::{binary, uuid};

use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{
    IVAR_RESET_MESSAGE_SIZE, IVAR_STRICT_READ, IVAR_STRICT_WRITE, IVAR_TRANS,
};
use crate::ruby::{rb, registry};
use crate::thrift::{bytes, thrift};
use crate::transports::buffer::ReadBuffer;
use crate::transports::io::WriteTarget;
use crate::transports::layered::LayeredBuffer;
use crate::transports::memory_buffer::MemoryBuffer;
use crate::transports::string_io::StringIoBuffer;

/// `@trans` of exact BinaryProtocol instances.
pub static TRANS: IvarSlot = IvarSlot::new();

/// Tripped once Ruby code changes a method the native methods rely on, or at load by the opt-out: every method calls
/// the library's from then on, and the struct codec dispatches to them.
static GUARD: Guard = Guard::new();

/// The environment variable whose value `ruby` keeps the library's methods.
const OPT_OUT: &str = "THRIFT_NATIVE_BINARY_PROTOCOL";

/// Why an exact BinaryProtocol is not served natively, for `ThriftNative.explain`; None while it is.
pub fn disabled_reason() -> Option<&'static str> {
    if GUARD.intact() {
        return None;
    }
    Some(if opted_out() {
        "THRIFT_NATIVE_BINARY_PROTOCOL=ruby was set when thrift_native loaded"
    } else {
        "a method of Thrift::BinaryProtocol (or BaseProtocol#trans, Thrift::Bytes, Thrift::UUID) was redefined"
    })
}

fn opted_out() -> bool {
    std::env::var(OPT_OUT).is_ok_and(|v| v == "ruby")
}

/// `trans` of `protocol` when it is exactly a BinaryProtocol served natively.
#[inline(always)]
pub fn exact_trans(protocol: VALUE) -> Option<VALUE> {
    (rb::is_exact_instance(protocol, thrift().binary_protocol) && GUARD.intact())
        .then(|| TRANS.get(protocol))
}

/// Where `this`'s writes may be appended in place, when it is exactly a BinaryProtocol served natively.
#[inline(always)]
fn target(this: VALUE) -> Option<WriteTarget> {
    WriteTarget::of(exact_trans(this)?)
}

/// The library's own `read_byte` on `protocol`: the struct codec's byte past a buffer's end, which it converts from
/// what `trans.read_byte` answers its own way.
pub fn original_read_byte(protocol: VALUE) -> Result<VALUE, Error> {
    ORIGINALS.call_named("read_byte", protocol, &[])
}

/// The library's own `name` called on `this`: where the native method does not apply.
fn original(this: VALUE, name: &str, args: &[VALUE]) -> Result<Value, Error> {
    ORIGINALS.call_named(name, this, args).map(rb::returned)
}

/// Declares the native methods once: their names (the library's methods kept in `ORIGINALS`) and `define`, which
/// defines each one the loaded library has.
macro_rules! native_methods {
    ($($name:literal => $f:path, $arity:tt;)*) => {
        static ORIGINALS: Originals<{ [$($name),*].len() }> = Originals::new([$($name),*]);

        /// Defines each method BinaryProtocol itself defines: one it inherits (BaseProtocol's `*_end` methods) stays
        /// inherited, so that a change to BaseProtocol still reaches it.
        fn define(ruby: &Ruby, class: RClass) -> Result<(), Error> {
            $(
                if ORIGINALS.kept($name) && defined_by(ruby, class, $name)? {
                    registry::define_method(ruby, class, $name, magnus::method!($f, $arity))?;
                }
            )*
            Ok(())
        }
    };
}

native_methods! {
    "write_message_begin" => write_message_begin, 3;
    "write_message_end" => nothing, 0;
    "write_struct_begin" => nothing1, 1;
    "write_struct_end" => nothing, 0;
    "write_field_begin" => write_field_begin, 3;
    "write_field_end" => nothing, 0;
    "write_field_stop" => write_field_stop, 0;
    "write_map_begin" => write_map_begin, 3;
    "write_map_end" => nothing, 0;
    "write_list_begin" => write_list_begin, 2;
    "write_list_end" => nothing, 0;
    "write_set_begin" => write_set_begin, 2;
    "write_set_end" => nothing, 0;
    "write_bool" => write_bool, 1;
    "write_byte" => write_byte, 1;
    "write_i16" => write_i16, 1;
    "write_i32" => write_i32, 1;
    "write_i64" => write_i64, 1;
    "write_double" => write_double, 1;
    "write_string" => write_string, 1;
    "write_binary" => write_binary, 1;
    "write_uuid" => write_uuid, 1;
    "read_message_begin" => read_message_begin, 0;
    "read_message_end" => nothing, 0;
    "read_struct_begin" => nothing, 0;
    "read_struct_end" => nothing, 0;
    "read_field_begin" => read_field_begin, 0;
    "read_field_end" => nothing, 0;
    "read_map_begin" => read_map_begin, 0;
    "read_map_end" => nothing, 0;
    "read_list_begin" => read_list_begin, 0;
    "read_list_end" => nothing, 0;
    "read_set_begin" => read_set_begin, 0;
    "read_set_end" => nothing, 0;
    "read_bool" => read_bool, 0;
    "read_byte" => read_byte, 0;
    "read_i16" => read_i16, 0;
    "read_i32" => read_i32, 0;
    "read_i64" => read_i64, 0;
    "read_double" => read_double, 0;
    "read_string" => read_string, 0;
    "read_binary" => read_binary, 0;
    "read_uuid" => read_uuid, 0;
}

/// Whether `class` defines the method `name` itself (not inherited).
fn defined_by(ruby: &Ruby, class: RClass, name: &str) -> Result<bool, Error> {
    use magnus::value::ReprValue;
    let method: Value = class.funcall("instance_method", (ruby.to_symbol(name),))?;
    let owner: Value = method.funcall("owner", ())?;
    Ok(owner.as_raw() == class.as_raw())
}

/// `write_struct_begin`, `read_struct_begin` and the `*_end` methods BinaryProtocol defines: nil, as the library's
/// (every version's) answer.
fn nothing(_rb_self: Value) {}

fn nothing1(_rb_self: Value, _arg: Value) {}

// ----- reads -----

/// What a read method reads.
#[derive(Clone, Copy)]
enum Read {
    Byte,
    Bool,
    I16,
    I32,
    I64,
    Double,
    Binary,
    String,
    Uuid,
    FieldBegin,
    MapBegin,
    /// `read_list_begin` and `read_set_begin`.
    SequenceBegin,
    MessageBegin,
}

/// The library's method `name` reads `what`: in place where the buffer `this` reads holds it all and every version
/// reads it alike, else the library's method, nothing read before it.
fn read(ruby: &Ruby, rb_self: Value, what: Read, name: &str) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    match in_place(ruby, this, what) {
        Some(read) => read.map(rb::returned),
        None => original(this, name, &[]),
    }
}

fn in_place(ruby: &Ruby, this: VALUE, what: Read) -> Option<Result<VALUE, Error>> {
    let trans = exact_trans(this)?;
    if let Some(mut b) = MemoryBuffer::plain(trans) {
        return read_from(ruby, this, what, &mut b);
    }
    if let Some(mut b) = LayeredBuffer::plain(trans) {
        return read_from(ruby, this, what, &mut b);
    }
    read_from(ruby, this, what, &mut StringIoBuffer::plain(trans)?)
}

/// `what` from `b`: None (nothing read) where the bytes there do not make it as every version reads it. Each value
/// is moved past as the library's call on the transport moves past it: one `read_byte`, `read_into_buffer` or
/// `read_all` each (a memory buffer drops what was read at each call that passes 4 KiB).
fn read_from<B: ReadBuffer>(
    ruby: &Ruby,
    this: VALUE,
    what: Read,
    b: &mut B,
) -> Option<Result<VALUE, Error>> {
    let u = b.unread();
    let (value, steps): (VALUE, &[usize]) = match what {
        Read::Byte => (rb::integer((*u.first()? as i8).into()), &[1]),
        Read::Bool => (
            if *u.first()? != 0 {
                rb::QTRUE
            } else {
                rb::QFALSE
            },
            &[1],
        ),
        Read::I16 => (
            rb::integer(binary::decode_i16(array_at(u, 0)?).into()),
            &[2],
        ),
        Read::I32 => (rb::integer(i32_at(u, 0)?.into()), &[4]),
        Read::I64 => (rb::integer(binary::decode_i64(array_at(u, 0)?)), &[8]),
        Read::Double => (rb::float(binary::decode_double(array_at(u, 0)?)), &[8]),
        Read::Binary | Read::String | Read::Uuid => {
            let n = match what {
                Read::Uuid => u.get(..16).map(|_| 16)?,
                _ => size_at(u, 0)?,
            };
            return Some(read_bytes(ruby, b, what, n));
        }
        Read::FieldBegin => {
            let ftype = *u.first()? as i8;
            if ftype == 0 {
                // Types::STOP: `[nil, type, 0]`, the id not read.
                (
                    array(ruby, &[rb::QNIL, rb::integer(0), rb::integer(0)]),
                    &[1],
                )
            } else {
                let id = binary::decode_i16(array_at(u, 1)?);
                let items = [rb::QNIL, rb::integer(ftype.into()), rb::integer(id.into())];
                (array(ruby, &items), &[1, 2])
            }
        }
        Read::MapBegin => {
            let (key, value) = (*u.first()? as i8, *u.get(1)? as i8);
            let size = u32::try_from(i32_at(u, 2)?).ok()?;
            let items = [i64::from(key), value.into(), size.into()].map(rb::integer);
            (array(ruby, &items), &[1, 1, 4])
        }
        Read::SequenceBegin => {
            let element = *u.first()? as i8;
            let size = u32::try_from(i32_at(u, 1)?).ok()?;
            (
                array(
                    ruby,
                    &[rb::integer(element.into()), rb::integer(size.into())],
                ),
                &[1, 4],
            )
        }
        Read::MessageBegin => return message_begin(ruby, this, b),
    };
    // Nothing below runs Ruby code: the value (an immediate, or an Array of immediates) is held on this stack.
    Some(steps.iter().try_for_each(|&n| b.advance(n)).map(|()| value))
}

/// A String of `n` bytes after its size (`read_binary`, `read_string`: `read_i32`, then `read_all(n)`), or a UUID's
/// text (`UUID.uuid_from_bytes(trans.read_all(16))`: lowercase, dashed, UTF-8 as it is interpolated).
fn read_bytes<B: ReadBuffer>(ruby: &Ruby, b: &mut B, what: Read, n: usize) -> Result<VALUE, Error> {
    match what {
        Read::Binary => {
            b.advance(4)?;
            b.read_with(ruby, n, rb::binary_string)
        }
        Read::String => {
            b.advance(4)?;
            b.read_with(ruby, n, rb::utf8_string)
        }
        _ => b.read_with(ruby, 16, |bytes| {
            let bytes: &[u8; 16] = bytes.try_into().expect("read_with hands over 16 bytes");
            rb::utf8_string(&uuid::format(bytes))
        }),
    }
}

/// `[name, type, seqid]`, where the version word is VERSION_1's (strict) or `strict_read` is off (old style), the
/// name's size is not negative and master's `reset_message_size` is not asked for.
fn message_begin<B: ReadBuffer>(
    ruby: &Ruby,
    this: VALUE,
    b: &mut B,
) -> Option<Result<VALUE, Error>> {
    if rb::truthy(rb::ivar_get(this, IVAR_RESET_MESSAGE_SIZE.get())) {
        return None;
    }
    let t = thrift();
    let u = b.unread();
    let version = i32_at(u, 0)?;
    if version < 0 {
        // read_i32; read_string (read_i32, read_all); read_i32.
        if (version as u32 & t.version_mask as u32) != t.version_1 as u32 {
            return None;
        }
        let mtype = i64::from(version as u32 & t.type_mask as u32);
        let n = size_at(u, 4)?;
        let seqid = i32_at(u, 8 + n)?;
        return Some((|| {
            b.advance(4)?;
            b.advance(4)?;
            let name = b.read_with(ruby, n, rb::utf8_string)?;
            b.advance(4)?;
            Ok(array(
                ruby,
                &[name, rb::integer(mtype), rb::integer(seqid.into())],
            ))
        })());
    }
    // Old style: read_i32; trans.read_all(size) as it is (BINARY); read_byte; read_i32.
    if rb::truthy(rb::ivar_get(this, IVAR_STRICT_READ.get())) {
        return None;
    }
    let n = version as usize;
    let mtype = *u.get(4 + n)? as i8;
    let seqid = i32_at(u, 5 + n)?;
    Some((|| {
        b.advance(4)?;
        let name = b.read_with(ruby, n, rb::binary_string)?;
        b.advance(1)?;
        b.advance(4)?;
        Ok(array(
            ruby,
            &[name, rb::integer(mtype.into()), rb::integer(seqid.into())],
        ))
    })())
}

/// The N bytes at `at` of `bytes`.
#[inline(always)]
fn array_at<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at + N)?.try_into().ok()
}

/// The big-endian i32 at `at` of `bytes`.
#[inline(always)]
fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    array_at(bytes, at).map(binary::decode_i32)
}

/// A size at `at` of `bytes` that every version reads alike (not negative), with its bytes after it in `bytes`.
#[inline(always)]
fn size_at(bytes: &[u8], at: usize) -> Option<usize> {
    let n = usize::try_from(i32_at(bytes, at)?).ok()?;
    (bytes.len() >= at + 4 + n).then_some(n)
}

fn array(ruby: &Ruby, items: &[VALUE]) -> VALUE {
    // SAFETY: each item is a live VALUE of the caller's frame.
    let items: Vec<Value> = items.iter().map(|&v| unsafe { rb::value(v) }).collect();
    ruby.ary_new_from_values(&items).as_raw()
}

macro_rules! read_methods {
    ($($f:ident => $what:ident,)*) => {
        $(
            fn $f(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
                read(ruby, rb_self, Read::$what, stringify!($f))
            }
        )*
    };
}

read_methods! {
    read_byte => Byte,
    read_bool => Bool,
    read_i16 => I16,
    read_i32 => I32,
    read_i64 => I64,
    read_double => Double,
    read_binary => Binary,
    read_string => String,
    read_uuid => Uuid,
    read_field_begin => FieldBegin,
    read_map_begin => MapBegin,
    read_list_begin => SequenceBegin,
    read_set_begin => SequenceBegin,
    read_message_begin => MessageBegin,
}

// ----- writes -----

/// A Fixnum within `min..=max`.
#[inline(always)]
fn fixnum_in(v: VALUE, min: i64, max: i64) -> Option<i64> {
    rb::fixnum_value(v).filter(|n| (min..=max).contains(n))
}

/// Appends `bytes` (what the library's method writes, in one or more `trans.write` calls, the last of them `last`
/// bytes long) where `this` writes in place and `bytes` is Some; else the library's method.
#[inline(always)]
fn write_with(
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

fn write_byte(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = fixnum_in(v.as_raw(), i8::MIN.into(), i8::MAX.into()).map(|n| [n as u8]);
    write_with(
        rb_self.as_raw(),
        "write_byte",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        1,
    )
}

fn write_bool(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = [u8::from(rb::truthy(v.as_raw()))];
    write_with(
        rb_self.as_raw(),
        "write_bool",
        &[v.as_raw()],
        Some(&b[..]),
        1,
    )
}

fn write_i16(rb_self: Value, v: Value) -> Result<Value, Error> {
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

fn write_i32(rb_self: Value, v: Value) -> Result<Value, Error> {
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

fn write_i64(rb_self: Value, v: Value) -> Result<Value, Error> {
    let b = rb::fixnum_value(v.as_raw()).map(binary::encode_i64);
    write_with(
        rb_self.as_raw(),
        "write_i64",
        &[v.as_raw()],
        b.as_ref().map(|b| &b[..]),
        8,
    )
}

fn write_double(rb_self: Value, v: Value) -> Result<Value, Error> {
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
fn write_sized(this: VALUE, name: &str, s: VALUE, plain: bool) -> Result<Value, Error> {
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

fn write_string(rb_self: Value, s: Value) -> Result<Value, Error> {
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
fn write_binary(rb_self: Value, s: Value) -> Result<Value, Error> {
    let s = s.as_raw();
    write_sized(
        rb_self.as_raw(),
        "write_binary",
        s,
        bytes::is_binary_string(s),
    )
}

/// UUID text (hex digits and dashes where `UUID_REGEX` has them) in an ASCII-compatible String: its 16 bytes.
fn write_uuid(rb_self: Value, u: Value) -> Result<Value, Error> {
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

fn write_field_begin(rb_self: Value, name: Value, ftype: Value, id: Value) -> Result<Value, Error> {
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

fn write_field_stop(rb_self: Value) -> Result<Value, Error> {
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

fn write_map_begin(rb_self: Value, key: Value, value: Value, size: Value) -> Result<Value, Error> {
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

fn write_list_begin(rb_self: Value, etype: Value, size: Value) -> Result<Value, Error> {
    sequence_header(rb_self.as_raw(), "write_list_begin", etype, size)
}

fn write_set_begin(rb_self: Value, etype: Value, size: Value) -> Result<Value, Error> {
    sequence_header(rb_self.as_raw(), "write_set_begin", etype, size)
}

/// `strict_write` (truthy): the version word with the type (0..=127, which every version writes alike), the name
/// (`write_string`), the seqid; else the name, the type byte, the seqid. The name a UTF-8 String.
fn write_message_begin(
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

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    if opted_out() {
        GUARD.trip();
        return Ok(());
    }
    TRANS.configure(t.binary_protocol, IVAR_TRANS.get());
    ORIGINALS.keep(ruby, t.binary_protocol, true)?;
    GUARD.watch(t.binary_protocol, Watch::Every);
    GUARD.watch(t.json.base, Watch::Methods(&["trans"]));
    GUARD.watch(t.bytes, Watch::EveryWithSingleton);
    if let Some(uuid) = t.uuid_module {
        GUARD.watch(uuid, Watch::EveryWithSingleton);
    }
    // SAFETY: BinaryProtocol is pinned at load time.
    let class = RClass::from_value(unsafe { rb::value(t.binary_protocol) })
        .expect("BinaryProtocol is a class");
    define(ruby, class)
}
