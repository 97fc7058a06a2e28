//! Decoding: a [`Source`] of headers and scalars, a [`Build`] that makes values, and the one algorithm between them.

use super::{
    reservation, FieldBegin, FieldDef, Kind, ListBegin, MapBegin, Scalar, Sequence, StructDef,
    TypeDesc,
};
use crate::wire::WireInput;
use crate::{ttype, CoreError};

/// Whether a builder call ran code of the host language (Ruby's `validate`, `new`, `Set#add`, `Hash#hash`): that
/// code may have read from or replaced the transport, so the source picks its state up again.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    OnlyRust,
    HostCode,
}

/// What scalars become. Sources make values through it, so that bytes go from the wire to the value directly.
pub trait Values {
    type Value;
    type Error;

    /// The error the builder raises for a decoding error of the core.
    fn error(&self, e: CoreError) -> Self::Error;
    /// What a container field read with mismatched element types becomes (Ruby: nil).
    fn nil(&mut self) -> Self::Value;
    fn bool(&mut self, v: bool) -> Self::Value;
    fn byte(&mut self, v: i8) -> Self::Value;
    fn i16(&mut self, v: i16) -> Self::Value;
    fn i32(&mut self, v: i32) -> Self::Value;
    fn i64(&mut self, v: i64) -> Self::Value;
    fn double(&mut self, v: f64) -> Self::Value;
    /// Text (not validated as UTF-8, as Thrift's `convert_to_string`). `bytes` must not be kept.
    fn string(&mut self, bytes: &[u8]) -> Self::Value;
    fn binary(&mut self, bytes: &[u8]) -> Self::Value;
    fn uuid(&mut self, bytes: &[u8; 16]) -> Self::Value;
}

/// What structs and containers become. `'d` is how long struct definitions live.
pub trait Build<'d>: Values {
    /// Names a struct or union type in a [`Kind::Struct`].
    type Class: 'd;
    /// What the builder keeps with each declared field.
    type Field: 'd;
    /// A struct or union being read.
    type Struct;
    type List;
    type Set;
    type Map;

    /// A new instance of a nested struct or union type, with what its initializer sets, and its definition.
    #[allow(clippy::type_complexity)]
    fn instantiate(
        &mut self,
        class: &'d Self::Class,
    ) -> Result<(Self::Struct, &'d StructDef<Self::Class, Self::Field>, Ran), Self::Error>;
    /// Before the fields are read: a struct's defaults, a union's cleared state. `native`: the source reads bytes
    /// itself (no protocol method call will observe the object meanwhile).
    fn struct_begin(&mut self, s: &mut Self::Struct, native: bool) -> Result<(), Self::Error>;
    /// A field matched on the wire, before its value is read (before thrift master a union's `@setfield` was set
    /// here, so that a failed read left it set).
    fn field_begin(
        &mut self,
        _s: &mut Self::Struct,
        _field: &'d FieldDef<Self::Class, Self::Field>,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
    /// A field read off the wire: `index` is its place in declaration order.
    fn set_field(
        &mut self,
        s: &mut Self::Struct,
        index: usize,
        field: &'d FieldDef<Self::Class, Self::Field>,
        value: Self::Value,
    ) -> Result<(), Self::Error>;
    /// After the fields, whatever their `outcome`: what a struct still lacks, then the outcome, then validation.
    /// Always counts as host code ([`Ran::HostCode`]).
    fn struct_end(
        &mut self,
        s: Self::Struct,
        outcome: Result<(), Self::Error>,
    ) -> Result<Self::Value, Self::Error>;

    fn list_new(&mut self, reserve: usize) -> Self::List;
    fn list_push(&mut self, list: &mut Self::List, item: Self::Value);
    fn list_end(&mut self, list: Self::List) -> Self::Value;
    fn set_new(&mut self, reserve: usize) -> Result<(Self::Set, Ran), Self::Error>;
    /// `fresh`: the source made `item` itself (nothing else refers to it), so it may be frozen as a key.
    fn set_insert(
        &mut self,
        set: &mut Self::Set,
        item: Self::Value,
        fresh: bool,
    ) -> Result<Ran, Self::Error>;
    fn set_end(&mut self, set: Self::Set) -> Self::Value;
    fn map_new(&mut self, reserve: usize) -> Self::Map;
    fn map_insert(
        &mut self,
        map: &mut Self::Map,
        key: Self::Value,
        value: Self::Value,
        fresh: bool,
    ) -> Result<Ran, Self::Error>;
    fn map_end(&mut self, map: Self::Map) -> Self::Value;

    /// A container the source declared with a negative size ([`ListBegin::negative`]), before anything else is
    /// made of it: `matched` says whether its element types are the declared ones. `Ok` reads it as empty (a list
    /// or set whose types differ is then nil, a map as its types say); else the error to raise.
    fn negative_size(&mut self, container: Container, matched: bool) -> Result<(), Self::Error>;
}

/// The kinds of container, for [`Build::negative_size`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    List,
    Set,
    Map,
}

/// Where a struct's headers and scalars come from: the bytes of one encoding, or a protocol object's methods. The
/// provided methods are an encoding's: it reads bytes itself, and the ends of fields and containers are nothing.
pub trait Source<V: Values> {
    /// True while the source reads bytes itself rather than calling the protocol's methods.
    fn native(&self) -> bool {
        true
    }
    /// Bytes known to remain (for reservations); `None` when unknown.
    fn remaining(&self) -> Option<usize>;
    /// Picks the transport's state up again after host code ran.
    fn resync(&mut self) {}
    /// Starts a struct; returns what [`Source::struct_end`] puts back (the compact encoding's last field id).
    fn struct_begin(&mut self) -> Result<i64, V::Error> {
        Ok(0)
    }
    fn struct_end(&mut self, _saved: i64) -> Result<(), V::Error> {
        Ok(())
    }
    fn field_begin(&mut self) -> Result<FieldBegin, V::Error>;
    fn field_end(&mut self) -> Result<(), V::Error> {
        Ok(())
    }
    fn map_begin(&mut self) -> Result<MapBegin, V::Error>;
    fn map_end(&mut self) -> Result<(), V::Error> {
        Ok(())
    }
    fn list_begin(&mut self, seq: Sequence) -> Result<ListBegin, V::Error>;
    fn list_end(&mut self, _seq: Sequence) -> Result<(), V::Error> {
        Ok(())
    }
    fn scalar(&mut self, kind: Scalar, values: &mut V) -> Result<V::Value, V::Error>;
    /// Skips a value of type `ttype` (`BaseProtocol#skip`); `depth` bounds a native skip's nesting.
    fn skip(&mut self, ttype: i64, depth: i64, values: &mut V) -> Result<(), V::Error> {
        skip_natively(self, ttype, depth, values)
    }
}

/// The bytes an encoding reads, and the state its protocol object keeps beside them. Implemented over a byte slice
/// ([`plain::SliceHost`](crate::plain::SliceHost)) and, in the binding, over a transport's Ruby String.
pub trait Host: WireInput {
    /// Exactly `n` bytes, handed to `make` and consumed; `Eof` with nothing consumed when fewer remain. `make` must
    /// not keep the slice.
    fn take_with<R>(&mut self, n: usize, make: impl FnOnce(&[u8]) -> R) -> Result<R, Self::Error>;
    /// Bytes known to remain.
    fn remaining(&self) -> Option<usize>;
    /// The compact protocol's bool field value, from its header until it is read (Ruby: `@bool_value`).
    fn put_bool(&mut self, value: bool) -> Result<(), Self::Error>;
    fn take_bool(&mut self) -> Result<Option<bool>, Self::Error>;
}

/// A string, binary or UUID value (`n` is 16 for a UUID) made straight from the host's bytes.
#[inline(always)]
pub(super) fn bytes_value<H: Host, V: Values<Error = H::Error>>(
    host: &mut H,
    kind: Scalar,
    n: usize,
    values: &mut V,
) -> Result<V::Value, H::Error> {
    match kind {
        Scalar::String => host.take_with(n, |b| values.string(b)),
        Scalar::Uuid => host.take_with(16, |b| {
            values.uuid(b.try_into().expect("take_with hands over exactly 16 bytes"))
        }),
        _ => host.take_with(n, |b| values.binary(b)),
    }
}

/// Reads a struct's or union's fields into `s` (a new instance from [`Build::instantiate`], or one the caller
/// has), then ends it ([`Build::struct_end`]).
pub fn read_struct<'d, S, B>(
    src: &mut S,
    b: &mut B,
    mut s: B::Struct,
    def: &'d StructDef<B::Class, B::Field>,
    depth: i64,
) -> Result<B::Value, B::Error>
where
    B: Build<'d>,
    S: Source<B>,
{
    b.struct_begin(&mut s, src.native())?;
    let outcome = if def.is_union() {
        read_union_field(src, b, &mut s, def, depth)
    } else {
        read_fields(src, b, &mut s, def, depth)
    };
    let value = b.struct_end(s, outcome)?;
    src.resync();
    Ok(value)
}

fn read_fields<'d, S, B>(
    src: &mut S,
    b: &mut B,
    s: &mut B::Struct,
    def: &'d StructDef<B::Class, B::Field>,
    depth: i64,
) -> Result<(), B::Error>
where
    B: Build<'d>,
    S: Source<B>,
{
    let saved = src.struct_begin()?;
    loop {
        let header = src.field_begin()?;
        if header.ttype == i64::from(ttype::STOP) {
            break;
        }
        read_field(src, b, s, def, header, depth)?;
        src.field_end()?;
    }
    src.struct_end(saved)
}

/// A matching field is read into `s`; anything else is skipped.
#[inline(always)]
fn read_field<'d, S, B>(
    src: &mut S,
    b: &mut B,
    s: &mut B::Struct,
    def: &'d StructDef<B::Class, B::Field>,
    header: FieldBegin,
    depth: i64,
) -> Result<(), B::Error>
where
    B: Build<'d>,
    S: Source<B>,
{
    match def.matching(header) {
        Some((index, field)) => {
            b.field_begin(s, field)?;
            let value = read_value(src, b, &field.ty, depth)?;
            b.set_field(s, index, field, value)
        }
        None => src.skip(header.ttype, depth, b),
    }
}

/// A union: exactly one field, then STOP. An empty union reaches `skip(STOP)`, which refuses it.
fn read_union_field<'d, S, B>(
    src: &mut S,
    b: &mut B,
    s: &mut B::Struct,
    def: &'d StructDef<B::Class, B::Field>,
    depth: i64,
) -> Result<(), B::Error>
where
    B: Build<'d>,
    S: Source<B>,
{
    let saved = src.struct_begin()?;
    let header = src.field_begin()?;
    read_field(src, b, s, def, header, depth)?;
    src.field_end()?;
    if src.field_begin()?.ttype != i64::from(ttype::STOP) {
        return Err(b.error(CoreError::TooManyUnionFields));
    }
    src.struct_end(saved)
}

/// One value of a declared type.
pub fn read_value<'d, S, B>(
    src: &mut S,
    b: &mut B,
    ty: &'d TypeDesc<B::Class>,
    depth: i64,
) -> Result<B::Value, B::Error>
where
    B: Build<'d>,
    S: Source<B>,
{
    match &ty.kind {
        Kind::Scalar(kind) => src.scalar(*kind, b),
        Kind::Struct(class) => {
            let (s, def, ran) = b.instantiate(class)?;
            if ran == Ran::HostCode {
                src.resync();
            }
            // As the C accelerator: the instance is made before the depth is checked.
            let depth = depth - 1;
            if depth <= 0 {
                return Err(b.error(CoreError::DepthLimit));
            }
            read_struct(src, b, s, def, depth)
        }
        Kind::List(element) => {
            let header = src.list_begin(Sequence::List)?;
            refuse_beyond_int(b, header.size)?;
            let matched = element.as_deref().filter(|e| e.code == header.element);
            if header.negative {
                b.negative_size(Container::List, matched.is_some())?;
            }
            let value = match matched {
                Some(e) => {
                    let mut list = b.list_new(reservation(header.size, src.remaining()));
                    for _ in 0..header.size {
                        let item = read_value(src, b, e, depth)?;
                        b.list_push(&mut list, item);
                    }
                    b.list_end(list)
                }
                None => skip_elements(src, b, &[header.element], header.size, depth)?,
            };
            src.list_end(Sequence::List)?;
            Ok(value)
        }
        Kind::Set(element) => {
            let header = src.list_begin(Sequence::Set)?;
            refuse_beyond_int(b, header.size)?;
            let matched = element.as_deref().filter(|e| e.code == header.element);
            if header.negative {
                b.negative_size(Container::Set, matched.is_some())?;
            }
            let value = match matched {
                Some(e) => {
                    let (mut set, ran) = b.set_new(reservation(header.size, src.remaining()))?;
                    if ran == Ran::HostCode {
                        src.resync();
                    }
                    for _ in 0..header.size {
                        let fresh = src.native();
                        let item = read_value(src, b, e, depth)?;
                        if b.set_insert(&mut set, item, fresh)? == Ran::HostCode {
                            src.resync();
                        }
                    }
                    b.set_end(set)
                }
                None => skip_elements(src, b, &[header.element], header.size, depth)?,
            };
            src.list_end(Sequence::Set)?;
            Ok(value)
        }
        Kind::Map(key, value) => {
            let header = src.map_begin()?;
            refuse_beyond_int(b, header.size)?;
            let declared = key.as_deref().zip(value.as_deref());
            let empty = header.size == 0 && !header.negative;
            // An empty map is read whatever its types say (the compact encoding sends none).
            let matched =
                declared.filter(|(k, v)| empty || (k.code == header.key && v.code == header.value));
            if header.negative {
                b.negative_size(Container::Map, matched.is_some())?;
            }
            let result = match matched {
                Some((k, v)) => {
                    let mut map = b.map_new(reservation(header.size, src.remaining()));
                    for _ in 0..header.size {
                        let fresh = src.native();
                        let key = read_value(src, b, k, depth)?;
                        let value = read_value(src, b, v, depth)?;
                        if b.map_insert(&mut map, key, value, fresh)? == Ran::HostCode {
                            src.resync();
                        }
                    }
                    b.map_end(map)
                }
                None => skip_elements(src, b, &[header.key, header.value], header.size, depth)?,
            };
            src.map_end()?;
            Ok(result)
        }
        Kind::Unknown => Err(b.error(CoreError::UnknownReadType(ty.code))),
    }
}

/// A container size beyond INT32_MAX (thrift 0.24's compact encoding answers one): the C accelerator's struct decoder
/// took it with FIX2INT, which raised RangeError whether the container was to be read or skipped.
#[inline(always)]
fn refuse_beyond_int<V: Values>(b: &V, size: usize) -> Result<(), V::Error> {
    if size > i32::MAX as usize {
        return Err(b.error(CoreError::IntOutOfRange(size as i64)));
    }
    Ok(())
}

/// A container whose element types differ from the declared ones: every element skipped, the value nil.
fn skip_elements<V: Values, S: Source<V>>(
    src: &mut S,
    values: &mut V,
    types: &[i64],
    size: usize,
    depth: i64,
) -> Result<V::Value, V::Error> {
    for _ in 0..size {
        for &t in types {
            src.skip(t, depth, values)?;
        }
    }
    Ok(values.nil())
}

/// `BaseProtocol#skip(type)` done by the source itself (UUID as thrift master skips it), with every nested struct or
/// container counted against `depth`, where Ruby's recursive `skip` would run until the stack ends.
pub fn skip_natively<V: Values, S: Source<V> + ?Sized>(
    src: &mut S,
    ttype: i64,
    depth: i64,
    values: &mut V,
) -> Result<(), V::Error> {
    let nested = |values: &V| {
        if depth - 1 <= 0 {
            Err(values.error(CoreError::DepthLimit))
        } else {
            Ok(depth - 1)
        }
    };
    let kind = match u8::try_from(ttype).unwrap_or(u8::MAX) {
        ttype::BOOL => Some(Scalar::Bool),
        ttype::BYTE => Some(Scalar::Byte),
        ttype::I16 => Some(Scalar::I16),
        ttype::I32 => Some(Scalar::I32),
        ttype::I64 => Some(Scalar::I64),
        ttype::DOUBLE => Some(Scalar::Double),
        ttype::STRING => Some(Scalar::Binary),
        ttype::UUID => Some(Scalar::Uuid),
        _ => None,
    };
    if let Some(kind) = kind {
        src.scalar(kind, values)?;
        return Ok(());
    }
    match u8::try_from(ttype).unwrap_or(u8::MAX) {
        ttype::STRUCT => {
            let depth = nested(values)?;
            let saved = src.struct_begin()?;
            loop {
                let header = src.field_begin()?;
                if header.ttype == i64::from(ttype::STOP) {
                    break;
                }
                skip_natively(src, header.ttype, depth, values)?;
                src.field_end()?;
            }
            src.struct_end(saved)
        }
        ttype::MAP => {
            let depth = nested(values)?;
            let header = src.map_begin()?;
            for _ in 0..header.size {
                skip_natively(src, header.key, depth, values)?;
                skip_natively(src, header.value, depth, values)?;
            }
            src.map_end()
        }
        ttype::SET | ttype::LIST => {
            let depth = nested(values)?;
            let seq = if ttype == i64::from(ttype::SET) {
                Sequence::Set
            } else {
                Sequence::List
            };
            let header = src.list_begin(seq)?;
            for _ in 0..header.size {
                skip_natively(src, header.element, depth, values)?;
            }
            src.list_end(seq)
        }
        _ => Err(values.error(CoreError::InvalidData)),
    }
}
