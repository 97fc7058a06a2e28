//! Thrift's JSON protocol (TJSONProtocol) as the pure-Ruby `Thrift::JsonProtocol` writes it: contexts and their
//! separators, numbers quoted where they are object keys, doubles as Ruby's `Float#to_s` writes them, strings escaped
//! byte by byte, binaries as padded base64, and the type names. Here: the type names and the [`Context`]s both
//! directions share; `write.rs`: [`JsonOut`], the struct codec's encoder; `read.rs`: [`JsonIn`], its reader.

mod read;
mod write;

pub use read::{JsonIn, JsonRules, JsonSlice};
pub use write::{escape_string, format_double, JsonOut};

use crate::ttype;

/// The JSON name of a Thrift type (`JsonProtocol#get_type_name_for_type_id`); UUID's only for a thrift that has it.
pub fn type_name(t: i64, uuid: bool) -> Option<&'static [u8]> {
    let name: &[u8] = match u8::try_from(t).ok()? {
        ttype::BOOL => b"tf",
        ttype::BYTE => b"i8",
        ttype::DOUBLE => b"dbl",
        ttype::I16 => b"i16",
        ttype::I32 => b"i32",
        ttype::I64 => b"i64",
        ttype::STRING => b"str",
        ttype::STRUCT => b"rec",
        ttype::MAP => b"map",
        ttype::SET => b"set",
        ttype::LIST => b"lst",
        ttype::UUID if uuid => b"uid",
        _ => return None,
    };
    Some(name)
}

/// The Thrift type a JSON type name names (`JsonProtocol#get_type_id_for_type_name`).
pub fn type_id(name: &[u8], uuid: bool) -> Option<i64> {
    let t = match name {
        b"tf" => ttype::BOOL,
        b"i8" => ttype::BYTE,
        b"dbl" => ttype::DOUBLE,
        b"i16" => ttype::I16,
        b"i32" => ttype::I32,
        b"i64" => ttype::I64,
        b"str" => ttype::STRING,
        b"rec" => ttype::STRUCT,
        b"map" => ttype::MAP,
        b"set" => ttype::SET,
        b"lst" => ttype::LIST,
        b"uid" if uuid => ttype::UUID,
        _ => return None,
    };
    Some(t.into())
}

/// Where an element sits, which decides the separator before it and whether a number is quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// The top level (`JSONContext`): no separators, numbers bare.
    Top,
    /// An object (`JSONPairContext`): keys and values alternate, `:` before a value, `,` before every key but the
    /// first; a key's numbers are quoted.
    Pair { first: bool, colon: bool },
    /// An array (`JSONListContext`): `,` before every element but the first.
    List { first: bool },
}

impl Context {
    pub const OBJECT: Context = Context::Pair {
        first: true,
        colon: true,
    };
    pub const ARRAY: Context = Context::List { first: true };

    /// Steps to the next element (`JSONContext#write` and `#read`): the separator before it, if any.
    #[inline(always)]
    pub fn step(&mut self) -> Option<u8> {
        match self {
            Context::Top => None,
            Context::Pair { first, colon } => {
                if std::mem::replace(first, false) {
                    *colon = true;
                    return None;
                }
                let separator = if *colon { b':' } else { b',' };
                *colon = !*colon;
                Some(separator)
            }
            Context::List { first } => (!std::mem::replace(first, false)).then_some(b','),
        }
    }

    /// Whether the element stepped to is an object key, whose numbers are quoted (`escapeNum`).
    #[inline(always)]
    pub fn escape_num(&self) -> bool {
        matches!(self, Context::Pair { colon: true, .. })
    }
}

#[cfg(test)]
mod tests;
