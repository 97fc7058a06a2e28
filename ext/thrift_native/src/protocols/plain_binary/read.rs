//! `Thrift::BinaryProtocol`'s reads: each value taken from the buffer its transport is read from in place, where the
//! buffer holds all of its bytes and every thrift version reads them alike, moving past them as the library's calls
//! on the transport would; else the library's own method, nothing read before it.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Ruby, Value};
use rb_sys::VALUE;
use thrift_native_core::{binary, uuid};

use super::{exact_trans, original};
use crate::ruby::names::{IVAR_RESET_MESSAGE_SIZE, IVAR_STRICT_READ};
use crate::ruby::rb;
use crate::thrift::thrift;
use crate::transports::buffer::ReadBuffer;
use crate::transports::layered::LayeredBuffer;
use crate::transports::memory_buffer::MemoryBuffer;
use crate::transports::string_io::StringIoBuffer;

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

/// Each read method, over [`read`].
macro_rules! read_methods {
    ($($f:ident => $what:ident,)*) => {
        $(
            pub(super) fn $f(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
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
