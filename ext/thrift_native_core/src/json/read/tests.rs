//! The JSON reader's steps, pinned to what pure Ruby thrift's `JsonProtocol` reads (0.14 and master, as run in the
//! research for this reader): values, bytes taken and the byte held, and the cases left to the Ruby methods.

use super::*;
use crate::codec::tests::{s_def, s_value};
use crate::codec::{Kind, TypeDesc};
use crate::json::tests::{def, scalar};
use crate::json::JsonOut;
use crate::plain::{decode_json, encode_to, Class, Def, PlainBuilder, Type, Value};

/// One scalar read at the top level (or in `context`): the value, bytes taken, the byte held after.
fn read_in(
    context: Context,
    kind: Scalar,
    input: &[u8],
    rules: JsonRules,
) -> Option<(Value<'static>, usize, Option<u8>)> {
    let mut json = JsonIn::new(context, None, rules);
    let (v, n) = json.scalar(kind, input, &mut PlainBuilder::default())?;
    Some((v, n, json.held()))
}

fn read(kind: Scalar, input: &[u8]) -> Option<(Value<'static>, usize, Option<u8>)> {
    read_in(Context::Top, kind, input, JsonRules::LEGACY)
}

#[test]
fn integers_take_their_digits_and_hold_the_byte_after_them() {
    assert_eq!(
        read(Scalar::I32, b"12,"),
        Some((Value::I32(12), 3, Some(b',')))
    );
    assert_eq!(read(Scalar::I32, b"+5,").map(|r| r.0), Some(Value::I32(5)));
    assert_eq!(read(Scalar::I32, b"-0]").map(|r| r.0), Some(Value::I32(0)));
    assert_eq!(
        read(Scalar::I64, b"-9223372036854775808}").map(|r| r.0),
        Some(Value::I64(i64::MIN))
    );
    // No range check: a byte of 300 is the Integer 300.
    assert_eq!(
        read(Scalar::Byte, b"300,").map(|r| r.0),
        Some(Value::I64(300))
    );
    // read_bool is read_byte != 0.
    assert_eq!(
        read(Scalar::Bool, b"2,").map(|r| r.0),
        Some(Value::Bool(true))
    );
    assert_eq!(
        read(Scalar::Bool, b"0,").map(|r| r.0),
        Some(Value::Bool(false))
    );
    // The scan stops at the first byte that is not a number character: Ruby reads 1 and holds `_`.
    assert_eq!(
        read(Scalar::I32, b"1_000,"),
        Some((Value::I32(1), 2, Some(b'_')))
    );
    // Quoted as an object key.
    let key = Context::Pair {
        first: true,
        colon: true,
    };
    assert_eq!(
        read_in(key, Scalar::I32, b"\"7\":", JsonRules::LEGACY),
        Some((Value::I32(7), 3, None))
    );
}

#[test]
fn integers_ruby_reads_its_own_way_are_left_to_it() {
    // Octal (017 is 15), a number at the very end (EOFError on the peek), exponents and fractions (errors), an empty
    // number, beyond i64 (a Bignum), a number bare where a key is quoted.
    for input in [
        &b"017,"[..],
        b"00,",
        b"123",
        b"1e3,",
        b"1.0,",
        b",",
        b"--1,",
        b"99999999999999999999,",
        b"\"1\",",
    ] {
        assert_eq!(read(Scalar::I32, input), None, "{input:?}");
    }
    let key = Context::Pair {
        first: true,
        colon: true,
    };
    assert_eq!(read_in(key, Scalar::I32, b"7:", JsonRules::LEGACY), None);
}

#[test]
fn doubles_bare_quoted_specials_and_keys() {
    assert_eq!(
        read(Scalar::Double, b"1.5,"),
        Some((Value::Double(1.5), 4, Some(b',')))
    );
    assert_eq!(
        read(Scalar::Double, b"1,").map(|r| r.0),
        Some(Value::Double(1.0))
    );
    assert_eq!(
        read(Scalar::Double, b".5,").map(|r| r.0),
        Some(Value::Double(0.5))
    );
    assert_eq!(
        read(Scalar::Double, b"1E+3,").map(|r| r.0),
        Some(Value::Double(1000.0))
    );
    assert_eq!(
        read(Scalar::Double, b"-0.0,").map(|r| r.0),
        Some(Value::Double(-0.0))
    );
    // "NaN" is (+1.0/0.0)/(+1.0/0.0): the x86 default NaN, sign bit set.
    let (nan, n, held) = read(Scalar::Double, b"\"NaN\",").unwrap();
    assert!(matches!(nan, Value::Double(f) if f.to_bits() == 0xFFF8_0000_0000_0000));
    assert_eq!((n, held), (5, None));
    assert_eq!(
        read(Scalar::Double, b"\"-Infinity\"").map(|r| r.0),
        Some(Value::Double(f64::NEG_INFINITY))
    );
    let key = Context::Pair {
        first: true,
        colon: true,
    };
    assert_eq!(
        read_in(key, Scalar::Double, b"\"1.5\":", JsonRules::LEGACY).map(|r| r.0),
        Some(Value::Double(1.5))
    );
    // Left to Ruby: "5." and "1.e3" (errors), quoted outside a key ("Numeric data unexpectedly quoted"), bare
    // where a key is quoted, what only Float() reads (hex, underscores, blanks), overflow, subnormals.
    for input in [
        &b"5.,"[..],
        b"1.e3,",
        b"\"1.5\",",
        b"Infinity,",
        b"1e400,",
        b"1e-320,",
        b"1e0005,",
    ] {
        assert_eq!(read(Scalar::Double, input), None, "{input:?}");
    }
    for input in [&b"1.5:"[..], b"\"0x10\":", b"\" 1.5\":", b"\"1_0\":"] {
        assert_eq!(read_in(key, Scalar::Double, input, JsonRules::LEGACY), None);
    }
}

#[test]
fn strings_unescape_and_take_their_encoding_by_thrift_version() {
    let s = |v: &[u8]| Value::String(v.to_vec());
    let b = |v: &[u8]| Value::Binary(v.to_vec());
    let legacy = |input: &[u8]| read(Scalar::String, input).map(|r| r.0);
    let master =
        |input: &[u8]| read_in(Context::Top, Scalar::String, input, JsonRules::MASTER).map(|r| r.0);
    assert_eq!(legacy(b"\"abc\""), Some(s(b"abc")));
    assert_eq!(legacy(b"\"\""), Some(s(b"")));
    assert_eq!(
        legacy(b"\"a\\\"\\\\\\/\\b\\f\\n\\r\\tz\""),
        Some(s(b"a\"\\/\x08\x0c\n\r\tz"))
    );
    // Raw control characters are taken as they are.
    assert_eq!(legacy(b"\"\x01\x1f\""), Some(s(b"\x01\x1f")));
    // Before master: raw non-ASCII bytes make a BINARY string, escaped non-ASCII a UTF-8 one.
    assert_eq!(legacy("\"café\"".as_bytes()), Some(b("café".as_bytes())));
    assert_eq!(legacy(b"\"caf\\u00e9\""), Some(s("café".as_bytes())));
    assert_eq!(legacy(b"\"caf\xe9\""), Some(b(b"caf\xe9")));
    assert_eq!(master("\"café\"".as_bytes()), Some(s("café".as_bytes())));
    assert_eq!(master(b"\"\\uD83D\\uDE00\""), Some(s("😀".as_bytes())));
    assert_eq!(master(b"\"\\ud83d\\uDe00\""), Some(s("😀".as_bytes())));
    // Left to Ruby: raw and escaped non-ASCII together (Encoding::CompatibilityError), lenient or surrogate escapes
    // before master (String#hex, RangeError), invalid UTF-8 in master, bad escapes, the end of the bytes.
    for input in [
        "\"é\\u00e9\"".as_bytes(),
        b"\"\\u12G4\"",
        b"\"\\u 123\"",
        b"\"\\uD83D\\uDE00\"",
        b"\"\\x\"",
        b"\"abc",
        b"\"\\u123\"",
    ] {
        assert_eq!(legacy(input), None, "{input:?}");
    }
    for input in [
        &b"\"caf\xe9\""[..],
        b"\"\\uD83D\"",
        b"\"\\uD83Dx\"",
        b"\"\\uDE00\"",
        b"\"\\uD83D\\u0041\"",
    ] {
        assert_eq!(master(input), None, "{input:?}");
    }
}

#[test]
fn binaries_are_base64_padded_as_the_ruby_method_pads_them() {
    let bin = |input: &[u8]| read(Scalar::Binary, input).map(|r| r.0);
    let b = |v: &[u8]| Some(Value::Binary(v.to_vec()));
    assert_eq!(bin(b"\"YQ\""), b(b"a"));
    assert_eq!(bin(b"\"YQ=\""), b(b"a"));
    assert_eq!(bin(b"\"YQ==\""), b(b"a"));
    assert_eq!(bin(b"\"YWI\""), b(b"ab"));
    assert_eq!(bin(b"\"\""), b(b""));
    assert_eq!(bin(b"\"+/8\""), b(b"\xfb\xff"));
    assert_eq!(
        bin(b"\"dGhpcyBpcyBhIGJhc2U2NCBzdHJpbmc=\""),
        b(b"this is a base64 string")
    );
    // ArgumentError "invalid base64" in Ruby.
    for input in [
        &b"\"Y\""[..],
        b"\"YR\"",
        b"\"YR==\"",
        b"\"AAAAA\"",
        b"\"YQ====\"",
        b"\"=YQ\"",
        b"\"YQ==YQ==\"",
        b"\"YQ==YQ\"",
        b"\"Y Q=\"",
        b"\"-_8\"",
        b"\"\\u0059Q\"",
    ] {
        assert_eq!(bin(input), None, "{input:?}");
    }
}

#[test]
fn uuids_are_read_as_lowercase_text_where_thrift_has_them() {
    let text = b"\"00112233-4455-6677-8899-AABBCCDDEEFF\"";
    let v = read_in(Context::Top, Scalar::Uuid, text, JsonRules::MASTER).map(|r| r.0);
    assert_eq!(
        v,
        Some(Value::String(
            b"00112233-4455-6677-8899-aabbccddeeff".to_vec()
        ))
    );
    assert_eq!(read(Scalar::Uuid, text), None);
    let short = read_in(Context::Top, Scalar::Uuid, b"\"0011\"", JsonRules::MASTER);
    assert_eq!(short, None);
}

#[test]
fn headers_separators_and_what_a_failed_step_leaves() {
    let mut json = JsonIn::new(Context::Top, None, JsonRules::LEGACY);
    let input = b"{\"1\":{\"i32\":7},\"2\":{\"lst\":[\"str\",2,\"a\",\"b\"]}}";
    let mut pos = 0;
    pos += json.struct_begin(&input[pos..]).unwrap();
    let (f, n) = json.field_begin(&input[pos..]).unwrap();
    assert_eq!((f.ttype, f.id), (8, Some(1)));
    pos += n;
    let (v, n) = json
        .scalar(Scalar::I32, &input[pos..], &mut PlainBuilder::default())
        .unwrap();
    assert_eq!((v, json.held()), (Value::I32(7), Some(b'}')));
    pos += n;
    json.field_end(&input[pos..]).unwrap();
    // A step that fails leaves everything as it was: here the list header's size is negative.
    let bad = b",\"2\":{\"lst\":[\"str\",-2,";
    let (f, n) = json.field_begin(bad).unwrap();
    assert_eq!(f.ttype, 15);
    let snapshot = json.clone();
    assert_eq!(json.list_begin(&bad[n..]), None);
    assert_eq!(
        (json.held(), json.context(), json.stack()),
        (snapshot.held(), snapshot.context(), snapshot.stack())
    );
    assert_eq!(json.stack().len(), 2);
    let (f, n) = JsonIn::new(Context::Top, None, JsonRules::LEGACY)
        .field_begin(b"}")
        .unwrap();
    assert_eq!((f.ttype, n), (0, 1));
}

fn everything() -> Def {
    let inner = def(vec![(1, scalar(4, Scalar::Double))]);
    let strukt = |d: Def| TypeDesc {
        code: 12,
        kind: Kind::Struct(Class(Box::new(d))),
    };
    let boxed = |t: Type| Some(Box::new(t));
    def(vec![
        (1, scalar(2, Scalar::Bool)),
        (2, scalar(3, Scalar::Byte)),
        (3, scalar(6, Scalar::I16)),
        (4, scalar(10, Scalar::I64)),
        (5, scalar(4, Scalar::Double)),
        (6, scalar(11, Scalar::String)),
        (7, scalar(11, Scalar::Binary)),
        (
            8,
            TypeDesc {
                code: 13,
                kind: Kind::Map(
                    boxed(scalar(4, Scalar::Double)),
                    boxed(strukt(inner.clone())),
                ),
            },
        ),
        (
            9,
            TypeDesc {
                code: 14,
                kind: Kind::Set(boxed(scalar(8, Scalar::I32))),
            },
        ),
        (10, strukt(inner)),
    ])
}

#[test]
fn structs_written_by_the_encoder_read_back_whole() {
    let d = s_def();
    let v = s_value(&d);
    let mut out = JsonOut::new(Vec::new(), Context::Top, true);
    encode_to(&v, &mut out).unwrap();
    let (back, n) = decode_json(&out.out, &d, 64, JsonRules::MASTER).unwrap();
    assert_eq!((back, n), (v, out.out.len()));

    let d = everything();
    let inner = match &d.fields()[9].ty.kind {
        Kind::Struct(Class(i)) => i.as_ref(),
        _ => unreachable!(),
    };
    let map_value = match &d.fields()[7].ty.kind {
        Kind::Map(_, Some(v)) => match &v.kind {
            Kind::Struct(Class(i)) => i.as_ref(),
            _ => unreachable!(),
        },
        _ => unreachable!(),
    };
    let point = |f: f64| Value::Struct(inner, vec![Some(Value::Double(f))]);
    let in_map = |f: f64| Value::Struct(map_value, vec![Some(Value::Double(f))]);
    let v = Value::Struct(
        &d,
        vec![
            Some(Value::Bool(true)),
            Some(Value::Byte(-5)),
            Some(Value::I16(300)),
            Some(Value::I64(1 << 40)),
            Some(Value::Double(f64::INFINITY)),
            Some(Value::String(b"q\"\\\n\x01/".to_vec())),
            Some(Value::Binary(b"\x00\xff\x10".to_vec())),
            Some(Value::Map(vec![
                (Value::Double(1.5), in_map(-0.0)),
                (
                    Value::Double(f64::from_bits(0xFFF8_0000_0000_0000)),
                    in_map(1e300),
                ),
            ])),
            Some(Value::Set(vec![Value::I32(1), Value::I32(-2)])),
            Some(point(0.1)),
        ],
    );
    let mut out = JsonOut::new(Vec::new(), Context::Top, false);
    encode_to(&v, &mut out).unwrap();
    for rules in [JsonRules::LEGACY, JsonRules::MASTER] {
        let (back, n) = decode_json(&out.out, &d, 64, rules).unwrap();
        assert_eq!((back, n), (v.clone(), out.out.len()));
    }
    // Unknown fields, of every kind, are skipped whole.
    let nothing = def(vec![]);
    let (back, _) = decode_json(&out.out, &nothing, 64, JsonRules::LEGACY).unwrap();
    assert_eq!(back, Value::empty(&nothing));
}
