//! The struct codec: one decoder and one encoder for whole structs and unions, in either encoding.
//!
//! The wire rules live here once: a struct's fields are read until STOP, each matched to a declared field by id and
//! type or skipped; a container whose element types differ from the declared ones is skipped whole (an empty map is
//! accepted whatever its types); each nested struct costs one level of depth; a union is exactly one field, then
//! STOP; fields are written in id order with unset ones left out; reservations never exceed what the bytes left can
//! back. The compact encoding's bool-in-header and field-id deltas are in [`compact`].
//!
//! What the decoder reads from is a [`Source`] and what it makes is a [`Build`]; what the encoder walks is an
//! [`Inspect`] and where it writes is a [`Sink`]. Everything is generic and monomorphised. The Ruby binding supplies
//! Ruby objects as values and its transports (or the protocol's own Ruby methods) as sources and sinks;
//! [`crate::plain`] supplies plain Rust values and byte slices, so that cargo tests and fuzzers run this same code.

pub mod binary;
pub mod compact;
mod read;
mod write;

#[cfg(test)]
pub(crate) mod tests;

pub use read::{
    read_struct, read_value, skip_natively, Build, Container, Host, Ran, Source, Values,
};
pub use write::{write_struct, write_union, write_value, Encoder, Inspect, Sink};

/// `Thrift::Struct#read`'s default depth (`Thrift::DEFAULT_RECURSION_DEPTH`): a struct nested this deep, counting
/// the outermost, is refused.
pub const DEFAULT_DEPTH: i64 = 64;

/// `read(prot, depth)` and `write(prot, depth)` refuse a depth below 1 at once, before anything is read or written.
#[inline]
pub fn check_depth(depth: i64) -> Result<i64, crate::CoreError> {
    if depth <= 0 {
        return Err(crate::CoreError::DepthLimit);
    }
    Ok(depth)
}

/// A container's elements are reserved for up to this many at once, whatever the declared size (as the C
/// accelerator's `rb_ary_new_capa(MIN(n, 1024))`).
pub const MAX_RESERVATION: usize = 1024;

/// A type as a field (or container element) declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDesc<C> {
    /// The declared type code (`:type`), compared with the wire's.
    pub code: i64,
    pub kind: Kind<C>,
}

/// What a declared type holds. `C` names a struct or union type (a Ruby class in the binding).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind<C> {
    Scalar(Scalar),
    Struct(C),
    /// `None`: the declaration lacks its element type; every element is skipped.
    List(Option<Box<TypeDesc<C>>>),
    Set(Option<Box<TypeDesc<C>>>),
    Map(Option<Box<TypeDesc<C>>>, Option<Box<TypeDesc<C>>>),
    /// A type code the codec does not know: an error when a value of it is read or written.
    Unknown,
}

/// The scalar kinds, each read and written by one protocol method (`read_i32`, `write_string`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    /// A STRING field without `binary: true`: text, UTF-8.
    String,
    /// A STRING field with `binary: true`.
    Binary,
    Uuid,
}

/// A scalar value as the encodings write it. `Bytes` is the content of a string or binary (at most `i32::MAX`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Primitive<'a> {
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Uuid([u8; 16]),
}

/// Lists and sets share their encoding; a protocol has methods for each (`read_list_begin`, `read_set_begin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    List,
    Set,
}

/// A field header as a source gives it. `id` is `None` when the protocol answered something that is not an
/// integer (no field matches it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldBegin {
    pub ttype: i64,
    pub id: Option<i64>,
}

/// A list or set header as a source gives it. `negative`: the protocol answered a negative size (thrift before 0.24
/// lets one through, [`crate::wire::Rules`]); `size` is then 0 and the builder says what it means
/// ([`Build::negative_size`]).
/// A `size` beyond INT32_MAX comes only from thrift 0.24's compact encoding: the decoder refuses a container field of
/// one and skips one element by element, as the protocol's Ruby `skip` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListBegin {
    pub element: i64,
    pub size: usize,
    pub negative: bool,
}

/// A map header as a source gives it (`negative` as in [`ListBegin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapBegin {
    pub key: i64,
    pub value: i64,
    pub size: usize,
    pub negative: bool,
}

impl From<crate::wire::ListHeader> for ListBegin {
    #[inline(always)]
    fn from(h: crate::wire::ListHeader) -> Self {
        ListBegin {
            element: h.element.into(),
            size: usize::try_from(h.size).unwrap_or(0),
            negative: h.size < 0,
        }
    }
}

impl From<crate::wire::MapHeader> for MapBegin {
    #[inline(always)]
    fn from(h: crate::wire::MapHeader) -> Self {
        MapBegin {
            key: h.key.into(),
            value: h.value.into(),
            size: usize::try_from(h.size).unwrap_or(0),
            negative: h.size < 0,
        }
    }
}

impl From<crate::wire::FieldHeader> for FieldBegin {
    #[inline(always)]
    fn from(h: crate::wire::FieldHeader) -> Self {
        FieldBegin {
            ttype: h.ttype.into(),
            id: Some(h.id),
        }
    }
}

/// A declared field: its id, its type, and what the builder keeps with it (`F`: the ivar and default in Ruby).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef<C, F> {
    pub id: i64,
    pub ty: TypeDesc<C>,
    pub extra: F,
}

/// A struct or union type's declared fields.
#[derive(Debug, Clone, PartialEq)]
pub struct StructDef<C, F> {
    /// In declaration order (Ruby's `FIELDS` order: the order defaults are applied in).
    fields: Vec<FieldDef<C, F>>,
    /// Indices into `fields` by ascending id: the order fields are written in, and the lookup by id.
    by_id: Vec<usize>,
    is_union: bool,
}

impl<C, F> StructDef<C, F> {
    pub fn new(fields: Vec<FieldDef<C, F>>, is_union: bool) -> Self {
        let mut by_id: Vec<usize> = (0..fields.len()).collect();
        by_id.sort_by_key(|&i| fields[i].id);
        StructDef {
            fields,
            by_id,
            is_union,
        }
    }

    pub fn is_union(&self) -> bool {
        self.is_union
    }

    /// In declaration order.
    pub fn fields(&self) -> &[FieldDef<C, F>] {
        &self.fields
    }

    /// The index (in declaration order) of the field with this id.
    #[inline]
    pub fn find(&self, id: i64) -> Option<usize> {
        self.by_id
            .binary_search_by(|&i| self.fields[i].id.cmp(&id))
            .ok()
            .map(|pos| self.by_id[pos])
    }

    /// The field a header names: the same id and the same type code.
    #[inline]
    pub fn matching(&self, header: FieldBegin) -> Option<(usize, &FieldDef<C, F>)> {
        let i = self.find(header.id?)?;
        let f = &self.fields[i];
        (f.ty.code == header.ttype).then_some((i, f))
    }

    /// `(index, field)` by ascending id.
    pub fn by_id(&self) -> impl Iterator<Item = (usize, &FieldDef<C, F>)> {
        self.by_id.iter().map(|&i| (i, &self.fields[i]))
    }
}

/// How many elements to reserve room for: the declared size, but never more than [`MAX_RESERVATION`], nor more than
/// one per byte known to remain (every element takes at least one byte).
#[inline(always)]
pub fn reservation(declared: usize, remaining: Option<usize>) -> usize {
    declared
        .min(MAX_RESERVATION)
        .min(remaining.unwrap_or(usize::MAX))
}
