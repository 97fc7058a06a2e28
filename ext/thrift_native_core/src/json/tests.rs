//! The JSON encoder's bytes, pinned to what pure Ruby thrift 0.14's `JsonProtocol` writes (the same in 0.17, 0.19
//! and master for these values).

use super::*;
use crate::codec::tests::{s_def, s_value};
use crate::codec::{FieldDef, Kind, Scalar, StructDef, TypeDesc};
use crate::plain::{encode_to, Def, Type, Value};
use crate::CoreError;

pub(crate) fn scalar(code: u8, kind: Scalar) -> Type {
    TypeDesc {
        code: code.into(),
        kind: Kind::Scalar(kind),
    }
}

fn boxed(t: Type) -> Option<Box<Type>> {
    Some(Box::new(t))
}

pub(crate) fn def(fields: Vec<(i64, Type)>) -> Def {
    let fields = fields
        .into_iter()
        .map(|(id, ty)| FieldDef { id, ty, extra: () })
        .collect();
    StructDef::new(fields, false)
}

fn json(v: &Value<'_>, context: Context) -> (Vec<u8>, Context) {
    let mut out = JsonOut::new(Vec::new(), context, false);
    encode_to(v, &mut out).expect("encodes");
    let context = out.context();
    (out.out, context)
}

/// 667020902720176.25 exactly, halfway between two shortest texts.
const TIE: f64 = 667020902720176.0 + 0.25;

fn double_text(f: f64) -> String {
    let mut out = Vec::new();
    format_double(f, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn doubles_are_written_as_ruby_float_to_s_writes_them() {
    let cases: &[(f64, &str)] = &[
        (1.0, "1.0"),
        (1.5, "1.5"),
        (12.3, "12.3"),
        (-3.21, "-3.21"),
        (0.1, "0.1"),
        (0.0001, "0.0001"),
        (1e-5, "1.0e-05"),
        (9.999e-5, "9.999e-05"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e14, "100000000000000.0"),
        (1e15, "1.0e+15"),
        (1e16, "1.0e+16"),
        (1e20, "1.0e+20"),
        (1e100, "1.0e+100"),
        (123456789012345.6, "123456789012345.6"),
        (1626983080611305.8, "1626983080611305.8"),
        (1234567890123456.0, "1.234567890123456e+15"),
        // Two shortest candidates, ...176.2 and ...176.3: Ruby takes the even one.
        (TIE, "667020902720176.2"),
        (5e-324, "5.0e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-2.5e-7, "-2.5e-07"),
    ];
    for &(f, text) in cases {
        assert_eq!(double_text(f), text, "{f:e}");
    }
}

#[test]
fn contexts_separate_and_quote_as_the_ruby_contexts() {
    let mut pair = Context::OBJECT;
    let steps: Vec<(Option<u8>, bool)> = (0..5).map(|_| (pair.step(), pair.escape_num())).collect();
    assert_eq!(
        steps,
        [
            (None, true),
            (Some(b':'), false),
            (Some(b','), true),
            (Some(b':'), false),
            (Some(b','), true)
        ]
    );
    let mut list = Context::ARRAY;
    let steps: Vec<_> = (0..3).map(|_| (list.step(), list.escape_num())).collect();
    assert_eq!(
        steps,
        [(None, false), (Some(b','), false), (Some(b','), false)]
    );
    let mut top = Context::Top;
    assert_eq!(
        (top.step(), top.step(), top.escape_num()),
        (None, None, false)
    );
}

#[test]
fn strings_escape_quotes_backslashes_and_control_characters_only() {
    let mut out = Vec::new();
    escape_string(
        "q\"\\/\u{8}\t\n\u{c}\r\u{1}\u{1f}\u{7f}é€😀".as_bytes(),
        &mut out,
    );
    let mut expected = br#"q\"\\/\b\t\n\f\r\u0001\u001f"#.to_vec();
    expected.extend_from_slice("\u{7f}é€😀".as_bytes());
    assert_eq!(out, expected);
    out.clear();
    escape_string(&[0x00, 0x0b, 0x1a, 0x1b, 0x20, 0x2f, 0xff], &mut out);
    assert_eq!(
        out,
        br#"\u0000\u000b\u001a\u001b /"#.iter().copied().chain([0xff]).collect::<Vec<u8>>()
    );
}

#[test]
fn type_names_round_trip_and_uuid_needs_a_thrift_that_has_it() {
    for t in [2i64, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15] {
        let name = type_name(t, false).unwrap();
        assert_eq!(type_id(name, false), Some(t));
    }
    assert_eq!(type_name(16, false), None);
    assert_eq!(type_name(16, true), Some(&b"uid"[..]));
    assert_eq!(type_id(b"uid", false), None);
    assert_eq!(type_id(b"uid", true), Some(16));
    for unknown in [0i64, 1, 5, 17, -1] {
        assert_eq!(type_name(unknown, true), None);
    }
}

/// pure Ruby 0.14: `Struct#write` with `JsonProtocol` over a MemoryBufferTransport, of the codec tests' struct
/// with every kind of field (`S`).
#[test]
fn structs_are_written_as_the_ruby_json_protocol_writes_them() {
    let s = s_def();
    let v = s_value(&s);
    let expected = br#"{"-3":{"i16":-300},"1":{"i32":42},"2":{"str":"hi"},"3":{"lst":["tf",2,1,0]},"4":{"map":["str","i64",1,{"a":-1}]},"5":{"tf":1},"20":{"rec":{"1":{"dbl":1.5}}}}"#;
    assert_eq!(json(&v, Context::Top).0, expected.to_vec());
}

#[test]
fn map_keys_are_quoted_specials_always_and_binaries_are_base64() {
    let dbl = || scalar(4, Scalar::Double);
    let map = |k: Type, v: Type| TypeDesc {
        code: 13,
        kind: Kind::Map(boxed(k), boxed(v)),
    };
    let k = def(vec![
        (1, map(scalar(8, Scalar::I32), scalar(11, Scalar::String))),
        (2, map(dbl(), dbl())),
        (
            3,
            TypeDesc {
                code: 14,
                kind: Kind::Set(boxed(dbl())),
            },
        ),
        (4, scalar(11, Scalar::Binary)),
        (
            5,
            TypeDesc {
                code: 15,
                kind: Kind::List(boxed(map(scalar(2, Scalar::Bool), scalar(3, Scalar::Byte)))),
            },
        ),
        (7, dbl()),
        (8, scalar(10, Scalar::I64)),
    ]);
    let v = Value::Struct(
        &k,
        vec![
            Some(Value::Map(vec![
                (Value::I32(1), Value::String(b"a".to_vec())),
                (Value::I32(-2), Value::String(b"b".to_vec())),
            ])),
            Some(Value::Map(vec![
                (Value::Double(1.5), Value::Double(2.5)),
                (Value::Double(f64::NAN), Value::Double(f64::NEG_INFINITY)),
                (Value::Double(1e20), Value::Double(1e-5)),
            ])),
            Some(Value::Set(vec![Value::Double(1.0)])),
            Some(Value::Binary(vec![0xfb, 0xff, 0xbf])),
            Some(Value::List(vec![
                Value::Map(vec![(Value::Bool(true), Value::Byte(-1))]),
                Value::Map(vec![]),
            ])),
            Some(Value::Double(TIE)),
            Some(Value::I64(i64::MIN)),
        ],
    );
    let expected = br#"{"1":{"map":["i32","str",2,{"1":"a","-2":"b"}]},"2":{"map":["dbl","dbl",3,{"1.5":2.5,"NaN":"-Infinity","1.0e+20":1.0e-05}]},"3":{"set":["dbl",1,1.0]},"4":{"str":"+/+/"},"5":{"lst":["map",2,["tf","i8",1,{"1":-1}],["tf","i8",0,{}]]},"7":{"dbl":667020902720176.2},"8":{"i64":-9223372036854775808}}"#;
    assert_eq!(json(&v, Context::Top).0, expected.to_vec());
}

#[test]
fn a_struct_inside_a_context_takes_its_separator_and_leaves_it_advanced() {
    let d = def(vec![(1, scalar(8, Scalar::I32))]);
    let v = Value::Struct(&d, vec![Some(Value::I32(7))]);
    // The second element of a list (as a message's argument struct after its header).
    let after_first = Context::List { first: false };
    let (bytes, context) = json(&v, after_first);
    assert_eq!(bytes, br#",{"1":{"i32":7}}"#.to_vec());
    assert_eq!(context, after_first);
    // A value after its key: `:`, and the next element is a key.
    let (bytes, context) = json(
        &v,
        Context::Pair {
            first: false,
            colon: true,
        },
    );
    assert_eq!(bytes, br#":{"1":{"i32":7}}"#.to_vec());
    assert_eq!(
        context,
        Context::Pair {
            first: false,
            colon: false
        }
    );
}

#[test]
fn an_unknown_type_fails_after_what_the_ruby_method_writes_first() {
    let d = def(vec![(
        1,
        TypeDesc {
            code: 15,
            kind: Kind::List(boxed(TypeDesc {
                code: 16,
                kind: Kind::Scalar(Scalar::Uuid),
            })),
        },
    )]);
    let v = Value::Struct(&d, vec![Some(Value::List(vec![]))]);
    let mut out = JsonOut::new(Vec::new(), Context::Top, false);
    assert_eq!(encode_to(&v, &mut out), Err(CoreError::UnknownJsonType(16)));
    assert_eq!(out.out, br#"{"1":{"lst":["#.to_vec());
    let mut out = JsonOut::new(Vec::new(), Context::Top, true);
    encode_to(&v, &mut out).unwrap();
    assert_eq!(out.out, br#"{"1":{"lst":["uid",0]}}"#.to_vec());
}
