//! What the struct fuzz targets share: a struct definition drawn from the input's bytes, and why a decoded value may
//! not encode.

use thrift_native_core::plain::{Class, Def, Field, Type, Value};
use thrift_native_core::codec::{FieldDef, Kind, Scalar, StructDef, TypeDesc};
use thrift_native_core::{ttype, CoreError};

/// A definition from bytes: a few fields with small ids (so that compact deltas and long ids both occur), types
/// nested at most 4 deep, some structs unions. Running out of bytes ends the definition.
pub struct DefBytes<'a>(pub &'a [u8]);

impl DefBytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    pub fn struct_def(&mut self, depth: u32) -> Def {
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
pub fn unencodable(v: &Value<'_>) -> Option<CoreError> {
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
