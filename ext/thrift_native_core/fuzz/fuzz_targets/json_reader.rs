//! The JSON reader's steps (`json::JsonIn`, which the Ruby binding runs over a transport's buffer) through the struct
//! codec, with plain Rust values. The input's first byte says how many of the following bytes describe the
//! definition; the rest is the payload, read two ways:
//! - as a JSON document, under thrift 0.14's and master's rules: never a panic, at most as many values as bytes, and
//!   whatever the reader decodes (and the plain encoder takes) is written back by the JSON encoder to a document
//!   that reads as the same value;
//! - as the binary encoding: a struct that decodes is written by the JSON encoder, and that document (with one byte
//!   changed, as the input's last byte says, too) must read back as the same value; the only steps the reader may
//!   decline there are the ones it leaves to Ruby on purpose (subnormal doubles; in master, text that is not UTF-8).
#![no_main]

#[path = "common/schema.rs"]
mod schema;

use libfuzzer_sys::fuzz_target;
use schema::{unencodable, DefBytes};
use thrift_native_core::plain::{decode, decode_json, encode_to, Def, Encoding, Value};
use thrift_native_core::codec::DEFAULT_DEPTH;
use thrift_native_core::json::{Context, JsonOut, JsonRules};
use thrift_native_core::CoreError;

/// The NaN JsonProtocol reads for `"NaN"`, whatever NaN was written.
const RUBY_NAN: u64 = 0xFFF8_0000_0000_0000;

fn json(value: &Value<'_>, uuid: bool) -> Option<Vec<u8>> {
    let mut out = JsonOut::new(Vec::new(), Context::Top, uuid);
    encode_to(value, &mut out).ok()?;
    Some(out.out)
}

/// Whether a value holds what the reader leaves to Ruby: a subnormal double; under master, text that is not UTF-8.
fn declined(v: &Value<'_>, rules: JsonRules) -> bool {
    match v {
        Value::Double(f) => f.is_subnormal(),
        Value::String(s) => rules.utf8 && std::str::from_utf8(s).is_err(),
        Value::Struct(_, fields) => fields.iter().flatten().any(|f| declined(f, rules)),
        Value::List(items) | Value::Set(items) => items.iter().any(|i| declined(i, rules)),
        Value::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| declined(k, rules) || declined(v, rules)),
        _ => false,
    }
}

/// The value as JSON reads it back: every NaN the one Ruby makes; before master, text with raw non-ASCII bytes
/// BINARY (a string field keeps its bytes either way); a UUID the lowercase text `read_uuid` returns.
fn as_read<'d>(v: &Value<'d>, rules: JsonRules) -> Value<'d> {
    let each = |items: &[Value<'d>]| items.iter().map(|i| as_read(i, rules)).collect();
    match v {
        Value::Double(f) if f.is_nan() => Value::Double(f64::from_bits(RUBY_NAN)),
        Value::String(s) if !rules.utf8 && !s.is_ascii() => Value::Binary(s.clone()),
        Value::Uuid(u) => Value::String(thrift_native_core::uuid::format(u).to_vec()),
        Value::Struct(def, fields) => Value::Struct(
            def,
            fields
                .iter()
                .map(|f| f.as_ref().map(|f| as_read(f, rules)))
                .collect(),
        ),
        Value::List(items) => Value::List(each(items)),
        Value::Set(items) => Value::Set(each(items)),
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (as_read(k, rules), as_read(v, rules)))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// A document the reader decodes: bounded by its bytes, and the same value once written again and read back.
fn check_document(doc: &[u8], def: &Def, rules: JsonRules) {
    let Ok((value, consumed)) = decode_json(doc, def, DEFAULT_DEPTH, rules) else {
        return;
    };
    assert!(consumed <= doc.len());
    assert!(
        value.nodes() <= consumed,
        "{} values from {consumed} bytes",
        value.nodes()
    );
    if unencodable(&value).is_some() {
        return;
    }
    // An Integer beyond its field's width is read as it is, and not written back by the plain encoder.
    let Some(again) = json(&value, rules.uuid) else {
        return;
    };
    let (back, n) = decode_json(&again, def, DEFAULT_DEPTH, rules)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&again)));
    assert_eq!(n, again.len());
    assert_eq!(back, as_read(&value, rules));
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (def_bytes, payload) = rest.split_at(usize::from(n % 48).min(rest.len()));
    let def = DefBytes(def_bytes).struct_def(0);

    for rules in [JsonRules::LEGACY, JsonRules::MASTER] {
        check_document(payload, &def, rules);
    }

    let Ok((value, _)) = decode(payload, Encoding::Binary, &def, DEFAULT_DEPTH) else {
        return;
    };
    if unencodable(&value).is_some() {
        return;
    }
    for rules in [JsonRules::LEGACY, JsonRules::MASTER] {
        // Before thrift 0.23 a UUID has no JSON name: the encoder refuses it as the Ruby protocol does.
        let Some(doc) = json(&value, rules.uuid) else {
            continue;
        };
        match decode_json(&doc, &def, DEFAULT_DEPTH, rules) {
            Ok((back, n)) => {
                assert_eq!(n, doc.len());
                assert_eq!(back, as_read(&value, rules));
            }
            Err(CoreError::JsonDeclined) if declined(&value, rules) => {}
            Err(e) => panic!("{e}: {:?}", String::from_utf8_lossy(&doc)),
        }
        if let Some(&last) = payload.last() {
            let mut changed = doc.clone();
            let i = usize::from(last) * 7 % changed.len();
            changed[i] = b"{}[]:,\"\\0123456789eE.+-uNa "[usize::from(last) % 27];
            check_document(&changed, &def, rules);
        }
    }
});
