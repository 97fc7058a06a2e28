//! `Thrift::CompactProtocol`: every read/write method of the C accelerator (thrift's `ext/compact_protocol.c`), on the
//! Ruby class itself. Field-id deltas use the real `@last_field` Array as a stack, boolean fields the real
//! `@boolean_field`/`@bool_value` ivars, so the Ruby methods that remain (`skip`, `to_s`) keep working.
//!
//! Reads from a plain MemoryBufferTransport (or an exact Framed or BufferedTransport's read buffer) decode whole
//! varints straight from the buffer; any other transport is
//! called exactly as the C accelerator calls it (`read_byte` per varint byte, one `write` per byte written).
//!
//! Where the loaded thrift's C accelerator predates master's checks ([`crate::thrift::contract::Contract`]), the
//! unchecked writes do as it did (NUM2INT/NUM2LL conversions, the i16 written as the i32 it is, negative sizes written
//! as they are, the field type looked up after `@last_field` was popped), and reads follow its wire rules
//! ([`crate::thrift::contract::Contract::rules`]: sizes beyond INT32_MAX as negative int32s, varint32s as it read
//! them).

use magnus::prelude::*;
use magnus::rb_sys::AsRawValue;
use magnus::{Error, RArray, RClass, RString, Ruby, TryConvert, Value};
use rb_sys::VALUE;
use thrift_native_core::compact::{
    self, compact_type_of, ctype, thrift_type_of, zigzag32, zigzag64, Varint,
};
use thrift_native_core::{ttype, CoreError};

use crate::protocols::message_name::{read_name, NameRead};
use crate::protocols::shared::{
    append_pieces, checked_i16, checked_i32, checked_size, float_value, i64_arg, int_arg, not_nil,
    reset_message_size_if_asked, string_length, uuid_bytes, JoinedHeader, Pending,
};
use crate::ruby::ivars::IvarSlot;
use crate::ruby::names::{IVAR_BOOLEAN_FIELD, IVAR_BOOL_VALUE, IVAR_LAST_FIELD, IVAR_TRANS};
use crate::ruby::rb::num2int;
use crate::ruby::{rb, registry};
use crate::thrift::thrift;
use crate::thrift::{bytes, errors};
use crate::transports::io::{Input, Output, Wire};

/// Ivars of exact CompactProtocol instances.
pub static TRANS: IvarSlot = IvarSlot::new();
static LAST_FIELD: IvarSlot = IvarSlot::new();
pub static BOOL_VALUE: IvarSlot = IvarSlot::new();
static BOOLEAN_FIELD: IvarSlot = IvarSlot::new();

const OUT_OF_BOUNDS: &str = "integer out of bounds";

#[inline(always)]
fn input(protocol: Value) -> Input {
    Input::of(protocol.as_raw(), &TRANS)
}

#[inline(always)]
fn output(protocol: Value) -> Output {
    Output::of(protocol.as_raw(), &TRANS)
}

fn core_error(ruby: &Ruby, e: CoreError) -> Error {
    errors::from_core(ruby, e)
}

/// The compact type of a Thrift type given as a Ruby value (`FIX2INT`, then INVALID_DATA for STOP and unknowns;
/// UUID only where the loaded thrift has it).
fn compact_type(ruby: &Ruby, t: Value) -> Result<u8, Error> {
    let t = i64::from(num2int(t.as_raw())?);
    if t == i64::from(ttype::UUID) && !thrift().has_uuid_type {
        return Err(core_error(ruby, CoreError::UnknownCompactType(t)));
    }
    compact_type_of(t).map_err(|e| core_error(ruby, e))
}

fn thrift_type(ruby: &Ruby, c: u8) -> Result<Value, Error> {
    if c == ctype::UUID && !thrift().has_uuid_type {
        return Err(core_error(ruby, CoreError::UnknownCompactType(c.into())));
    }
    let t = thrift_type_of(c).map_err(|e| core_error(ruby, e))?;
    Ok(rb::int(t.into()))
}

/// Whether the loaded thrift range-checks CompactProtocol's arguments (thrift master).
#[inline(always)]
fn checked_writes() -> bool {
    thrift().contract.checked_compact_writes
}

use crate::ruby::rb::int;

// ----- the @last_field stack -----

/// `@last_field`, which must be an Array (the C accelerator does not check, and crashes).
fn field_stack(this: VALUE) -> Result<VALUE, Error> {
    let stack = LAST_FIELD.get(this);
    if rb::is_array(stack) {
        return Ok(stack);
    }
    // SAFETY: an ivar of the protocol, which is on the caller's stack.
    RArray::try_convert(unsafe { rb::value(stack) }).map(|a| a.as_raw())
}

fn push_field_id(this: VALUE, id: VALUE) -> Result<(), Error> {
    let stack = field_stack(this)?;
    // SAFETY: `stack` is an Array.
    unsafe { rb::ary_push(stack, id) }
}

/// `FIX2INT(@last_field.pop)`: an empty stack gives TypeError for nil, as in the C accelerator.
fn pop_field_id(this: VALUE) -> Result<i32, Error> {
    let stack = field_stack(this)?;
    // SAFETY: `stack` is an Array.
    num2int(unsafe { rb::ary_pop(stack) }?)
}

// ----- writes -----

fn native_p(_rb_self: Value) -> bool {
    true
}

fn nothing(_rb_self: Value) {}

/// The field header: pop the last id, write the delta or the type byte and zigzag id, push the new id.
fn write_field_header(
    p: &mut Pending,
    this: VALUE,
    compact_type: u8,
    id: i16,
    id_value: VALUE,
) -> Result<(), Error> {
    let last = pop_field_id(this)?;
    let (header, len) = compact::field_header(compact_type, id, last.into());
    p.write_unit(&header[..1])?;
    if len > 1 {
        p.write_varint(zigzag32(id.into()).into())?;
    }
    p.flush()?;
    push_field_id(this, id_value)
}

/// The field header as thrift's C accelerator wrote it before master: the id by NUM2INT, the last id popped, then
/// the type (an unknown type raises with the last id already popped), the id written as the i32 it is.
fn write_field_header_unchecked(
    p: &mut Pending,
    this: VALUE,
    compact_type: impl FnOnce() -> Result<u8, Error>,
    id_value: VALUE,
) -> Result<(), Error> {
    let id = num2int(id_value)?;
    let last = pop_field_id(this)?;
    let compact_type = compact_type()?;
    let delta = id.wrapping_sub(last);
    if delta > 0 && delta <= 15 {
        p.write_unit(&[((delta as u8) << 4) | (compact_type & 0x0f)])?;
    } else {
        p.write_unit(&[compact_type & 0x0f])?;
        p.write_varint(zigzag32(id).into())?;
    }
    p.flush()?;
    push_field_id(this, id_value)
}

/// `write_binary`'s tail: the varint length (RangeError past INT32_MAX), then the bytes of `buf`.
fn write_bytes_with_length(ruby: &Ruby, out: Output, buf: VALUE) -> Result<(), Error> {
    let len = string_length(ruby, buf, OUT_OF_BOUNDS)?;
    let mut p = Pending::new(out);
    p.write_varint(len as u64)?;
    p.flush()?;
    p.output().write_copy_of(buf)
}

/// `write_string`: `Thrift::Bytes.convert_to_utf8_byte_buffer(s)` (nil raises NoMethodError there), then
/// `write_binary`. A UTF-8 String bound for a plain buffer is appended as it is, with no converted copy.
fn write_string_to(ruby: &Ruby, out: Output, s: Value) -> Result<(), Error> {
    let raw = s.as_raw();
    let converted = match out {
        Output::Target(_) => bytes::utf8_bytes_of(raw)?,
        Output::Transport(_) => bytes::convert_to_utf8_byte_buffer(raw)?,
    };
    // SAFETY: the argument or its converted copy, on this stack.
    let converted = RString::try_convert(unsafe { rb::value(converted) })?.as_raw();
    write_bytes_with_length(ruby, out, converted)
}

/// thrift master checks the sequence id, then converts the type, before writing anything; before master each
/// argument was converted (FIX2INT) as the byte it goes into was written, so a bad one raised after the bytes
/// before it.
pub(crate) fn write_message_begin(
    ruby: &Ruby,
    rb_self: Value,
    name: Value,
    mtype: Value,
    seqid: Value,
) -> Result<(), Error> {
    let checked = checked_writes();
    let checked_seqid = if checked {
        Some(checked_i32(ruby, not_nil(ruby, seqid)?)?)
    } else if thrift().contract.varint32_limit {
        // thrift 0.24 takes the seqid (FIX2INT) before it writes anything, the type after the protocol id.
        Some(num2int(seqid.as_raw())?)
    } else {
        None
    };
    let early_mtype = if checked {
        Some(num2int(mtype.as_raw())?)
    } else {
        None
    };
    let c = thrift().compact;
    let out = output(rb_self);
    let mut p = Pending::new(out);
    p.write_unit(&[c.protocol_id as u8])?;
    let mtype = match early_mtype {
        Some(t) => t,
        None => p.check(num2int(mtype.as_raw()))?,
    };
    let version_and_type =
        (c.version & c.version_mask) | ((i64::from(mtype) << c.type_shift_amount) & c.type_mask);
    p.write_unit(&[version_and_type as u8])?;
    let seqid = match checked_seqid {
        Some(n) => n,
        None => p.check(num2int(seqid.as_raw()))?,
    };
    p.write_varint(u64::from(seqid as u32))?;
    p.flush()?;
    write_string_to(ruby, out, name)
}

/// `write_message_begin(name, mtype, seqid)` of a [`JoinedHeader`] (binary.rs's twin): the same bytes, appended to a
/// plain write buffer. None, with nothing written, for a transport or a long header.
pub(crate) fn write_joined_message_begin(
    prot: VALUE,
    h: &JoinedHeader,
) -> Option<Result<(), Error>> {
    // SAFETY: `prot` is a live VALUE of the caller's frame.
    let out = output(unsafe { rb::value(prot) });
    let c = thrift().compact;
    let version_and_type =
        (c.version & c.version_mask) | ((i64::from(h.mtype) << c.type_shift_amount) & c.type_mask);
    let head = [c.protocol_id as u8, version_and_type as u8];
    let seqid = Varint::new(u64::from(h.seqid as u32));
    let len = Varint::new(h.name_len() as u64);
    let [a, b, n] = h.name;
    append_pieces(out, &[&head, seqid.as_bytes(), len.as_bytes(), a, b, n])
}

fn write_struct_begin(rb_self: Value, _name: Value) -> Result<(), Error> {
    push_field_id(rb_self.as_raw(), rb::integer(0))
}

fn write_struct_end(rb_self: Value) -> Result<(), Error> {
    let stack = field_stack(rb_self.as_raw())?;
    // SAFETY: `stack` is an Array.
    unsafe { rb::ary_pop(stack) }.map(|_| ())
}

fn write_field_begin(
    ruby: &Ruby,
    rb_self: Value,
    _name: Value,
    ftype: Value,
    id: Value,
) -> Result<(), Error> {
    let this = rb_self.as_raw();
    if !checked_writes() {
        if num2int(ftype.as_raw())? == i32::from(ttype::BOOL) {
            let pending = ruby.ary_new_from_values(&[ftype, id]);
            return rb::ivar_set(this, IVAR_BOOLEAN_FIELD.get(), pending.as_raw());
        }
        let mut p = Pending::new(output(rb_self));
        return write_field_header_unchecked(
            &mut p,
            this,
            || compact_type(ruby, ftype),
            id.as_raw(),
        );
    }
    let id_number = checked_i16(ruby, not_nil(ruby, id)?)?;
    if num2int(ftype.as_raw())? == i32::from(ttype::BOOL) {
        // The header waits for write_bool, which packs the value into it.
        let pending = ruby.ary_new_from_values(&[ftype, id]);
        return rb::ivar_set(this, IVAR_BOOLEAN_FIELD.get(), pending.as_raw());
    }
    let compact_type = compact_type(ruby, ftype)?;
    let mut p = Pending::new(output(rb_self));
    write_field_header(&mut p, this, compact_type, id_number, id.as_raw())
}

fn write_field_stop(rb_self: Value) -> Result<(), Error> {
    output(rb_self).write(&[ctype::STOP])
}

fn write_map_begin(
    ruby: &Ruby,
    rb_self: Value,
    ktype: Value,
    vtype: Value,
    size: Value,
) -> Result<(), Error> {
    let size = if checked_writes() {
        checked_size(ruby, not_nil(ruby, size)?)?
    } else {
        // Before master a negative size was written as the varint of its 32 bits.
        num2int(size.as_raw())?
    };
    let mut p = Pending::new(output(rb_self));
    if size == 0 {
        p.write_unit(&[0])?;
        return p.flush();
    }
    // As in the C accelerator (and pure Ruby), the size is on the wire before the types are checked.
    p.write_varint(u64::from(size as u32))?;
    let k = p.check(compact_type(ruby, ktype))?;
    let v = p.check(compact_type(ruby, vtype))?;
    p.write_unit(&[(k << 4) | v])?;
    p.flush()
}

fn write_list_begin(ruby: &Ruby, rb_self: Value, etype: Value, size: Value) -> Result<(), Error> {
    let size = if checked_writes() {
        checked_size(ruby, not_nil(ruby, size)?)?
    } else {
        // Before master a negative size took the short form: (size << 4) | type, one malformed byte.
        num2int(size.as_raw())?
    };
    let e = compact_type(ruby, etype)?;
    let mut p = Pending::new(output(rb_self));
    if size <= 14 {
        p.write_unit(&[(size.wrapping_shl(4) as u8) | e])?;
    } else {
        p.write_unit(&[0xf0 | e])?;
        p.write_varint(u64::from(size as u32))?;
    }
    p.flush()
}

/// Whether `write_bool` writes anything truthy as true (thrift master's C accelerator); before master only `true`
/// itself was written as true. The struct encoder follows the same rule (`RubyValues::compact`).
pub fn writes_truthy_as_true() -> bool {
    thrift().contract.compact_header_codes
}

fn write_bool(ruby: &Ruby, rb_self: Value, b: Value) -> Result<(), Error> {
    let this = rb_self.as_raw();
    let is_true = if writes_truthy_as_true() {
        rb::truthy(b.as_raw())
    } else {
        b.as_raw() == rb::QTRUE
    };
    let compact_type = if is_true {
        ctype::BOOLEAN_TRUE
    } else {
        ctype::BOOLEAN_FALSE
    };
    let field = BOOLEAN_FIELD.get(this);
    if rb::is_nil(field) {
        return output(rb_self).write(&[compact_type]);
    }
    // @boolean_field is [type, id], set by write_field_begin.
    // SAFETY: an ivar of the protocol, which is on this stack.
    let field = RArray::try_convert(unsafe { rb::value(field) })?.as_raw();
    // SAFETY: `field` is an Array; its element is held by it.
    let id_value = unsafe { rb::array_entry(field, 1) };
    if !checked_writes() {
        let mut p = Pending::new(output(rb_self));
        write_field_header_unchecked(&mut p, this, || Ok(compact_type), id_value)?;
        return BOOLEAN_FIELD.set(this, rb::QNIL);
    }
    // SAFETY: an element of `field`, which is on this stack.
    let id = checked_i16(ruby, not_nil(ruby, unsafe { rb::value(id_value) })?)?;
    let mut p = Pending::new(output(rb_self));
    write_field_header(&mut p, this, compact_type, id, id_value)?;
    BOOLEAN_FIELD.set(this, rb::QNIL)
}

fn write_byte(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let v = not_nil(ruby, v)?;
    let b = int_arg(ruby, v, i8::MIN.into(), i8::MAX.into(), checked_writes())? as i8;
    output(rb_self).write(&[b as u8])
}

fn write_varint(rb_self: Value, n: u64) -> Result<(), Error> {
    let mut p = Pending::new(output(rb_self));
    p.write_varint(n)?;
    p.flush()
}

/// Before master `write_i16` was `write_i32`: a value beyond 16 bits was written whole.
fn write_i16(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    if !checked_writes() {
        return write_i32(ruby, rb_self, v);
    }
    let n = checked_i16(ruby, not_nil(ruby, v)?)?;
    write_varint(rb_self, zigzag32(n.into()).into())
}

fn write_i32(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let v = not_nil(ruby, v)?;
    let n = int_arg(ruby, v, i32::MIN.into(), i32::MAX.into(), checked_writes())?;
    write_varint(rb_self, zigzag32(n).into())
}

fn write_i64(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let n = i64_arg(ruby, not_nil(ruby, v)?, checked_writes())?;
    write_varint(rb_self, zigzag64(n))
}

fn write_double(ruby: &Ruby, rb_self: Value, v: Value) -> Result<(), Error> {
    let f = float_value(not_nil(ruby, v)?)?;
    output(rb_self).write(&compact::encode_double(f))
}

fn write_string(ruby: &Ruby, rb_self: Value, s: Value) -> Result<(), Error> {
    write_string_to(ruby, output(rb_self), s)
}

/// `force_binary_encoding(b)` (in place; nil raises NoMethodError in Thrift::Bytes), then its length and bytes.
fn write_binary(ruby: &Ruby, rb_self: Value, b: Value) -> Result<(), Error> {
    let buf = bytes::force_binary_encoding(b.as_raw())?;
    // SAFETY: the argument or its binary copy, on this stack.
    let buf = RString::try_convert(unsafe { rb::value(buf) })?.as_raw();
    write_bytes_with_length(ruby, output(rb_self), buf)
}

fn write_uuid(ruby: &Ruby, rb_self: Value, u: Value) -> Result<(), Error> {
    let bytes = uuid_bytes(ruby, u)?;
    output(rb_self).write(&bytes)
}

// ----- reads -----

fn read_varint32(ruby: &Ruby, input: &mut Input) -> Result<u32, Error> {
    compact::read_varint32(&mut Wire::new(ruby, input), thrift().contract.rules())
}

/// A byte string's varint32 length, which must fit an i32.
fn read_size(ruby: &Ruby, input: &mut Input) -> Result<usize, Error> {
    compact::read_size(&mut Wire::new(ruby, input), thrift().contract.rules())
}

fn read_i16_from(ruby: &Ruby, input: &mut Input) -> Result<i16, Error> {
    compact::read_i16(&mut Wire::new(ruby, input), thrift().contract.rules())
}

fn read_message_begin(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
    let (name, mtype, seqid) = message_begin(ruby, rb_self.as_raw(), NameRead::String)?;
    // SAFETY: a String just read, on this stack.
    let name = unsafe { rb::value(name) };
    Ok(ruby.ary_new_from_values(&[name, int(mtype), int(seqid.into())]))
}

/// What `read_message_begin` reads: the name (read as `name` says: nil unless a String is asked for), the type and
/// the sequence id.
pub fn message_begin(
    ruby: &Ruby,
    this: VALUE,
    mut name: NameRead,
) -> Result<(VALUE, i64, i32), Error> {
    reset_message_size_if_asked(this)?;
    let c = thrift().compact;
    // Before master: type -1, and the old C accelerator's version message (its arguments swapped).
    let typed = thrift().contract.compact_header_codes;
    let bad_version = if typed {
        thrift().codes.bad_version
    } else {
        -1
    };
    let mut input = Input::of(this, &TRANS);
    let protocol_id = input.read_byte(ruby)?;
    if i64::from(protocol_id) != c.protocol_id {
        let message = format!(
            "Expected protocol id {} but got {protocol_id}",
            c.protocol_id
        );
        return Err(errors::protocol(bad_version, &message));
    }
    let version_and_type = i64::from(input.read_byte(ruby)?);
    let version = version_and_type & c.version_mask;
    if version != c.version {
        let message = if typed {
            format!("Expected version {} but got {version}", c.version)
        } else {
            format!("Expected version id {version} but got {}", c.version)
        };
        return Err(errors::protocol(bad_version, &message));
    }
    let mtype = (version_and_type >> c.type_shift_amount) & c.type_bits;
    let seqid = read_varint32(ruby, &mut input)? as i32;
    let len = read_size(ruby, &mut input)?;
    let name = read_name(ruby, &mut input, len, true, &mut name)?;
    Ok((name, mtype, seqid))
}

fn read_struct_begin(rb_self: Value) -> Result<(), Error> {
    push_field_id(rb_self.as_raw(), rb::integer(0))
}

fn read_field_begin(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
    let this = rb_self.as_raw();
    let header = input(rb_self).read_byte(ruby)? as u8;
    let compact_type = header & 0x0f;
    if compact_type == ctype::STOP {
        return Ok(ruby.ary_new_from_values(&[ruby.qnil().as_value(), int(0), int(0)]));
    }
    let delta = header >> 4;
    let id = if delta == 0 {
        pop_field_id(this)?;
        // Popping may have run Ruby code (`to_int` of a stack entry that is not an Integer): look at the transport
        // afresh.
        i32::from(read_i16_from(ruby, &mut input(rb_self))?)
    } else {
        pop_field_id(this)?.wrapping_add(delta.into())
    };
    if compact_type == ctype::BOOLEAN_TRUE || compact_type == ctype::BOOLEAN_FALSE {
        let b = if compact_type == ctype::BOOLEAN_TRUE {
            rb::QTRUE
        } else {
            rb::QFALSE
        };
        BOOL_VALUE.set(this, b)?;
    }
    push_field_id(this, rb::integer(id.into()))?;
    let t = thrift_type(ruby, compact_type)?;
    Ok(ruby.ary_new_from_values(&[ruby.qnil().as_value(), t, int(id.into())]))
}

/// Before master a size beyond INT32_MAX is answered as the negative int32 of its bits ([`Contract::rules`]).
fn read_map_begin(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
    let rules = thrift().contract.rules();
    let h = compact::read_map_header(&mut Wire::new(ruby, &mut input(rb_self)), rules)?;
    Ok(ruby.ary_new_from_values(&[int(h.key.into()), int(h.value.into()), int(h.size)]))
}

fn read_list_begin(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
    let rules = thrift().contract.rules();
    let h = compact::read_list_header(&mut Wire::new(ruby, &mut input(rb_self)), rules)?;
    Ok(ruby.ary_new_from_values(&[int(h.element.into()), int(h.size)]))
}

fn read_bool(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    let pending = BOOL_VALUE.get(this);
    if !rb::is_nil(pending) {
        BOOL_VALUE.set(this, rb::QNIL)?;
        // SAFETY: the ivar's former value, held on this stack.
        return Ok(unsafe { rb::value(pending) });
    }
    let b = input(rb_self).read_byte(ruby)?;
    Ok(ruby.into_value(b == ctype::BOOLEAN_TRUE as i8))
}

fn read_byte(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let b = input(rb_self).read_byte(ruby)?;
    Ok(int(b.into()))
}

fn read_i16(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = read_i16_from(ruby, &mut input(rb_self))?;
    Ok(int(n.into()))
}

fn read_i32(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = compact::read_i32(
        &mut Wire::new(ruby, &mut input(rb_self)),
        thrift().contract.rules(),
    )?;
    Ok(int(n.into()))
}

fn read_i64(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let n = compact::read_i64(&mut Wire::new(ruby, &mut input(rb_self)))?;
    Ok(int(n))
}

fn read_double(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let f = compact::decode_double(input(rb_self).read_array(ruby)?);
    Ok(rb::float_value(f))
}

fn read_binary(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let mut input = input(rb_self);
    let len = read_size(ruby, &mut input)?;
    let s = input.read_all(ruby, len)?;
    // SAFETY: a String just read, on this stack.
    Ok(unsafe { rb::value(s) })
}

fn read_string(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let mut input = input(rb_self);
    let len = read_size(ruby, &mut input)?;
    let s = input.read_utf8(ruby, len)?;
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
    // SAFETY: CompactProtocol is pinned at load time.
    let class = RClass::from_value(unsafe { rb::value(t.compact_protocol) })
        .expect("CompactProtocol is a class");
    TRANS.configure(t.compact_protocol, IVAR_TRANS.get());
    LAST_FIELD.configure(t.compact_protocol, IVAR_LAST_FIELD.get());
    BOOL_VALUE.configure(t.compact_protocol, IVAR_BOOL_VALUE.get());
    BOOLEAN_FIELD.configure(t.compact_protocol, IVAR_BOOLEAN_FIELD.get());

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
    def!("write_struct_begin", magnus::method!(write_struct_begin, 1))?;
    def!("write_struct_end", magnus::method!(write_struct_end, 0))?;
    def!("write_field_begin", magnus::method!(write_field_begin, 3))?;
    def!("write_field_stop", magnus::method!(write_field_stop, 0))?;
    def!("write_map_begin", magnus::method!(write_map_begin, 3))?;
    def!("write_list_begin", magnus::method!(write_list_begin, 2))?;
    def!("write_set_begin", magnus::method!(write_list_begin, 2))?;
    def!("write_bool", magnus::method!(write_bool, 1))?;
    def!("write_byte", magnus::method!(write_byte, 1))?;
    def!("write_i16", magnus::method!(write_i16, 1))?;
    def!("write_i32", magnus::method!(write_i32, 1))?;
    def!("write_i64", magnus::method!(write_i64, 1))?;
    def!("write_double", magnus::method!(write_double, 1))?;
    def!("write_string", magnus::method!(write_string, 1))?;
    def!("write_binary", magnus::method!(write_binary, 1))?;
    def!("write_uuid", magnus::method!(write_uuid, 1))?;
    for name in [
        "write_message_end",
        "write_field_end",
        "write_map_end",
        "write_list_end",
        "write_set_end",
    ] {
        def!(name, magnus::method!(nothing, 0))?;
    }

    def!("read_message_begin", magnus::method!(read_message_begin, 0))?;
    def!("read_struct_begin", magnus::method!(read_struct_begin, 0))?;
    def!("read_struct_end", magnus::method!(write_struct_end, 0))?;
    def!("read_field_begin", magnus::method!(read_field_begin, 0))?;
    def!("read_map_begin", magnus::method!(read_map_begin, 0))?;
    def!("read_list_begin", magnus::method!(read_list_begin, 0))?;
    def!("read_set_begin", magnus::method!(read_list_begin, 0))?;
    def!("read_bool", magnus::method!(read_bool, 0))?;
    def!("read_byte", magnus::method!(read_byte, 0))?;
    def!("read_i16", magnus::method!(read_i16, 0))?;
    def!("read_i32", magnus::method!(read_i32, 0))?;
    def!("read_i64", magnus::method!(read_i64, 0))?;
    def!("read_double", magnus::method!(read_double, 0))?;
    def!("read_string", magnus::method!(read_string, 0))?;
    def!("read_binary", magnus::method!(read_binary, 0))?;
    def!("read_uuid", magnus::method!(read_uuid, 0))?;
    for name in [
        "read_message_end",
        "read_field_end",
        "read_map_end",
        "read_list_end",
        "read_set_end",
    ] {
        def!(name, magnus::method!(nothing, 0))?;
    }
    Ok(())
}
