//! `Thrift::Struct#read/#write` and `Thrift::Union#read/#write`, arity `(prot, depth = DEFAULT_RECURSION_DEPTH)`.
//!
//! One algorithm (the C accelerator's, contract section 5) over two kinds of protocol access:
//! - the fast path, when the protocol is exactly `BinaryProtocolAccelerated` over a plain MemoryBufferTransport:
//!   the whole tree is decoded from, and encoded into, the buffer in Rust, with no method call per field and no
//!   field-header Arrays;
//! - the dispatch path otherwise: every protocol method is called as the C accelerator calls it, so mocks and other
//!   protocols see the same call sequence.
//!
//! Whenever Ruby code runs in the middle (`validate`, a class's own `initialize`, `skip`, `Set.new`, `Hash#hash` of
//! a struct key), the fast path first hands the transport its state and picks it up again afterwards, so that Ruby
//! code sees exactly what the C accelerator would have left.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue, FromRawId, FromRawValue};
use magnus::value::Id;
use magnus::{Error, RModule, Ruby, TryConvert, Value};
use rb_sys::{ID, VALUE};
use thrift_native_core::compact::{self as compact_codec};
use thrift_native_core::{binary, ttype, uuid, CoreError};

use crate::field_plan::{plan_for, ClassPlan, FieldPlan, TypeInfo, TypePlan};
use crate::memory_buffer::{self, MemoryBuffer};
use crate::thrift::thrift;
use crate::transport::Wire;
use crate::{binary_protocol, bytes, compact_protocol, errors, rb};

/// Method names called on the dispatch path (and a few on objects).
struct Methods {
    read_struct_begin: ID,
    read_struct_end: ID,
    read_field_begin: ID,
    read_field_end: ID,
    read_map_begin: ID,
    read_map_end: ID,
    read_list_begin: ID,
    read_list_end: ID,
    read_set_begin: ID,
    read_set_end: ID,
    read_bool: ID,
    read_byte: ID,
    read_i16: ID,
    read_i32: ID,
    read_i64: ID,
    read_double: ID,
    read_string: ID,
    read_binary: ID,
    read_uuid: ID,
    skip: ID,
    validate_container_size: ID,
    write_struct_begin: ID,
    write_struct_end: ID,
    write_field_begin: ID,
    write_field_end: ID,
    write_field_stop: ID,
    write_map_begin: ID,
    write_map_end: ID,
    write_list_begin: ID,
    write_list_end: ID,
    write_set_begin: ID,
    write_set_end: ID,
    write_bool: ID,
    write_byte: ID,
    write_i16: ID,
    write_i32: ID,
    write_i64: ID,
    write_double: ID,
    write_string: ID,
    write_binary: ID,
    write_uuid: ID,
    validate: ID,
    new: ID,
    add: ID,
    entries: ID,
    keys: ID,
    dup: ID,
    name_to_id: ID,
    to_s: ID,
    setfield: ID,
    value: ID,
    set_hash: ID,
}

static METHODS: OnceLock<Methods> = OnceLock::new();

fn m() -> &'static Methods {
    METHODS.get().expect("initialised with the extension")
}

/// False once Ruby code redefines one of BinaryProtocolAccelerated's (or CompactProtocol's) methods: the struct
/// codec then dispatches to that protocol's methods.
static BINARY_METHODS_ARE_NATIVE: AtomicBool = AtomicBool::new(true);
static COMPACT_METHODS_ARE_NATIVE: AtomicBool = AtomicBool::new(true);

pub fn binary_method_changed() {
    BINARY_METHODS_ARE_NATIVE.store(false, Ordering::Relaxed);
}

pub fn compact_method_changed() {
    COMPACT_METHODS_ARE_NATIVE.store(false, Ordering::Relaxed);
}

fn value(v: VALUE) -> Value {
    // SAFETY: every VALUE handled here is live: on the stack, or held by a plan or a constant.
    unsafe { Value::from_raw(v) }
}

fn id(raw: ID) -> Id {
    // SAFETY: the IDs were interned at load time.
    unsafe { Id::from_raw(raw) }
}

fn call(recv: VALUE, method: ID, args: &[Value]) -> Result<VALUE, Error> {
    value(recv)
        .funcall::<_, _, Value>(id(method), args)
        .map(|v| v.as_raw())
}

fn int(n: i64) -> Value {
    value(rb::integer(n))
}

/// FIX2INT-like: the Integer's value, or TypeError.
fn int_of(v: VALUE) -> Result<i64, Error> {
    match rb::fixnum_value(v) {
        Some(n) => Ok(n),
        None => i64::try_convert(value(v)),
    }
}

fn ary_entry(ary: VALUE, i: i64) -> Result<VALUE, Error> {
    if rb::builtin_type(ary) != Some(rb_sys::ruby_value_type::RUBY_T_ARRAY) {
        return Err(Error::new(
            Ruby::get().expect("Ruby thread").exception_type_error(),
            "protocol header is not an Array",
        ));
    }
    // SAFETY: `ary` is an Array; rb_ary_entry bounds-checks and returns nil past the end.
    Ok(unsafe { rb_sys::rb_ary_entry(ary, i as _) })
}

fn depth_limit() -> Error {
    errors::protocol(
        thrift().codes.depth_limit,
        "Maximum recursion depth exceeded",
    )
}

/// `container_size(size)`: a Fixnum in 0..=INT32_MAX, else the contract's errors; other objects go through
/// `prot.validate_container_size` (master only) and NUM2INT.
fn container_size(protocol: VALUE, size: VALUE) -> Result<usize, Error> {
    if let Some(n) = rb::fixnum_value(size) {
        if n < 0 {
            return Err(errors::negative_size());
        }
        if n > i64::from(i32::MAX) {
            return Err(errors::protocol(
                thrift().codes.size_limit,
                "Container size limit exceeded",
            ));
        }
        return Ok(n as usize);
    }
    call(protocol, m().validate_container_size, &[value(size)])?;
    let n = i32::try_convert(value(size))?;
    usize::try_from(n).map_err(|_| errors::negative_size())
}

// ------------------------------------------------------------------------------------------------------------------
// Reading
// ------------------------------------------------------------------------------------------------------------------

enum Source {
    /// BinaryProtocolAccelerated over a plain MemoryBufferTransport.
    Binary {
        trans: VALUE,
        buffer: MemoryBuffer,
    },
    /// CompactProtocol over a plain MemoryBufferTransport. The field-id stack lives in Rust (`Reader::last_field`,
    /// saved and restored per struct) instead of `@last_field`: Ruby code run in between (`skip`, `validate`) only
    /// pushes and pops its own entries there. `@bool_value` stays the ivar, as the protocol's `read_bool` needs it.
    Compact {
        trans: VALUE,
        buffer: MemoryBuffer,
    },
    Dispatch,
}

struct Reader {
    protocol: VALUE,
    source: Source,
    /// The compact protocol's last field id in the struct being read.
    last_field: i64,
}

impl Reader {
    fn new(protocol: VALUE) -> Reader {
        let source = if let Some(trans) = fast_binary_transport(protocol) {
            MemoryBuffer::plain(trans).map(|buffer| Source::Binary { trans, buffer })
        } else if let Some(trans) = fast_compact_transport(protocol) {
            MemoryBuffer::plain(trans).map(|buffer| Source::Compact { trans, buffer })
        } else {
            None
        };
        Reader {
            protocol,
            source: source.unwrap_or(Source::Dispatch),
            last_field: 0,
        }
    }

    fn is_fast(&self) -> bool {
        !matches!(self.source, Source::Dispatch)
    }

    /// After Ruby code ran: pick the transport's state up again (the buffer may have moved or been replaced).
    fn resync(&mut self) {
        self.source = match self.source {
            Source::Binary { trans, .. } => {
                MemoryBuffer::plain(trans).map(|buffer| Source::Binary { trans, buffer })
            }
            Source::Compact { trans, .. } => {
                MemoryBuffer::plain(trans).map(|buffer| Source::Compact { trans, buffer })
            }
            Source::Dispatch => return,
        }
        .unwrap_or(Source::Dispatch);
    }

    /// Calls a protocol method (dispatch path, or a fallback such as `skip` on the fast path).
    fn call(&mut self, method: ID, args: &[Value]) -> Result<VALUE, Error> {
        let result = call(self.protocol, method, args);
        self.resync();
        result
    }

    /// Starts a struct; returns what `struct_end` puts back (the enclosing struct's last field id).
    fn struct_begin(&mut self) -> Result<i64, Error> {
        let saved = std::mem::replace(&mut self.last_field, 0);
        match self.source {
            Source::Binary { .. } | Source::Compact { .. } => Ok(saved),
            Source::Dispatch => self.call(m().read_struct_begin, &[]).map(|_| saved),
        }
    }

    fn struct_end(&mut self, saved: i64) -> Result<(), Error> {
        self.last_field = saved;
        self.end(m().read_struct_end)
    }

    fn end(&mut self, method: ID) -> Result<(), Error> {
        match self.source {
            Source::Binary { .. } | Source::Compact { .. } => Ok(()),
            Source::Dispatch => self.call(method, &[]).map(drop),
        }
    }

    /// `(type, id)`; the id is None when the protocol returned something that is not an Integer.
    fn field_begin(&mut self, ruby: &Ruby) -> Result<(i64, Option<i64>), Error> {
        match &mut self.source {
            Source::Binary { buffer, .. } => {
                let f = binary::read_field_header(&mut Wire::new(ruby, buffer))?;
                Ok((f.ttype.into(), Some(f.id)))
            }
            Source::Compact { buffer, .. } => {
                let f = compact_codec::read_field_header(
                    &mut Wire::new(ruby, buffer),
                    &mut self.last_field,
                )?;
                if let Some(b) = f.bool_value {
                    compact_protocol::set_ivar(
                        self.protocol,
                        &compact_protocol::BOOL_VALUE,
                        thrift_ids().bool_value,
                        if b { rb::QTRUE } else { rb::QFALSE },
                    )?;
                }
                Ok((f.header.ttype.into(), Some(f.header.id)))
            }
            Source::Dispatch => {
                let header = self.call(m().read_field_begin, &[])?;
                let t = int_of(ary_entry(header, 1)?)?;
                let fid = rb::fixnum_value(ary_entry(header, 2)?);
                Ok((t, fid))
            }
        }
    }

    fn map_begin(&mut self, ruby: &Ruby) -> Result<(i64, i64, usize), Error> {
        let h = match &mut self.source {
            Source::Binary { buffer, .. } => binary::read_map_header(&mut Wire::new(ruby, buffer))?,
            Source::Compact { buffer, .. } => {
                compact_codec::read_map_header(&mut Wire::new(ruby, buffer))?
            }
            Source::Dispatch => {
                let header = self.call(m().read_map_begin, &[])?;
                let k = int_of(ary_entry(header, 0)?)?;
                let v = int_of(ary_entry(header, 1)?)?;
                return Ok((k, v, container_size(self.protocol, ary_entry(header, 2)?)?));
            }
        };
        Ok((h.key.into(), h.value.into(), h.size))
    }

    /// A list or set header: `(element type, size)`.
    fn list_begin(&mut self, ruby: &Ruby, method: ID) -> Result<(i64, usize), Error> {
        let h = match &mut self.source {
            Source::Binary { buffer, .. } => {
                binary::read_list_header(&mut Wire::new(ruby, buffer))?
            }
            Source::Compact { buffer, .. } => {
                compact_codec::read_list_header(&mut Wire::new(ruby, buffer))?
            }
            Source::Dispatch => {
                let header = self.call(method, &[])?;
                let e = int_of(ary_entry(header, 0)?)?;
                return Ok((e, container_size(self.protocol, ary_entry(header, 1)?)?));
            }
        };
        Ok((h.element.into(), h.size))
    }

    fn skip(&mut self, t: i64) -> Result<(), Error> {
        // Skipping is rare (unknown or mismatched fields); both paths use the protocol's own `skip`.
        self.call(m().skip, &[int(t)]).map(drop)
    }

    fn scalar(&mut self, ruby: &Ruby, plan: &TypePlan) -> Result<VALUE, Error> {
        if let Source::Binary { buffer, .. } = &mut self.source {
            return Ok(match plan {
                TypePlan::Bool => {
                    if buffer.read_byte(ruby)? != 0 {
                        rb::QTRUE
                    } else {
                        rb::QFALSE
                    }
                }
                TypePlan::Byte => rb::integer((buffer.read_byte(ruby)? as i8).into()),
                TypePlan::I16 => rb::integer(binary::decode_i16(buffer.read_array(ruby)?).into()),
                TypePlan::I32 => rb::integer(binary::decode_i32(buffer.read_array(ruby)?).into()),
                TypePlan::I64 => rb::integer(binary::decode_i64(buffer.read_array(ruby)?)),
                TypePlan::Double => rb::float(binary::decode_double(buffer.read_array(ruby)?)),
                TypePlan::String => {
                    let n = binary::read_size(&mut Wire::new(ruby, buffer))?;
                    buffer.read_with(ruby, n, rb::utf8_string)?
                }
                TypePlan::Binary => {
                    let n = binary::read_size(&mut Wire::new(ruby, buffer))?;
                    buffer.read_all(ruby, n)?
                }
                TypePlan::Uuid => buffer.read_with(ruby, 16, |b| {
                    let b: &[u8; 16] = b.try_into().expect("exactly 16 bytes");
                    rb::binary_string(&uuid::format(b))
                })?,
                _ => unreachable!("scalar() is only called for scalar plans"),
            });
        }
        if let Source::Compact { buffer, .. } = &mut self.source {
            return Ok(match plan {
                TypePlan::Bool => {
                    // A bool field's value came with its header (@bool_value); a container element is a byte.
                    let pending = compact_protocol::BOOL_VALUE.get(self.protocol);
                    if !rb::is_nil(pending) {
                        compact_protocol::set_ivar(
                            self.protocol,
                            &compact_protocol::BOOL_VALUE,
                            thrift_ids().bool_value,
                            rb::QNIL,
                        )?;
                        pending
                    } else if buffer.read_byte(ruby)? == compact_codec::ctype::BOOLEAN_TRUE {
                        rb::QTRUE
                    } else {
                        rb::QFALSE
                    }
                }
                TypePlan::Byte => rb::integer((buffer.read_byte(ruby)? as i8).into()),
                TypePlan::I16 => {
                    rb::integer(compact_codec::read_i16(&mut Wire::new(ruby, buffer))?.into())
                }
                TypePlan::I32 => {
                    rb::integer(compact_codec::read_i32(&mut Wire::new(ruby, buffer))?.into())
                }
                TypePlan::I64 => {
                    rb::integer(compact_codec::read_i64(&mut Wire::new(ruby, buffer))?)
                }
                TypePlan::Double => {
                    rb::float(compact_codec::decode_double(buffer.read_array(ruby)?))
                }
                TypePlan::String => {
                    let n = compact_codec::read_size(
                        &mut Wire::new(ruby, buffer),
                        CoreError::BinarySizeLimit,
                    )?;
                    buffer.read_with(ruby, n, rb::utf8_string)?
                }
                TypePlan::Binary => {
                    let n = compact_codec::read_size(
                        &mut Wire::new(ruby, buffer),
                        CoreError::BinarySizeLimit,
                    )?;
                    buffer.read_all(ruby, n)?
                }
                TypePlan::Uuid => buffer.read_with(ruby, 16, |b| {
                    let b: &[u8; 16] = b.try_into().expect("exactly 16 bytes");
                    rb::binary_string(&uuid::format(b))
                })?,
                _ => unreachable!("scalar() is only called for scalar plans"),
            });
        }
        let method = match plan {
            TypePlan::Bool => m().read_bool,
            TypePlan::Byte => m().read_byte,
            TypePlan::I16 => m().read_i16,
            TypePlan::I32 => m().read_i32,
            TypePlan::I64 => m().read_i64,
            TypePlan::Double => m().read_double,
            TypePlan::String => m().read_string,
            TypePlan::Binary => m().read_binary,
            TypePlan::Uuid => m().read_uuid,
            _ => unreachable!("scalar() is only called for scalar plans"),
        };
        self.call(method, &[])
    }
}

/// The transport, when `protocol` is exactly a BinaryProtocolAccelerated whose methods are all ours.
fn fast_binary_transport(protocol: VALUE) -> Option<VALUE> {
    if !BINARY_METHODS_ARE_NATIVE.load(Ordering::Relaxed)
        || !rb::is_exact_instance(protocol, binary_protocol::class())
    {
        return None;
    }
    Some(binary_protocol::TRANS.get(protocol))
}

/// The transport, when `protocol` is exactly a CompactProtocol whose methods are all ours.
fn fast_compact_transport(protocol: VALUE) -> Option<VALUE> {
    if !COMPACT_METHODS_ARE_NATIVE.load(Ordering::Relaxed)
        || !rb::is_exact_instance(protocol, thrift().compact_protocol)
    {
        return None;
    }
    Some(compact_protocol::TRANS.get(protocol))
}

fn thrift_ids() -> &'static crate::thrift::Ids {
    crate::thrift::ids()
}

/// `default.dup rescue default` (StandardError only), without a call for values whose dup is themselves.
fn dup_default(default: VALUE) -> Result<VALUE, Error> {
    if rb::is_special_const(default)
        || rb::builtin_type(default) == Some(rb_sys::ruby_value_type::RUBY_T_FLOAT)
    {
        return Ok(default);
    }
    match call(default, m().dup, &[]) {
        Ok(v) => Ok(v),
        Err(e) if e.is_kind_of(Ruby::get().expect("Ruby thread").exception_standard_error()) => {
            Ok(default)
        }
        Err(e) => Err(e),
    }
}

/// Fields whose default must still be applied at the end of a fast-path read (they were not on the wire).
/// Up to 64 fields are tracked; a larger struct gets its defaults up front, as on the dispatch path.
struct PendingDefaults {
    mask: u64,
}

impl PendingDefaults {
    const NONE: PendingDefaults = PendingDefaults { mask: 0 };

    fn clear(&mut self, index: usize) {
        if index < 64 {
            self.mask &= !(1u64 << index);
        }
    }

    /// Applies the defaults still pending: `@field = default.dup`.
    fn apply(&mut self, obj: VALUE, plan: &ClassPlan) -> Result<(), Error> {
        while self.mask != 0 {
            let i = self.mask.trailing_zeros() as usize;
            self.mask &= !(1u64 << i);
            let f = &plan.fields[i];
            rb::ivar_set(obj, f.ivar, dup_default(f.default)?)?;
        }
        Ok(())
    }
}

/// Gives `obj` its field defaults, as `Thrift::Struct#initialize` (fresh object) or the C accelerator's reset before
/// a read (object with ivars). On the fast path a field with a default gets a nil placeholder now, so that ivars
/// keep Ruby's order, and its `default.dup` only if the wire does not carry it: no copy made to be overwritten.
fn apply_defaults(
    obj: VALUE,
    plan: &ClassPlan,
    fresh: bool,
    defer: bool,
) -> Result<PendingDefaults, Error> {
    let defer = defer && plan.fields.len() <= 64;
    let mut pending = PendingDefaults::NONE;
    for (i, f) in plan.fields.iter().enumerate() {
        if rb::is_nil(f.default) {
            // Reset: a nil default clears the field only if it is set (initialize leaves it alone).
            if !fresh && !rb::is_nil(rb::ivar_get(obj, f.ivar)) {
                rb::ivar_set(obj, f.ivar, rb::QNIL)?;
            }
        } else if defer {
            rb::ivar_set(obj, f.ivar, rb::QNIL)?;
            pending.mask |= 1u64 << i;
        } else {
            rb::ivar_set(obj, f.ivar, dup_default(f.default)?)?;
        }
    }
    Ok(pending)
}

fn ivar_count(obj: VALUE) -> usize {
    // SAFETY: rb_ivar_count only reads the object's ivar table.
    unsafe { rb_sys::rb_ivar_count(obj) as usize }
}

fn check_frozen(obj: VALUE) -> Result<(), Error> {
    if rb::is_frozen(obj) {
        // SAFETY: protected; rb_check_frozen raises FrozenError with Ruby's own message.
        protect(|| unsafe {
            rb_sys::rb_check_frozen(obj);
            rb::QNIL
        })?;
    }
    Ok(())
}

fn read_struct(
    ruby: &Ruby,
    r: &mut Reader,
    obj: VALUE,
    plan: &ClassPlan,
    depth: i64,
    fresh: bool,
) -> Result<(), Error> {
    let mut pending = PendingDefaults::NONE;
    if fresh {
        // A nested instance allocated here: Thrift::Struct#initialize would have set the defaults.
        if plan.has_defaults {
            pending = apply_defaults(obj, plan, true, r.is_fast())?;
        }
    } else if !plan.fields.is_empty() && ivar_count(obj) > 0 {
        check_frozen(obj)?;
        pending = apply_defaults(obj, plan, false, r.is_fast())?;
    }
    let result = read_struct_fields(ruby, r, obj, plan, depth, &mut pending);
    // Defaults are in place before validate runs, and after a failure too (as the C accelerator leaves them).
    let applied = pending.apply(obj, plan);
    result?;
    applied?;
    call(obj, m().validate, &[])?;
    r.resync();
    Ok(())
}

fn read_struct_fields(
    ruby: &Ruby,
    r: &mut Reader,
    obj: VALUE,
    plan: &ClassPlan,
    depth: i64,
    pending: &mut PendingDefaults,
) -> Result<(), Error> {
    let saved = r.struct_begin()?;
    loop {
        let (t, fid) = r.field_begin(ruby)?;
        if t == i64::from(ttype::STOP) {
            break;
        }
        match fid
            .and_then(|fid| plan.field(fid))
            .filter(|f| f.info.code == t)
        {
            Some(f) => {
                let v = read_any(ruby, r, &f.info, depth)?;
                rb::ivar_set(obj, f.ivar, v)?;
                pending.clear(field_index(plan, f));
            }
            None => r.skip(t)?,
        }
        r.end(m().read_field_end)?;
    }
    r.struct_end(saved)
}

fn field_index(plan: &ClassPlan, f: &FieldPlan) -> usize {
    // `f` is an element of `plan.fields`.
    (f as *const FieldPlan as usize - plan.fields.as_ptr() as usize)
        / std::mem::size_of::<FieldPlan>()
}

fn read_union(
    ruby: &Ruby,
    r: &mut Reader,
    obj: VALUE,
    plan: &ClassPlan,
    depth: i64,
) -> Result<(), Error> {
    check_frozen(obj)?;
    let methods = m();
    for ivar in [methods.setfield, methods.value] {
        if !rb::is_nil(rb::ivar_get(obj, ivar)) {
            rb::ivar_set(obj, ivar, rb::QNIL)?;
        }
    }
    let saved = r.struct_begin()?;
    let (t, fid) = r.field_begin(ruby)?;
    match fid
        .and_then(|fid| plan.field(fid))
        .filter(|f| f.info.code == t)
    {
        Some(f) => {
            let v = read_any(ruby, r, &f.info, depth)?;
            rb::ivar_set(obj, methods.setfield, f.symbol)?;
            rb::ivar_set(obj, methods.value, v)?;
        }
        // An empty union reaches skip(STOP), which raises INVALID_DATA in BaseProtocol#skip.
        None => r.skip(t)?,
    }
    r.end(methods.read_field_end)?;
    let (t, _) = r.field_begin(ruby)?;
    if t != i64::from(ttype::STOP) {
        return Err(errors::protocol(
            thrift().codes.invalid_data,
            "too many fields in union!",
        ));
    }
    r.struct_end(saved)?;
    call(obj, methods.validate, &[])?;
    r.resync();
    Ok(())
}

/// A new instance of a nested struct or union class, given what its `initialize` would set.
fn instantiate(r: &mut Reader, class: VALUE, plan: &ClassPlan) -> Result<(VALUE, bool), Error> {
    if plan.plain_initialize {
        // SAFETY: protected; rb_obj_alloc runs the class's allocator.
        let obj = protect(|| unsafe { rb_sys::rb_obj_alloc(class) })?;
        if plan.is_union {
            // Thrift::Union#initialize with no arguments.
            rb::ivar_set(obj, m().setfield, rb::QNIL)?;
            rb::ivar_set(obj, m().value, rb::QNIL)?;
        }
        return Ok((obj, true));
    }
    let obj = r.call_on(class, m().new)?;
    Ok((obj, false))
}

impl Reader {
    fn call_on(&mut self, recv: VALUE, method: ID) -> Result<VALUE, Error> {
        let result = call(recv, method, &[]);
        self.resync();
        result
    }
}

fn read_any(ruby: &Ruby, r: &mut Reader, info: &TypeInfo, depth: i64) -> Result<VALUE, Error> {
    match &info.plan {
        TypePlan::Bool
        | TypePlan::Byte
        | TypePlan::I16
        | TypePlan::I32
        | TypePlan::I64
        | TypePlan::Double
        | TypePlan::String
        | TypePlan::Binary
        | TypePlan::Uuid => r.scalar(ruby, &info.plan),
        TypePlan::Struct { class } => {
            let plan = plan_for(ruby, *class)?;
            let (obj, fresh) = instantiate(r, *class, plan)?;
            let depth = depth - 1;
            if depth <= 0 {
                return Err(depth_limit());
            }
            if plan.is_union {
                read_union(ruby, r, obj, plan, depth)?;
            } else {
                read_struct(ruby, r, obj, plan, depth, fresh)?;
            }
            Ok(obj)
        }
        TypePlan::List { element } => {
            let (et, n) = r.list_begin(ruby, m().read_list_begin)?;
            let result = match element.as_deref().filter(|e| e.code == et) {
                Some(e) => {
                    // Capacity from the declared size, but never more than 1024: sizes come from the input.
                    // SAFETY: rb_ary_new_capa only allocates.
                    let ary = unsafe { rb_sys::rb_ary_new_capa(n.min(1024) as _) };
                    for _ in 0..n {
                        let v = read_any(ruby, r, e, depth)?;
                        // SAFETY: `ary` is a new, unfrozen Array that no Ruby code has seen.
                        unsafe { rb_sys::rb_ary_push(ary, v) };
                    }
                    ary
                }
                None => {
                    for _ in 0..n {
                        r.skip(et)?;
                    }
                    rb::QNIL
                }
            };
            r.end(m().read_list_end)?;
            Ok(result)
        }
        TypePlan::Set { element } => {
            let (et, n) = r.list_begin(ruby, m().read_set_begin)?;
            let result = match element.as_deref().filter(|e| e.code == et) {
                Some(e) => {
                    let set = r.call_on(thrift().set_class, m().new)?;
                    for _ in 0..n {
                        let made_here = r.is_fast();
                        let v = read_any(ruby, r, e, depth)?;
                        set_add(r, set, v, made_here)?;
                    }
                    set
                }
                None => {
                    for _ in 0..n {
                        r.skip(et)?;
                    }
                    rb::QNIL
                }
            };
            r.end(m().read_set_end)?;
            Ok(result)
        }
        TypePlan::Map { key, value: val } => {
            let (kt, vt, n) = r.map_begin(ruby)?;
            let result = match (key.as_deref(), val.as_deref()) {
                (Some(k), Some(v)) if n == 0 || (k.code == kt && v.code == vt) => {
                    // SAFETY: rb_hash_new only allocates.
                    let hash = unsafe { rb_sys::rb_hash_new() };
                    for _ in 0..n {
                        let made_here = r.is_fast();
                        let key = read_any(ruby, r, k, depth)?;
                        let value = read_any(ruby, r, v, depth)?;
                        hash_store(r, hash, key, value, made_here)?;
                    }
                    hash
                }
                _ => {
                    for _ in 0..n {
                        r.skip(kt)?;
                        r.skip(vt)?;
                    }
                    rb::QNIL
                }
            };
            r.end(m().read_map_end)?;
            Ok(result)
        }
        TypePlan::Unknown => Err(Error::new(
            ruby.exception_not_imp_error(),
            format!("read_anything not implemented for type {}!", info.code),
        )),
    }
}

/// `hash[key] = value`. A String key that the fast path made (`made_here`) is frozen first, so that Hash keeps it
/// instead of making a frozen copy; a String from a protocol method is left as it is, as Hash#[]= leaves it.
fn hash_store(
    r: &mut Reader,
    hash: VALUE,
    key: VALUE,
    val: VALUE,
    made_here: bool,
) -> Result<(), Error> {
    let simple = if rb::is_string(key) {
        if made_here {
            // SAFETY: `key` is a String this codec just made; nothing else refers to it yet.
            unsafe { rb_sys::rb_obj_freeze(key) };
        }
        true
    } else {
        rb::is_special_const(key)
            || rb::builtin_type(key) == Some(rb_sys::ruby_value_type::RUBY_T_FLOAT)
    };
    // SAFETY: protected; hashing a struct key calls its Ruby #hash and #eql?.
    protect(|| unsafe { rb_sys::rb_hash_aset(hash, key, val) })?;
    if !simple {
        r.resync();
    }
    Ok(())
}

/// Adds to a Set: into its @hash as Set#add does (Ruby 3.1's Set), else through `add`.
fn set_add(r: &mut Reader, set: VALUE, item: VALUE, made_here: bool) -> Result<(), Error> {
    let hash = rb::ivar_get(set, m().set_hash);
    if rb::builtin_type(hash) == Some(rb_sys::ruby_value_type::RUBY_T_HASH) {
        return hash_store(r, hash, item, rb::QTRUE, made_here);
    }
    r.call_on_with(set, m().add, &[value(item)]).map(drop)
}

impl Reader {
    fn call_on_with(&mut self, recv: VALUE, method: ID, args: &[Value]) -> Result<VALUE, Error> {
        let result = call(recv, method, args);
        self.resync();
        result
    }
}

// ------------------------------------------------------------------------------------------------------------------
// Writing
// ------------------------------------------------------------------------------------------------------------------

thread_local! {
    /// The fast path's output, reused between calls (a nested call made from Ruby code gets a fresh one).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Binary,
    Compact,
}

enum Sink {
    /// BinaryProtocolAccelerated or CompactProtocol over a plain MemoryBufferTransport: bytes gather in `out` and
    /// are appended to `buf` before any Ruby code runs and at the end.
    Fast {
        encoding: Encoding,
        trans: VALUE,
        buf: VALUE,
        out: Vec<u8>,
    },
    Dispatch,
}

struct Writer {
    protocol: VALUE,
    sink: Sink,
    /// The compact protocol's last field id in the struct being written (instead of `@last_field`).
    last_field: i64,
}

impl Writer {
    fn new(protocol: VALUE) -> Writer {
        let fast = if let Some(trans) = fast_binary_transport(protocol) {
            Some((Encoding::Binary, trans))
        } else {
            fast_compact_transport(protocol).map(|trans| (Encoding::Compact, trans))
        };
        let sink = fast
            .and_then(|(encoding, trans)| {
                memory_buffer::plain_write_buffer(trans).map(|buf| (encoding, trans, buf))
            })
            .map(|(encoding, trans, buf)| {
                let mut out = SCRATCH.with(|s| s.take());
                out.clear();
                Sink::Fast {
                    encoding,
                    trans,
                    buf,
                    out,
                }
            })
            .unwrap_or(Sink::Dispatch);
        Writer {
            protocol,
            sink,
            last_field: 0,
        }
    }

    /// Appends what has gathered to the transport's buffer.
    fn flush(&mut self) -> Result<(), Error> {
        if let Sink::Fast { buf, out, .. } = &mut self.sink {
            if !out.is_empty() {
                let result = rb::str_cat(*buf, out);
                out.clear();
                result?;
            }
        }
        Ok(())
    }

    /// Runs Ruby code with everything written so far in the transport, then picks the buffer up again.
    fn ruby<T>(&mut self, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        self.flush()?;
        let result = f();
        if let Sink::Fast { trans, buf, .. } = &mut self.sink {
            match memory_buffer::plain_write_buffer(*trans) {
                Some(b) => *buf = b,
                None => self.finish_fast(),
            }
        }
        result
    }

    fn finish_fast(&mut self) {
        if let Sink::Fast { out, .. } = std::mem::replace(&mut self.sink, Sink::Dispatch) {
            SCRATCH.with(|s| s.set(out));
        }
    }

    fn finish(&mut self) -> Result<(), Error> {
        let result = self.flush();
        self.finish_fast();
        result
    }

    /// The bytes gathered and how to encode them, on the fast path.
    fn fast(&mut self) -> Option<(Encoding, &mut Vec<u8>)> {
        match &mut self.sink {
            Sink::Fast { encoding, out, .. } => Some((*encoding, out)),
            Sink::Dispatch => None,
        }
    }

    fn is_compact(&self) -> bool {
        matches!(
            self.sink,
            Sink::Fast {
                encoding: Encoding::Compact,
                ..
            }
        )
    }

    fn call(&mut self, method: ID, args: &[Value]) -> Result<(), Error> {
        let protocol = self.protocol;
        self.ruby(|| call(protocol, method, args)).map(drop)
    }

    /// Starts a struct; returns what `struct_end` puts back (the enclosing struct's last field id).
    fn struct_begin(&mut self, obj: VALUE) -> Result<i64, Error> {
        let saved = std::mem::replace(&mut self.last_field, 0);
        if self.fast().is_some() {
            return Ok(saved);
        }
        // SAFETY: protected; rb_class_name may call Ruby for an anonymous class.
        let name =
            protect(|| unsafe { rb_sys::rb_class_name(rb::heap_class(obj).unwrap_or(obj)) })?;
        self.call(m().write_struct_begin, &[value(name)])
            .map(|_| saved)
    }

    fn struct_end(&mut self, saved: i64) -> Result<(), Error> {
        self.last_field = saved;
        self.end(m().write_struct_end)
    }

    fn end(&mut self, method: ID) -> Result<(), Error> {
        match self.fast() {
            Some(_) => Ok(()),
            None => self.call(method, &[]),
        }
    }

    fn field_begin(
        &mut self,
        ruby: &Ruby,
        name: VALUE,
        code: i64,
        fid: VALUE,
        id: i64,
    ) -> Result<(), Error> {
        let last = self.last_field;
        match self.fast() {
            Some((Encoding::Binary, out)) => {
                out.push(code as u8);
                out.extend_from_slice(&binary::encode_i16(id as i16));
                Ok(())
            }
            Some((Encoding::Compact, out)) => {
                let ctype =
                    compact_codec::compact_type_of(code).map_err(|e| errors::from_core(ruby, e))?;
                let (header, len) = compact_codec::field_header(ctype, id as i16, last);
                out.extend_from_slice(&header[..len]);
                self.last_field = id;
                Ok(())
            }
            None => self.call(m().write_field_begin, &[value(name), int(code), value(fid)]),
        }
    }

    /// A compact bool field: the value travels in the field header (BOOLEAN_TRUE or BOOLEAN_FALSE).
    fn compact_bool_field(&mut self, id: i64, v: VALUE) {
        let last = std::mem::replace(&mut self.last_field, id);
        if let Some((_, out)) = self.fast() {
            let ctype = if rb::truthy(v) {
                compact_codec::ctype::BOOLEAN_TRUE
            } else {
                compact_codec::ctype::BOOLEAN_FALSE
            };
            let (header, len) = compact_codec::field_header(ctype, id as i16, last);
            out.extend_from_slice(&header[..len]);
        }
    }

    fn field_stop(&mut self) -> Result<(), Error> {
        match self.fast() {
            Some((_, out)) => {
                out.push(0);
                Ok(())
            }
            None => self.call(m().write_field_stop, &[]),
        }
    }

    fn map_begin(&mut self, ruby: &Ruby, k: i64, v: i64, size: usize) -> Result<(), Error> {
        match self.fast() {
            Some((Encoding::Binary, out)) => {
                out.extend_from_slice(&[k as u8, v as u8]);
                out.extend_from_slice(&binary::encode_i32(size as i32));
                Ok(())
            }
            Some((Encoding::Compact, out)) => {
                if size == 0 {
                    out.push(0);
                    return Ok(());
                }
                // The size is written before the types are looked at, as the C accelerator does.
                out.extend_from_slice(compact_codec::Varint::new(size as u64).as_bytes());
                let kc =
                    compact_codec::compact_type_of(k).map_err(|e| errors::from_core(ruby, e))?;
                let vc =
                    compact_codec::compact_type_of(v).map_err(|e| errors::from_core(ruby, e))?;
                out.push((kc << 4) | vc);
                Ok(())
            }
            None => self.call(m().write_map_begin, &[int(k), int(v), int(size as i64)]),
        }
    }

    fn list_begin(&mut self, ruby: &Ruby, method: ID, e: i64, size: usize) -> Result<(), Error> {
        match self.fast() {
            Some((Encoding::Binary, out)) => {
                out.push(e as u8);
                out.extend_from_slice(&binary::encode_i32(size as i32));
                Ok(())
            }
            Some((Encoding::Compact, out)) => {
                let ec =
                    compact_codec::compact_type_of(e).map_err(|e| errors::from_core(ruby, e))?;
                let (header, n) = compact_codec::list_header(ec, size as u32);
                out.extend_from_slice(&header[..n]);
                Ok(())
            }
            None => self.call(method, &[int(e), int(size as i64)]),
        }
    }

    fn scalar(&mut self, plan: &TypePlan, v: VALUE) -> Result<(), Error> {
        if let Some((encoding, out)) = self.fast() {
            let encoded = match encoding {
                Encoding::Binary => encode_scalar(out, plan, v),
                Encoding::Compact => encode_compact_scalar(out, plan, v),
            };
            if encoded {
                return Ok(());
            }
        }
        // The dispatch path, and values the fast path leaves to the protocol's own method (nil, out of range,
        // conversions): same checks, same exceptions.
        let method = match plan {
            TypePlan::Bool => m().write_bool,
            TypePlan::Byte => m().write_byte,
            TypePlan::I16 => m().write_i16,
            TypePlan::I32 => m().write_i32,
            TypePlan::I64 => m().write_i64,
            TypePlan::Double => m().write_double,
            TypePlan::String => m().write_string,
            TypePlan::Binary => m().write_binary,
            TypePlan::Uuid => m().write_uuid,
            _ => unreachable!("scalar() is only called for scalar plans"),
        };
        self.call(method, &[value(v)])
    }
}

/// The value of an Integer that fits `min..=max`, when it is a Fixnum.
fn fixnum_in(v: VALUE, min: i64, max: i64) -> Option<i64> {
    rb::fixnum_value(v).filter(|n| (min..=max).contains(n))
}

/// A Float's or Fixnum's value as a double (what rb_Float gives for them).
fn plain_double(v: VALUE) -> Option<f64> {
    if let Some(n) = rb::fixnum_value(v) {
        return Some(n as f64);
    }
    let api = rb_sys::stable_api::get_default();
    // SAFETY: float_type_p checks the tag first; num2dbl of a Float cannot raise.
    if unsafe { rb_sys::stable_api::StableApiDefinition::float_type_p(api, v) } {
        return Some(unsafe { rb_sys::stable_api::StableApiDefinition::num2dbl(api, v) });
    }
    None
}

/// The bytes of a String the fast path may write as it is: UTF-8 for a string field, BINARY for a binary one.
fn plain_string_bytes<'a>(plan: &TypePlan, v: VALUE) -> Option<&'a [u8]> {
    let ok = match plan {
        TypePlan::String => bytes::is_utf8_string(v),
        _ => bytes::is_binary_string(v),
    };
    // SAFETY: `v` is a String; callers copy the slice before anything else happens.
    ok.then(|| unsafe { rb::str_bytes(v) })
}

fn uuid_of(v: VALUE) -> Option<[u8; 16]> {
    // SAFETY: `v` is a String; the slice is dropped before returning.
    rb::is_string(v)
        .then(|| uuid::parse(unsafe { rb::str_bytes(v) }).ok())
        .flatten()
}

/// Encodes the common cases natively (binary protocol); false leaves the value to the protocol's method.
fn encode_scalar(out: &mut Vec<u8>, plan: &TypePlan, v: VALUE) -> bool {
    match plan {
        TypePlan::Bool => out.push(u8::from(rb::truthy(v))),
        TypePlan::Byte => match fixnum_in(v, i8::MIN.into(), i8::MAX.into()) {
            Some(n) => out.push(n as u8),
            None => return false,
        },
        TypePlan::I16 => match fixnum_in(v, i16::MIN.into(), i16::MAX.into()) {
            Some(n) => out.extend_from_slice(&binary::encode_i16(n as i16)),
            None => return false,
        },
        TypePlan::I32 => match fixnum_in(v, i32::MIN.into(), i32::MAX.into()) {
            Some(n) => out.extend_from_slice(&binary::encode_i32(n as i32)),
            None => return false,
        },
        TypePlan::I64 => match rb::fixnum_value(v) {
            Some(n) => out.extend_from_slice(&binary::encode_i64(n)),
            None => return false,
        },
        TypePlan::Double => match plain_double(v) {
            Some(f) => out.extend_from_slice(&binary::encode_double(f)),
            None => return false,
        },
        TypePlan::String | TypePlan::Binary => {
            let Some(s) = plain_string_bytes(plan, v) else {
                return false;
            };
            let Ok(len) = i32::try_from(s.len()) else {
                return false;
            };
            out.extend_from_slice(&binary::encode_i32(len));
            out.extend_from_slice(s);
        }
        TypePlan::Uuid => match uuid_of(v) {
            Some(b) => out.extend_from_slice(&b),
            None => return false,
        },
        _ => return false,
    }
    true
}

/// Encodes the common cases natively (compact protocol); false leaves the value to the protocol's method.
fn encode_compact_scalar(out: &mut Vec<u8>, plan: &TypePlan, v: VALUE) -> bool {
    let varint =
        |out: &mut Vec<u8>, n: u64| out.extend_from_slice(compact_codec::Varint::new(n).as_bytes());
    match plan {
        // A bool outside a field header (a container element).
        TypePlan::Bool => out.push(if rb::truthy(v) {
            compact_codec::ctype::BOOLEAN_TRUE
        } else {
            compact_codec::ctype::BOOLEAN_FALSE
        }),
        TypePlan::Byte => match fixnum_in(v, i8::MIN.into(), i8::MAX.into()) {
            Some(n) => out.push(n as u8),
            None => return false,
        },
        TypePlan::I16 => match fixnum_in(v, i16::MIN.into(), i16::MAX.into()) {
            Some(n) => varint(out, compact_codec::zigzag32(n as i32).into()),
            None => return false,
        },
        TypePlan::I32 => match fixnum_in(v, i32::MIN.into(), i32::MAX.into()) {
            Some(n) => varint(out, compact_codec::zigzag32(n as i32).into()),
            None => return false,
        },
        TypePlan::I64 => match rb::fixnum_value(v) {
            Some(n) => varint(out, compact_codec::zigzag64(n)),
            None => return false,
        },
        TypePlan::Double => match plain_double(v) {
            Some(f) => out.extend_from_slice(&compact_codec::encode_double(f)),
            None => return false,
        },
        TypePlan::String | TypePlan::Binary => {
            let Some(s) = plain_string_bytes(plan, v) else {
                return false;
            };
            if i32::try_from(s.len()).is_err() {
                return false;
            }
            varint(out, s.len() as u64);
            out.extend_from_slice(s);
        }
        TypePlan::Uuid => match uuid_of(v) {
            Some(b) => out.extend_from_slice(&b),
            None => return false,
        },
        _ => return false,
    }
    true
}

fn is_union(obj: VALUE) -> Result<bool, Error> {
    // SAFETY: rb_obj_is_kind_of only walks the class chain.
    Ok(unsafe { rb_sys::rb_obj_is_kind_of(obj, thrift().union) } == rb::QTRUE)
}

fn write_struct(ruby: &Ruby, w: &mut Writer, obj: VALUE, depth: i64) -> Result<(), Error> {
    w.ruby(|| call(obj, m().validate, &[]))?;
    let saved = w.struct_begin(obj)?;
    let plan = plan_for(ruby, rb::heap_class(obj).unwrap_or(obj))?;
    for &i in &plan.sorted {
        let f = &plan.fields[i];
        let v = rb::ivar_get(obj, f.ivar);
        if rb::is_nil(v) {
            continue;
        }
        write_field(ruby, w, f.name, f, v, depth)?;
    }
    w.field_stop()?;
    w.struct_end(saved)
}

/// One field: header, value, end (a compact bool field is all header).
fn write_field(
    ruby: &Ruby,
    w: &mut Writer,
    name: VALUE,
    f: &FieldPlan,
    v: VALUE,
    depth: i64,
) -> Result<(), Error> {
    if f.info.code == i64::from(ttype::BOOL) && w.is_compact() {
        w.compact_bool_field(f.id, v);
    } else {
        w.field_begin(ruby, name, f.info.code, f.id_value, f.id)?;
        write_any(ruby, w, &f.info, v, depth)?;
    }
    w.end(m().write_field_end)
}

fn write_union(ruby: &Ruby, w: &mut Writer, obj: VALUE, depth: i64) -> Result<(), Error> {
    w.ruby(|| call(obj, m().validate, &[]))?;
    let saved = w.struct_begin(obj)?;
    let plan = plan_for(ruby, rb::heap_class(obj).unwrap_or(obj))?;
    let setfield = rb::ivar_get(obj, m().setfield);
    let setvalue = rb::ivar_get(obj, m().value);
    let field = match plan.fields.iter().find(|f| f.symbol == setfield) {
        Some(f) => Some(f),
        // Not one of the field Symbols: ask the object, as the C accelerator does (`name_to_id(setfield.to_s)`).
        None => {
            let name = w.ruby(|| call(setfield, m().to_s, &[]))?;
            let fid = w.ruby(|| call(obj, m().name_to_id, &[value(name)]))?;
            rb::fixnum_value(fid).and_then(|fid| plan.field(fid))
        }
    };
    let Some(f) = field else {
        return Err(errors::protocol(
            thrift().codes.invalid_data,
            "set_field is not valid for this union!",
        ));
    };
    write_field(ruby, w, setfield, f, setvalue, depth)?;
    w.field_stop()?;
    w.struct_end(saved)
}

fn check_type(v: VALUE, t: rb_sys::ruby_value_type) -> Result<(), Error> {
    if rb::builtin_type(v) == Some(t) {
        return Ok(());
    }
    // SAFETY: protected; rb_check_type raises TypeError "wrong argument type X (expected Y)".
    protect(|| unsafe {
        rb_sys::rb_check_type(v, t as _);
        rb::QNIL
    })
    .map(drop)
}

fn missing_info(ruby: &Ruby, what: &str) -> Error {
    Error::new(
        ruby.exception_arg_error(),
        format!("container field info has no {what}"),
    )
}

fn write_any(
    ruby: &Ruby,
    w: &mut Writer,
    info: &TypeInfo,
    v: VALUE,
    depth: i64,
) -> Result<(), Error> {
    use rb_sys::ruby_value_type::{RUBY_T_ARRAY, RUBY_T_HASH};
    match &info.plan {
        TypePlan::Bool
        | TypePlan::Byte
        | TypePlan::I16
        | TypePlan::I32
        | TypePlan::I64
        | TypePlan::Double
        | TypePlan::String
        | TypePlan::Binary
        | TypePlan::Uuid => w.scalar(&info.plan, v),
        TypePlan::Struct { .. } => {
            let depth = depth - 1;
            if depth <= 0 {
                return Err(depth_limit());
            }
            if is_union(v)? {
                write_union(ruby, w, v, depth)
            } else {
                write_struct(ruby, w, v, depth)
            }
        }
        TypePlan::List { element } => {
            check_type(v, RUBY_T_ARRAY)?;
            let e = element
                .as_deref()
                .ok_or_else(|| missing_info(ruby, ":element"))?;
            // SAFETY: `v` is an Array.
            let len = unsafe { rb::array_len(v) };
            w.list_begin(ruby, m().write_list_begin, e.code, len)?;
            for i in 0..len as i64 {
                // Re-read each element: Ruby code run by a nested validate may have changed the Array.
                let item = ary_entry(v, i)?;
                write_any(ruby, w, e, item, depth)?;
            }
            w.end(m().write_list_end)
        }
        TypePlan::Set { element } => {
            let e = element
                .as_deref()
                .ok_or_else(|| missing_info(ruby, ":element"))?;
            write_set(ruby, w, e, v, depth)
        }
        TypePlan::Map { key, value: val } => {
            check_type(v, RUBY_T_HASH)?;
            let (k, vi) = match (key.as_deref(), val.as_deref()) {
                (Some(k), Some(vi)) => (k, vi),
                _ => return Err(missing_info(ruby, ":key or :value")),
            };
            // SAFETY: `v` is a Hash.
            let size = unsafe { rb_sys::rb_hash_size_num(v) } as usize;
            w.map_begin(ruby, k.code, vi.code, size)?;
            if w.fast().is_some() {
                each_pair(ruby, w, v, &[k, vi], depth)?;
            } else {
                // The C accelerator's iteration: `hash.keys`, then `hash[key]` for each.
                let keys = w.ruby(|| call(v, m().keys, &[]))?;
                check_type(keys, RUBY_T_ARRAY)?;
                // SAFETY: `keys` is an Array.
                let n = unsafe { rb::array_len(keys) };
                for i in 0..n as i64 {
                    let key = ary_entry(keys, i)?;
                    // SAFETY: protected; Hash#[] may call the key's Ruby #hash.
                    let item = protect(|| unsafe { rb_sys::rb_hash_aref(v, key) })?;
                    write_any(ruby, w, k, key, depth)?;
                    write_any(ruby, w, vi, item, depth)?;
                }
            }
            w.end(m().write_map_end)
        }
        TypePlan::Unknown => Err(Error::new(
            ruby.exception_not_imp_error(),
            format!("Unknown type for binary_encoding: {}", info.code),
        )),
    }
}

fn write_set(ruby: &Ruby, w: &mut Writer, e: &TypeInfo, v: VALUE, depth: i64) -> Result<(), Error> {
    use rb_sys::ruby_value_type::{RUBY_T_ARRAY, RUBY_T_HASH};
    // SAFETY: rb_obj_is_kind_of only walks the class chain.
    let is_set = unsafe { rb_sys::rb_obj_is_kind_of(v, thrift().set_class) } == rb::QTRUE;
    if w.fast().is_some() && is_set {
        let hash = rb::ivar_get(v, m().set_hash);
        if rb::builtin_type(hash) == Some(RUBY_T_HASH) {
            // SAFETY: `hash` is a Hash.
            let size = unsafe { rb_sys::rb_hash_size_num(hash) } as usize;
            w.list_begin(ruby, m().write_set_begin, e.code, size)?;
            each_pair(ruby, w, hash, &[e], depth)?;
            return w.end(m().write_set_end);
        }
    }
    // The C accelerator's view: an Array as is, a Set's `entries`, a Hash's `keys`.
    let items = if rb::builtin_type(v) == Some(RUBY_T_ARRAY) {
        v
    } else if is_set {
        w.ruby(|| call(v, m().entries, &[]))?
    } else {
        check_type(v, RUBY_T_HASH)?;
        w.ruby(|| call(v, m().keys, &[]))?
    };
    check_type(items, RUBY_T_ARRAY)?;
    // SAFETY: `items` is an Array.
    let len = unsafe { rb::array_len(items) };
    w.list_begin(ruby, m().write_set_begin, e.code, len)?;
    for i in 0..len as i64 {
        let item = ary_entry(items, i)?;
        write_any(ruby, w, e, item, depth)?;
    }
    w.end(m().write_set_end)
}

/// What `each_pair` hands the hash-iteration callback.
struct PairContext<'a> {
    ruby: &'a Ruby,
    writer: &'a mut Writer,
    /// `[key, value]` for a map; `[element]` for a Set's hash (its keys).
    infos: &'a [&'a TypeInfo],
    depth: i64,
    error: Option<Error>,
}

/// rb_hash_foreach's callback: writes one pair.
///
/// # Safety
/// `arg` must be the address of a live `PairContext` (as `each_pair` passes it).
unsafe extern "C" fn write_pair(key: VALUE, val: VALUE, arg: VALUE) -> std::os::raw::c_int {
    const ST_CONTINUE: std::os::raw::c_int = 0;
    const ST_STOP: std::os::raw::c_int = 1;
    // SAFETY: `arg` is the address of the PairContext that `each_pair` keeps alive across rb_hash_foreach.
    let ctx = unsafe { &mut *(arg as *mut PairContext) };
    // A panic becomes a Ruby fatal error here instead of unwinding into rb_hash_foreach's C frames.
    let outcome = magnus::rb_sys::catch_unwind(std::panic::AssertUnwindSafe(|| {
        write_any(ctx.ruby, ctx.writer, ctx.infos[0], key, ctx.depth)?;
        if let Some(vi) = ctx.infos.get(1) {
            write_any(ctx.ruby, ctx.writer, vi, val, ctx.depth)?;
        }
        Ok::<(), Error>(())
    }))
    .and_then(|r| r);
    match outcome {
        Ok(()) => ST_CONTINUE,
        Err(e) => {
            ctx.error = Some(e);
            ST_STOP
        }
    }
}

/// Writes every pair of `hash` without making an Array of its keys.
fn each_pair(
    ruby: &Ruby,
    w: &mut Writer,
    hash: VALUE,
    infos: &[&TypeInfo],
    depth: i64,
) -> Result<(), Error> {
    let mut ctx = PairContext {
        ruby,
        writer: w,
        infos,
        depth,
        error: None,
    };
    let arg = &mut ctx as *mut PairContext as VALUE;
    // SAFETY: protected, because rb_hash_foreach raises if the Hash is changed during the iteration; the callback
    // never lets a Ruby exception or a panic escape (it records them in `ctx`), and `ctx` outlives the call.
    let iterated = protect(|| unsafe {
        rb_sys::rb_hash_foreach(hash, Some(write_pair), arg);
        rb::QNIL
    });
    if let Some(e) = ctx.error.take() {
        return Err(e);
    }
    iterated.map(drop)
}

// ------------------------------------------------------------------------------------------------------------------
// The Ruby methods
// ------------------------------------------------------------------------------------------------------------------

/// `(prot, depth = DEFAULT_RECURSION_DEPTH)`, as the C accelerator parses it; depth <= 0 is DEPTH_LIMIT at once.
fn parse_args(ruby: &Ruby, args: &[Value]) -> Result<(VALUE, i64), Error> {
    if args.is_empty() || args.len() > 2 {
        return Err(Error::new(
            ruby.exception_arg_error(),
            format!(
                "wrong number of arguments (given {}, expected 1..2)",
                args.len()
            ),
        ));
    }
    let depth = match args.get(1) {
        Some(d) => i64::from(i32::try_convert(*d)?),
        None => thrift().default_recursion_depth,
    };
    if depth <= 0 {
        return Err(depth_limit());
    }
    Ok((args[0].as_raw(), depth))
}

fn struct_read(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    let obj = rb_self.as_raw();
    let plan = plan_for(ruby, rb::heap_class(obj).unwrap_or(obj))?;
    read_struct(ruby, &mut Reader::new(protocol), obj, plan, depth, false)
}

fn union_read(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    let obj = rb_self.as_raw();
    let plan = plan_for(ruby, rb::heap_class(obj).unwrap_or(obj))?;
    read_union(ruby, &mut Reader::new(protocol), obj, plan, depth)
}

fn struct_write(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    let mut w = Writer::new(protocol);
    let result = write_struct(ruby, &mut w, rb_self.as_raw(), depth);
    let flushed = w.finish();
    result.and(flushed)
}

fn union_write(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let (protocol, depth) = parse_args(ruby, args)?;
    let mut w = Writer::new(protocol);
    let result = write_union(ruby, &mut w, rb_self.as_raw(), depth);
    let flushed = w.finish();
    result.and(flushed)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let i = rb::intern;
    let _ = METHODS.set(Methods {
        read_struct_begin: i("read_struct_begin"),
        read_struct_end: i("read_struct_end"),
        read_field_begin: i("read_field_begin"),
        read_field_end: i("read_field_end"),
        read_map_begin: i("read_map_begin"),
        read_map_end: i("read_map_end"),
        read_list_begin: i("read_list_begin"),
        read_list_end: i("read_list_end"),
        read_set_begin: i("read_set_begin"),
        read_set_end: i("read_set_end"),
        read_bool: i("read_bool"),
        read_byte: i("read_byte"),
        read_i16: i("read_i16"),
        read_i32: i("read_i32"),
        read_i64: i("read_i64"),
        read_double: i("read_double"),
        read_string: i("read_string"),
        read_binary: i("read_binary"),
        read_uuid: i("read_uuid"),
        skip: i("skip"),
        validate_container_size: i("validate_container_size"),
        write_struct_begin: i("write_struct_begin"),
        write_struct_end: i("write_struct_end"),
        write_field_begin: i("write_field_begin"),
        write_field_end: i("write_field_end"),
        write_field_stop: i("write_field_stop"),
        write_map_begin: i("write_map_begin"),
        write_map_end: i("write_map_end"),
        write_list_begin: i("write_list_begin"),
        write_list_end: i("write_list_end"),
        write_set_begin: i("write_set_begin"),
        write_set_end: i("write_set_end"),
        write_bool: i("write_bool"),
        write_byte: i("write_byte"),
        write_i16: i("write_i16"),
        write_i32: i("write_i32"),
        write_i64: i("write_i64"),
        write_double: i("write_double"),
        write_string: i("write_string"),
        write_binary: i("write_binary"),
        write_uuid: i("write_uuid"),
        validate: i("validate"),
        new: i("new"),
        add: i("add"),
        entries: i("entries"),
        keys: i("keys"),
        dup: i("dup"),
        name_to_id: i("name_to_id"),
        to_s: i("to_s"),
        setfield: i("@setfield"),
        value: i("@value"),
        set_hash: i("@hash"),
    });
    let t = thrift();
    let struct_module =
        RModule::from_value(value(t.struct_module)).expect("Thrift::Struct is a module");
    let union = magnus::RClass::from_value(value(t.union)).expect("Thrift::Union is a class");
    crate::registry::define_method(
        ruby,
        struct_module,
        "read",
        magnus::method!(struct_read, -1),
    )?;
    crate::registry::define_method(
        ruby,
        struct_module,
        "write",
        magnus::method!(struct_write, -1),
    )?;
    crate::registry::define_method(ruby, union, "read", magnus::method!(union_read, -1))?;
    crate::registry::define_method(ruby, union, "write", magnus::method!(union_write, -1))?;
    Ok(())
}
