//! Whole structs and unions through the struct codec the Ruby binding runs (`codec::read_struct`,
//! `codec::write_struct`/`write_union` with the binary and compact encodings), with plain Rust values. The input's
//! first byte says how many of the following bytes describe the definition; the rest is the payload. For each
//! encoding: decoding never panics, makes no more values than it consumes bytes (memory bounded by the input), and a
//! struct it decodes encodes back to bytes that decode to the same value in that encoding and in the other one;
//! encoding is canonical (re-encoding those bytes' value gives the same bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::codec::plain::{
    decode, decode_with, encode, Class, Def, Encoding, Field, Type, Value,
};
use thrift_native_core::codec::{FieldDef, Kind, Scalar, StructDef, TypeDesc, DEFAULT_DEPTH};
use thrift_native_core::wire::{NegativeSizes, Rules, Varint32Rule};
use thrift_native_core::{ttype, CoreError};

/// thrift 0.14-0.22's rules.
const LEGACY: Rules = Rules {
    uuid: false,
    negative_sizes: NegativeSizes {
        binary: true,
        compact: true,
    },
    varint32: Varint32Rule::Wide,
};

/// A definition from bytes: a few fields with small ids (so that compact deltas and long ids both occur), types
/// nested at most 4 deep, some structs unions. Running out of bytes ends the definition.
struct DefBytes<'a>(&'a [u8]);

impl DefBytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn struct_def(&mut self, depth: u32) -> Def {
        let mut fields: Vec<Field> = Vec::new();
        let first = self.next().unwrap_or(0);
        let union = first & 0x80 != 0;
        for _ in 0..first % 6 {
            let Some(id) = self.next() else { break };
            // -4..=27: negative ids, deltas up to 15 and beyond; a repeated id is left out (FIELDS is a Hash).
            let id = i64::from(id % 32) - 4;
            let Some(ty) = self.type_desc(depth) else {
                break;
            };
            if fields.iter().all(|f| f.id != id) {
                fields.push(FieldDef { id, ty, extra: () });
            }
        }
        StructDef::new(fields, union)
    }

    fn type_desc(&mut self, depth: u32) -> Option<Type> {
        let b = self.next()?;
        let leaf = depth >= 4;
        let scalar = |kind, code: u8| TypeDesc {
            code: code.into(),
            kind: Kind::Scalar(kind),
        };
        let boxed = |t: Option<Type>| t.map(Box::new);
        Some(match b % 14 {
            0 => scalar(Scalar::Bool, ttype::BOOL),
            1 => scalar(Scalar::Byte, ttype::BYTE),
            2 => scalar(Scalar::I16, ttype::I16),
            3 => scalar(Scalar::I32, ttype::I32),
            4 => scalar(Scalar::I64, ttype::I64),
            5 => scalar(Scalar::Double, ttype::DOUBLE),
            6 => scalar(Scalar::String, ttype::STRING),
            7 => scalar(Scalar::Binary, ttype::STRING),
            8 => scalar(Scalar::Uuid, ttype::UUID),
            _ if leaf => scalar(Scalar::I32, ttype::I32),
            9 => TypeDesc {
                code: ttype::STRUCT.into(),
                kind: Kind::Struct(Class(Box::new(self.struct_def(depth + 1)))),
            },
            10 => TypeDesc {
                code: ttype::LIST.into(),
                kind: Kind::List(boxed(Some(self.type_desc(depth + 1)?))),
            },
            11 => TypeDesc {
                code: ttype::SET.into(),
                kind: Kind::Set(boxed(Some(self.type_desc(depth + 1)?))),
            },
            _ => TypeDesc {
                code: ttype::MAP.into(),
                kind: Kind::Map(
                    boxed(Some(self.type_desc(depth + 1)?)),
                    boxed(Some(self.type_desc(depth + 1)?)),
                ),
            },
        })
    }
}

/// Why a decoded value may not encode: a nil inside a container (Ruby's writer raises too), or a union whose one
/// field was skipped (Ruby's `Union#write` raises "set_field is not valid for this union!").
fn unencodable(v: &Value<'_>) -> Option<CoreError> {
    fn element(v: &Value<'_>) -> Option<CoreError> {
        match v {
            Value::Nil => Some(CoreError::Unencodable),
            v => unencodable(v),
        }
    }
    match v {
        Value::Struct(def, fields) => {
            if def.is_union() && fields.iter().all(Option::is_none) {
                return Some(CoreError::InvalidUnionField);
            }
            fields.iter().flatten().find_map(unencodable)
        }
        Value::List(items) | Value::Set(items) => items.iter().find_map(element),
        Value::Map(pairs) => pairs.iter().flat_map(|(k, v)| [k, v]).find_map(element),
        _ => None,
    }
}

fn encoded(v: &Value<'_>, encoding: Encoding) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::new();
    encode(v, encoding, &mut out).map(|()| out)
}

fn other(encoding: Encoding) -> Encoding {
    match encoding {
        Encoding::Binary => Encoding::Compact,
        Encoding::Compact => Encoding::Binary,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (def_bytes, payload) = rest.split_at(usize::from(n % 48).min(rest.len()));
    let def = DefBytes(def_bytes).struct_def(0);

    for encoding in [Encoding::Binary, Encoding::Compact] {
        // The rules of a thrift before 0.23 (negative sizes reach the decoder): no panic, no more values than bytes.
        if let Ok((value, consumed)) = decode_with(payload, encoding, &def, DEFAULT_DEPTH, LEGACY) {
            assert!(consumed <= payload.len());
            assert!(value.nodes() <= consumed);
        }
        let Ok((value, consumed)) = decode(payload, encoding, &def, DEFAULT_DEPTH) else {
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
            Err(e) => {
                // The first reason the encoder meets, in field order, need not be the first one found here.
                assert!(
                    unencodable(&value).is_some(),
                    "{e}: {value:?} should have encoded"
                );
                continue;
            }
        };
        assert!(unencodable(&value).is_none(), "{value:?} encoded");
        for again in [encoding, other(encoding)] {
            let bytes = if again == encoding {
                bytes.clone()
            } else {
                encoded(&value, again).expect("encodes in one encoding, so in the other")
            };
            let (decoded, n) = decode(&bytes, again, &def, DEFAULT_DEPTH)
                .unwrap_or_else(|e| panic!("{again:?} {e}: {value:?}"));
            assert_eq!(n, bytes.len());
            assert_eq!(decoded, value, "{again:?}");
            assert_eq!(
                encoded(&decoded, again).unwrap(),
                bytes,
                "{again:?} canonical"
            );
        }
    }
});
