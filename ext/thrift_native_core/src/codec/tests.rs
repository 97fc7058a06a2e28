//! The wire rules, each pinned to bytes. Every expected byte string was written by pure Ruby thrift 0.14
//! (`BinaryProtocol` and `CompactProtocol`, `Struct#write`/`Union#write` of classes with the same `FIELDS`).

use super::{reservation, FieldDef, Kind, Scalar, StructDef, TypeDesc, DEFAULT_DEPTH};
use crate::plain::{decode, decode_with, encode, Class, Def, Encoding, Field, Type, Value};
use crate::wire::{NegativeSizes, Rules};
use crate::{ttype, CoreError};

use Encoding::{Binary, Compact};

fn scalar(kind: Scalar) -> Type {
    let code = match kind {
        Scalar::Bool => ttype::BOOL,
        Scalar::Byte => ttype::BYTE,
        Scalar::I16 => ttype::I16,
        Scalar::I32 => ttype::I32,
        Scalar::I64 => ttype::I64,
        Scalar::Double => ttype::DOUBLE,
        Scalar::String | Scalar::Binary => ttype::STRING,
        Scalar::Uuid => ttype::UUID,
    };
    TypeDesc {
        code: code.into(),
        kind: Kind::Scalar(kind),
    }
}

fn list(e: Type) -> Type {
    TypeDesc {
        code: ttype::LIST.into(),
        kind: Kind::List(Some(Box::new(e))),
    }
}

fn set(e: Type) -> Type {
    TypeDesc {
        code: ttype::SET.into(),
        kind: Kind::Set(Some(Box::new(e))),
    }
}

fn map(k: Type, v: Type) -> Type {
    TypeDesc {
        code: ttype::MAP.into(),
        kind: Kind::Map(Some(Box::new(k)), Some(Box::new(v))),
    }
}

fn strukt(def: Def) -> Type {
    TypeDesc {
        code: ttype::STRUCT.into(),
        kind: Kind::Struct(Class(Box::new(def))),
    }
}

fn fields(list: Vec<(i64, Type)>) -> Vec<Field> {
    list.into_iter()
        .map(|(id, ty)| FieldDef { id, ty, extra: () })
        .collect()
}

fn def(list: Vec<(i64, Type)>) -> Def {
    StructDef::new(fields(list), false)
}

fn union(list: Vec<(i64, Type)>) -> Def {
    StructDef::new(fields(list), true)
}

fn inner() -> Def {
    def(vec![(1, scalar(Scalar::Double))])
}

/// `S`: fields 1..5, 20 and -3, declared in that order.
pub(crate) fn s_def() -> Def {
    def(vec![
        (1, scalar(Scalar::I32)),
        (2, scalar(Scalar::String)),
        (3, list(scalar(Scalar::Bool))),
        (4, map(scalar(Scalar::String), scalar(Scalar::I64))),
        (5, scalar(Scalar::Bool)),
        (20, strukt(inner())),
        (-3, scalar(Scalar::I16)),
    ])
}

fn nested_def(def: &Def, index: usize) -> &Def {
    match &def.fields()[index].ty.kind {
        Kind::Struct(Class(d)) => d,
        _ => unreachable!("field {index} is a struct"),
    }
}

pub(crate) fn s_value(d: &Def) -> Value<'_> {
    Value::Struct(
        d,
        vec![
            Some(Value::I32(42)),
            Some(Value::String(b"hi".to_vec())),
            Some(Value::List(vec![Value::Bool(true), Value::Bool(false)])),
            Some(Value::Map(vec![(
                Value::String(b"a".to_vec()),
                Value::I64(-1),
            )])),
            Some(Value::Bool(true)),
            Some(Value::Struct(
                nested_def(d, 5),
                vec![Some(Value::Double(1.5))],
            )),
            Some(Value::I16(-300)),
        ],
    )
}

const S_BINARY: &[u8] = &[
    0x06, 0xff, 0xfd, 0xfe, 0xd4, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a, 0x0b, 0x00, 0x02, 0x00,
    0x00, 0x00, 0x02, 0x68, 0x69, 0x0f, 0x00, 0x03, 0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x00, 0x0d,
    0x00, 0x04, 0x0b, 0x0a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x61, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x05, 0x01, 0x0c, 0x00, 0x14, 0x04, 0x00, 0x01, 0x3f,
    0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

const S_COMPACT: &[u8] = &[
    0x04, 0x05, 0xd7, 0x04, 0x45, 0x54, 0x18, 0x02, 0x68, 0x69, 0x19, 0x21, 0x01, 0x02, 0x1b, 0x01,
    0x86, 0x01, 0x61, 0x01, 0x11, 0xfc, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00,
    0x00,
];

fn both(binary: &'static [u8], compact: &'static [u8]) -> [(Encoding, &'static [u8]); 2] {
    [(Binary, binary), (Compact, compact)]
}

fn encoded(v: &Value<'_>, encoding: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    encode(v, encoding, &mut out).unwrap();
    out
}

#[test]
fn structs_decode_and_encode_as_pure_ruby_writes_them() {
    let d = s_def();
    for (encoding, bytes) in both(S_BINARY, S_COMPACT) {
        assert_eq!(
            decode(bytes, encoding, &d, DEFAULT_DEPTH),
            Ok((s_value(&d), bytes.len())),
            "{encoding:?}"
        );
        assert_eq!(encoded(&s_value(&d), encoding), bytes, "{encoding:?}");
    }
}

/// Declared 5, 1, 300, 2, 16, -1, 40; `b` (1) unset. Compact ids: -1 and 40 and 300 long, the others deltas.
fn order_def() -> Def {
    def(vec![
        (5, scalar(Scalar::I32)),
        (1, scalar(Scalar::String)),
        (300, scalar(Scalar::Bool)),
        (2, list(list(scalar(Scalar::I32)))),
        (16, scalar(Scalar::Byte)),
        (-1, scalar(Scalar::Bool)),
        (40, set(scalar(Scalar::Byte))),
    ])
}

fn order_value(d: &Def) -> Value<'_> {
    let ints = |v: &[i32]| Value::List(v.iter().map(|&n| Value::I32(n)).collect());
    Value::Struct(
        d,
        vec![
            Some(Value::I32(7)),
            None,
            Some(Value::Bool(false)),
            Some(Value::List(vec![ints(&[1]), ints(&[]), ints(&[-2, 3])])),
            Some(Value::Byte(-5)),
            Some(Value::Bool(true)),
            Some(Value::Set(vec![Value::Byte(1), Value::Byte(2)])),
        ],
    )
}

const ORDER_BINARY: &[u8] = &[
    0x02, 0xff, 0xff, 0x01, 0x0f, 0x00, 0x02, 0x0f, 0x00, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0xff,
    0xff, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x03, 0x08, 0x00, 0x05, 0x00, 0x00, 0x00, 0x07, 0x03, 0x00,
    0x10, 0xfb, 0x0e, 0x00, 0x28, 0x03, 0x00, 0x00, 0x00, 0x02, 0x01, 0x02, 0x02, 0x01, 0x2c, 0x00,
    0x00,
];

const ORDER_COMPACT: &[u8] = &[
    0x01, 0x01, 0x39, 0x39, 0x15, 0x02, 0x05, 0x25, 0x03, 0x06, 0x35, 0x0e, 0xb3, 0xfb, 0x0a, 0x50,
    0x23, 0x01, 0x02, 0x02, 0xd8, 0x04, 0x00,
];

#[test]
fn fields_are_written_by_ascending_id_without_unset_ones_and_compact_ids_are_deltas_up_to_15() {
    let d = order_def();
    for (encoding, bytes) in both(ORDER_BINARY, ORDER_COMPACT) {
        assert_eq!(encoded(&order_value(&d), encoding), bytes, "{encoding:?}");
        assert_eq!(
            decode(bytes, encoding, &d, DEFAULT_DEPTH),
            Ok((order_value(&d), bytes.len())),
            "{encoding:?}"
        );
    }
}

#[test]
fn a_compact_bool_field_is_all_header_and_a_bool_element_is_a_byte() {
    // Field 5 (true) is 0x11 after field 4; the list<bool> elements are 0x01 and 0x02.
    assert_eq!(&S_COMPACT[20..21], &[0x11]);
    assert_eq!(&S_COMPACT[10..14], &[0x19, 0x21, 0x01, 0x02]);
    // A nested struct's ids start again from 0 and the outer struct's count resumes after it: field 20 (delta
    // 15 after 5) is 0xfc, its field 1 is 0x17, and -3 (first, long form) comes before everything.
    assert_eq!(&S_COMPACT[..4], &[0x04, 0x05, 0xd7, 0x04]);
    assert_eq!(&S_COMPACT[21..23], &[0xfc, 0x17]);
}

fn u_def() -> Def {
    union(vec![
        (1, scalar(Scalar::I32)),
        (2, scalar(Scalar::String)),
        (3, scalar(Scalar::Bool)),
    ])
}

const U_S_BINARY: &[u8] = &[0x0b, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x78, 0x00];
const U_S_COMPACT: &[u8] = &[0x28, 0x01, 0x78, 0x00];
const U_B_BINARY: &[u8] = &[0x02, 0x00, 0x03, 0x00, 0x00];
const U_B_COMPACT: &[u8] = &[0x32, 0x00];

#[test]
fn a_union_is_one_field_then_stop() {
    let d = u_def();
    let text = Value::Struct(&d, vec![None, Some(Value::String(b"x".to_vec())), None]);
    let no = Value::Struct(&d, vec![None, None, Some(Value::Bool(false))]);
    for (value, pinned) in [
        (&text, both(U_S_BINARY, U_S_COMPACT)),
        (&no, both(U_B_BINARY, U_B_COMPACT)),
    ] {
        for (encoding, bytes) in pinned {
            assert_eq!(encoded(value, encoding), bytes, "{encoding:?}");
            assert_eq!(
                decode(bytes, encoding, &d, DEFAULT_DEPTH),
                Ok((value.clone(), bytes.len()))
            );
        }
    }
    // A second field before the STOP; an empty union reaches skip(STOP).
    assert_eq!(
        decode(
            &[0x08, 0, 1, 0, 0, 0, 1, 0x08, 0, 1, 0, 0, 0, 2, 0],
            Binary,
            &d,
            DEFAULT_DEPTH
        ),
        Err(CoreError::TooManyUnionFields)
    );
    assert_eq!(
        decode(&[0x15, 0x02, 0x15, 0x04, 0x00], Compact, &d, DEFAULT_DEPTH),
        Err(CoreError::TooManyUnionFields)
    );
    assert_eq!(
        decode(&[0x00], Binary, &d, DEFAULT_DEPTH),
        Err(CoreError::InvalidData)
    );
    // An unknown field is skipped, and still counts as the one field.
    assert_eq!(
        decode(
            &[0x0a, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0],
            Binary,
            &d,
            DEFAULT_DEPTH
        ),
        Ok((Value::Struct(&d, vec![None, None, None]), 12))
    );
    let empty = Value::Struct(&d, vec![None, None, None]);
    assert_eq!(
        encode(&empty, Binary, &mut Vec::new()),
        Err(CoreError::InvalidUnionField)
    );
}

#[test]
fn fields_the_definition_lacks_or_types_it_disagrees_with_are_skipped() {
    let some = def(vec![(2, scalar(Scalar::I32)), (20, strukt(def(vec![])))]);
    for (encoding, bytes) in both(S_BINARY, S_COMPACT) {
        let expected = Value::Struct(
            &some,
            vec![None, Some(Value::Struct(nested_def(&some, 1), vec![]))],
        );
        assert_eq!(
            decode(bytes, encoding, &some, DEFAULT_DEPTH),
            Ok((expected, bytes.len())),
            "{encoding:?}"
        );
    }
}

#[test]
fn a_container_of_other_element_types_is_skipped_whole_and_its_field_left_unset() {
    let mut declared = s_def().fields().to_vec();
    declared[2].ty = list(scalar(Scalar::Byte));
    declared[3].ty = map(scalar(Scalar::String), scalar(Scalar::I32));
    let d = StructDef::new(declared, false);
    let Value::Struct(_, mut expected) = s_value(&d) else {
        unreachable!()
    };
    expected[2] = None;
    expected[3] = None;
    expected[5] = Some(Value::Struct(
        nested_def(&d, 5),
        vec![Some(Value::Double(1.5))],
    ));
    for (encoding, bytes) in both(S_BINARY, S_COMPACT) {
        assert_eq!(
            decode(bytes, encoding, &d, DEFAULT_DEPTH),
            Ok((Value::Struct(&d, expected.clone()), bytes.len())),
            "{encoding:?}"
        );
    }
}

#[test]
fn an_empty_map_is_read_whatever_its_types() {
    let d = def(vec![(1, map(scalar(Scalar::String), scalar(Scalar::I64)))]);
    let empty = Value::Struct(&d, vec![Some(Value::Map(vec![]))]);
    // Binary: declared i32 => i32, size 0. Compact: a lone 0 carries no types at all.
    let binary = [0x0d, 0, 1, 0x08, 0x08, 0, 0, 0, 0, 0];
    let compact = [0x1b, 0x00, 0x00];
    assert_eq!(
        decode(&binary, Binary, &d, DEFAULT_DEPTH),
        Ok((empty.clone(), 10))
    );
    assert_eq!(decode(&compact, Compact, &d, DEFAULT_DEPTH), Ok((empty, 3)));
}

#[test]
fn a_repeated_field_keeps_its_last_value() {
    let d = def(vec![(1, scalar(Scalar::Byte)), (2, scalar(Scalar::Byte))]);
    let bytes = [3, 0, 1, 7, 3, 0, 2, 8, 3, 0, 1, 9, 0];
    assert_eq!(
        decode(&bytes, Binary, &d, DEFAULT_DEPTH),
        Ok((
            Value::Struct(&d, vec![Some(Value::Byte(9)), Some(Value::Byte(8))]),
            bytes.len()
        ))
    );
}

/// `struct N { 1: N }` nested `levels` deep.
fn nested(levels: usize) -> Def {
    let mut d = def(vec![]);
    for _ in 0..levels {
        d = def(vec![(1, strukt(d))]);
    }
    d
}

#[test]
fn each_nested_struct_costs_one_level_of_depth() {
    // Three structs: depth 3 reads them, depth 2 refuses the third, as Struct#read(prot, 2) does.
    let bytes = [12, 0, 1, 12, 0, 1, 0, 0, 0];
    let d = nested(3);
    assert_eq!(
        decode(&bytes, Binary, &d, 3).map(|(_, n)| n),
        Ok(bytes.len())
    );
    assert_eq!(decode(&bytes, Binary, &d, 2), Err(CoreError::DepthLimit));
    assert_eq!(decode(&bytes, Binary, &d, 0), Err(CoreError::DepthLimit));
    let (value, _) = decode(&bytes, Binary, &d, 3).unwrap();
    let mut out = Vec::new();
    encode(&value, Binary, &mut out).unwrap();
    assert_eq!(out, bytes);
    // Skipping natively counts containers too: 100 000 nested lists stop at the limit, not at the stack's end.
    let mut deep = vec![15, 0, 1];
    deep.extend(std::iter::repeat_n([15, 0, 0, 0, 1], 100_000).flatten());
    assert_eq!(
        decode(&deep, Binary, &def(vec![]), DEFAULT_DEPTH),
        Err(CoreError::DepthLimit)
    );
}

#[test]
fn reservations_never_exceed_what_the_input_backs() {
    assert_eq!(reservation(i32::MAX as usize, Some(8)), 8);
    assert_eq!(reservation(5000, None), 1024);
    assert_eq!(reservation(3, Some(100)), 3);
    // A list<i32> declaring i32::MAX elements, then 8 bytes: Eof after two elements.
    let d = def(vec![(1, list(scalar(Scalar::I32)))]);
    let mut bytes = vec![15, 0, 1, 8, 0x7f, 0xff, 0xff, 0xff];
    bytes.extend([0; 8]);
    assert_eq!(
        decode(&bytes, Binary, &d, DEFAULT_DEPTH),
        Err(CoreError::Eof {
            needed: 4,
            available: 0
        })
    );
}

#[test]
fn bad_input_gets_the_contract_errors() {
    let d = s_def();
    // An unknown type to skip; STOP as a list's element type.
    assert_eq!(
        decode(&[0x7f, 0, 9, 0], Binary, &d, DEFAULT_DEPTH),
        Err(CoreError::InvalidData)
    );
    assert_eq!(
        decode(&[0x19, 0x10], Compact, &def(vec![]), DEFAULT_DEPTH),
        Err(CoreError::InvalidData)
    );
    assert_eq!(
        decode(
            &[0x0b, 0, 2, 0xff, 0xff, 0xff, 0xff],
            Binary,
            &d,
            DEFAULT_DEPTH
        ),
        Err(CoreError::NegativeSize)
    );
    assert_eq!(
        decode(&[0x1e], Compact, &d, DEFAULT_DEPTH),
        Err(CoreError::UnknownCompactType(14))
    );
    for (encoding, bytes) in both(S_BINARY, S_COMPACT) {
        for cut in 0..bytes.len() {
            assert!(
                matches!(
                    decode(&bytes[..cut], encoding, &d, DEFAULT_DEPTH),
                    Err(CoreError::Eof { .. })
                ),
                "{encoding:?} cut at {cut}"
            );
        }
    }
}

#[test]
fn types_the_codec_does_not_know_are_errors_when_reached() {
    let unknown = TypeDesc {
        code: 99,
        kind: Kind::Unknown,
    };
    let d = def(vec![(1, unknown.clone())]);
    assert_eq!(
        decode(&[99, 0, 1, 0], Binary, &d, DEFAULT_DEPTH),
        Err(CoreError::UnknownReadType(99))
    );
    let v = Value::Struct(&d, vec![Some(Value::I32(1))]);
    let mut out = Vec::new();
    assert_eq!(
        encode(&v, Binary, &mut out),
        Err(CoreError::UnknownWriteType(99))
    );
    assert_eq!(out, [99, 0, 1], "the header was written first");
    assert_eq!(
        encode(&v, Compact, &mut Vec::new()),
        Err(CoreError::UnknownCompactType(99))
    );
    let no_element = def(vec![(
        1,
        TypeDesc {
            code: ttype::LIST.into(),
            kind: Kind::List(None),
        },
    )]);
    let v = Value::Struct(&no_element, vec![Some(Value::List(vec![]))]);
    assert_eq!(
        encode(&v, Binary, &mut Vec::new()),
        Err(CoreError::MissingElementType)
    );
    // Reading, a missing element type skips every element.
    assert_eq!(
        decode(
            &[15, 0, 1, 8, 0, 0, 0, 1, 0, 0, 0, 5, 0],
            Binary,
            &no_element,
            DEFAULT_DEPTH
        ),
        Ok((Value::Struct(&no_element, vec![None]), 13))
    );
}

#[test]
fn a_compact_map_writes_its_size_before_its_types_are_checked() {
    let bad = TypeDesc {
        code: 1,
        kind: Kind::Unknown,
    };
    let d = def(vec![(1, map(bad, scalar(Scalar::I32)))]);
    let v = Value::Struct(
        &d,
        vec![Some(Value::Map(vec![(Value::I32(1), Value::I32(2))]))],
    );
    let mut out = Vec::new();
    assert_eq!(
        encode(&v, Compact, &mut out),
        Err(CoreError::UnknownCompactType(1))
    );
    assert_eq!(out, [0x1b, 0x01]);
}

#[test]
fn values_cross_encodings_and_a_nil_element_does_not_encode() {
    let d = s_def();
    for encoding in [Binary, Compact] {
        let bytes = encoded(&s_value(&d), encoding);
        assert_eq!(
            decode(&bytes, encoding, &d, DEFAULT_DEPTH),
            Ok((s_value(&d), bytes.len()))
        );
    }
    let l = def(vec![(3, list(list(scalar(Scalar::Bool))))]);
    let nil_inside = Value::Struct(&l, vec![Some(Value::List(vec![Value::Nil]))]);
    assert_eq!(
        encode(&nil_inside, Compact, &mut Vec::new()),
        Err(CoreError::Unencodable)
    );
}

#[test]
fn uuids_and_binaries_are_their_bytes() {
    let d = def(vec![(1, scalar(Scalar::Uuid)), (2, scalar(Scalar::Binary))]);
    let id: [u8; 16] = std::array::from_fn(|i| i as u8);
    let v = Value::Struct(
        &d,
        vec![Some(Value::Uuid(id)), Some(Value::Binary(vec![0xff, 0]))],
    );
    let mut binary = vec![16, 0, 1];
    binary.extend(id);
    binary.extend([11, 0, 2, 0, 0, 0, 2, 0xff, 0, 0]);
    let mut compact = vec![0x1d];
    compact.extend(id);
    compact.extend([0x18, 2, 0xff, 0, 0]);
    for (encoding, bytes) in [(Binary, binary), (Compact, compact)] {
        assert_eq!(encoded(&v, encoding), bytes);
        assert_eq!(
            decode(&bytes, encoding, &d, DEFAULT_DEPTH),
            Ok((v.clone(), bytes.len()))
        );
    }
}

/// Before thrift 0.24 the binary protocol answers a negative size (before master, the compact one a size beyond
/// INT32_MAX as one), and the struct decoder of thrift 0.14-0.22 read it as the C accelerator did: a list or set to
/// read is refused, one of other element types is nil with nothing skipped, a map of the declared types is empty.
#[test]
fn before_thrift_0_24_negative_sizes_reach_the_struct_decoder() {
    let mut legacy = Rules::MASTER;
    legacy.negative_sizes = NegativeSizes {
        binary: true,
        compact: true,
    };
    let d = def(vec![
        (1, list(scalar(Scalar::I32))),
        (2, map(scalar(Scalar::I32), scalar(Scalar::I32))),
        (3, scalar(Scalar::String)),
    ]);
    let minus_one = [0xff, 0xff, 0xff, 0xff];
    let cases: Vec<(Vec<u8>, Result<Value, CoreError>)> = vec![
        // A list of i32s declared -1 long.
        (
            [&[15, 0, 1, 8][..], &minus_one, &[0]].concat(),
            Err(CoreError::NegativeContainerSize),
        ),
        // A list of bytes for the i32 list: nil, nothing skipped, then field 3 (a negative length: "").
        (
            [
                &[15, 0, 1, 3][..],
                &minus_one,
                &[11, 0, 3],
                &minus_one,
                &[0],
            ]
            .concat(),
            Ok(Value::Struct(
                &d,
                vec![None, None, Some(Value::String(Vec::new()))],
            )),
        ),
        // A map of the declared types: empty; of others: nil.
        (
            [&[13, 0, 2, 8, 8][..], &minus_one, &[0]].concat(),
            Ok(Value::Struct(
                &d,
                vec![None, Some(Value::Map(vec![])), None],
            )),
        ),
        (
            [&[13, 0, 2, 8, 3][..], &minus_one, &[0]].concat(),
            Ok(Value::Struct(&d, vec![None, None, None])),
        ),
        // An unknown field's negative list: skipped, nothing in it.
        (
            [&[15, 0, 9, 8][..], &minus_one, &[0]].concat(),
            Ok(Value::Struct(&d, vec![None, None, None])),
        ),
    ];
    for (bytes, expected) in cases {
        let got = decode_with(&bytes, Binary, &d, DEFAULT_DEPTH, legacy).map(|(v, _)| v);
        assert_eq!(got, expected, "{bytes:02x?}");
        assert_eq!(
            decode(&bytes, Binary, &d, DEFAULT_DEPTH).map(|(v, _)| v),
            Err(CoreError::NegativeSize)
        );
    }
    // Compact: a size beyond INT32_MAX is the negative int32 of its bits.
    let huge = [0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0];
    assert_eq!(
        decode_with(&huge, Compact, &d, DEFAULT_DEPTH, legacy),
        Err(CoreError::NegativeContainerSize)
    );
    assert_eq!(
        decode(&huge, Compact, &d, DEFAULT_DEPTH),
        Err(CoreError::ContainerSizeLimit)
    );
}
