//! Whole structs decoded by a schema, in both encodings. The input's first byte says how many of the following
//! bytes describe the schema; the rest is the payload. For each encoding: decoding never panics, takes no more
//! values than bytes (memory bounded by the input), and a struct it decodes encodes back to bytes that decode to
//! the same value in that encoding and in the other one; and encoding is canonical (re-encoding those is a no-op).
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::schema::{
    decode, encode, EncodeError, Encoding, Schema, StructSchema, Value, DEFAULT_DEPTH,
};

/// A schema from bytes: a few fields with small ids (so that compact deltas and long ids both occur), types
/// nested at most 4 deep. Running out of bytes ends the schema.
struct SchemaBytes<'a>(&'a [u8]);

impl SchemaBytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn struct_schema(&mut self, depth: u32) -> StructSchema {
        let mut fields = Vec::new();
        let count = self.next().map_or(0, |b| b % 6);
        for _ in 0..count {
            let Some(id) = self.next() else { break };
            // -4..=27: negative ids, deltas up to 15 and beyond.
            let id = i16::from(id % 32) - 4;
            let Some(t) = self.type_schema(depth) else {
                break;
            };
            fields.push((id, t));
        }
        StructSchema { fields }
    }

    fn type_schema(&mut self, depth: u32) -> Option<Schema> {
        let b = self.next()?;
        let leaf = depth >= 4;
        Some(match b % 13 {
            0 => Schema::Bool,
            1 => Schema::Byte,
            2 => Schema::I16,
            3 => Schema::I32,
            4 => Schema::I64,
            5 => Schema::Double,
            6 => Schema::String,
            7 => Schema::Uuid,
            _ if leaf => Schema::I32,
            8 => Schema::Struct(self.struct_schema(depth + 1)),
            9 => Schema::List(Box::new(self.type_schema(depth + 1)?)),
            10 => Schema::Set(Box::new(self.type_schema(depth + 1)?)),
            _ => Schema::Map(
                Box::new(self.type_schema(depth + 1)?),
                Box::new(self.type_schema(depth + 1)?),
            ),
        })
    }
}

fn contains_nil_element(v: &Value) -> bool {
    match v {
        Value::Struct(fields) => fields.iter().any(|(_, v)| contains_nil_element(v)),
        Value::List(_, items) | Value::Set(_, items) => items
            .iter()
            .any(|v| matches!(v, Value::Nil) || contains_nil_element(v)),
        Value::Map(_, _, pairs) => pairs.iter().any(|(k, v)| {
            matches!(k, Value::Nil)
                || matches!(v, Value::Nil)
                || contains_nil_element(k)
                || contains_nil_element(v)
        }),
        _ => false,
    }
}

fn encoded(v: &Value, encoding: Encoding) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    encode(v, encoding, &mut out).map(|()| out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (schema_bytes, payload) = rest.split_at(usize::from(n % 48).min(rest.len()));
    let schema = SchemaBytes(schema_bytes).struct_schema(0);

    for encoding in [Encoding::Binary, Encoding::Compact] {
        let Ok((value, consumed)) = decode(payload, encoding, &schema, DEFAULT_DEPTH) else {
            continue;
        };
        assert!(consumed <= payload.len());
        assert!(
            value.nodes() <= consumed,
            "{} values from {consumed} bytes",
            value.nodes()
        );
        let bytes = match encoded(&value, encoding) {
            Ok(bytes) => bytes,
            Err(EncodeError::NilElement) => {
                assert!(contains_nil_element(&value));
                continue;
            }
            Err(e) => panic!("{e}: {value:?}"),
        };
        for again in [encoding, other(encoding)] {
            let bytes = if again == encoding {
                bytes.clone()
            } else {
                encoded(&value, again).expect("encodes in one encoding, so in the other")
            };
            let (decoded, n) = decode(&bytes, again, &schema, DEFAULT_DEPTH)
                .unwrap_or_else(|e| panic!("{again:?} {e}: {value:?}"));
            assert_eq!(n, bytes.len());
            assert_eq!(decoded, value, "{again:?}");
            assert_eq!(encoded(&decoded, again).unwrap(), bytes, "{again:?} canonical");
        }
    }
});

fn other(encoding: Encoding) -> Encoding {
    match encoding {
        Encoding::Binary => Encoding::Compact,
        Encoding::Compact => Encoding::Binary,
    }
}
