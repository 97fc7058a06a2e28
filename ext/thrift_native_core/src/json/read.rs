//! Reading Thrift's JSON protocol as the pure-Ruby `Thrift::JsonProtocol` reads it, one protocol step at a time (a
//! struct's or field's start or end, a container header, a value), for the struct codec.
//!
//! [`JsonIn`] keeps the protocol's state: its contexts, and the byte its lookahead reader holds (the Ruby protocol
//! peeks one byte past every bare number, at the start of every field header and of every double). A step reads from
//! the bytes a transport holds now and either completes exactly as the Ruby methods would (the same value, the same
//! bytes taken from the transport) or **declines**, leaving the state as it was. It declines whatever it does not
//! read the common way: a number that is octal, out of range or long, a double Ruby's `Float()` reads leniently, a
//! lenient or surrogate `\u` escape (before thrift master), a string mixing raw and escaped non-ASCII text, a
//! non-canonical base64, a negative or huge size, an unknown type name, a syntax error, the end of the bytes. The
//! binding then calls the protocol's own method for that step and the rest, which gives the Ruby library's result or
//! exception; so a step never has to reproduce an error, only the common way, exactly.
//!
//! [`JsonSlice`] (`slice.rs`) runs the steps over a byte slice as a codec `Source` (declining is then
//! `CoreError::JsonDeclined`), so that cargo tests and fuzzers drive these same steps; `step.rs` holds the steps.

mod slice;
mod step;

use std::ops::Range;

use self::step::integer_value;
use super::Context;
use crate::codec::{FieldBegin, ListBegin, MapBegin, Scalar, Values};
use crate::ttype;

pub use self::slice::JsonSlice;

/// A message header as `read_message_begin` returns it: the name, the message type and the sequence id.
pub type MessageHeader<T> = (T, i64, i64);

/// How the loaded thrift's JsonProtocol reads text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonRules {
    /// The library knows UUID (`"uid"`, thrift 0.23 on).
    pub uuid: bool,
    /// Thrift master's strings: always UTF-8 (invalid text refused), surrogate pairs joined. Before, a string with
    /// raw non-ASCII bytes was BINARY, one with escaped non-ASCII characters UTF-8.
    pub utf8: bool,
}

impl JsonRules {
    pub const LEGACY: JsonRules = JsonRules {
        uuid: false,
        utf8: false,
    };
    pub const MASTER: JsonRules = JsonRules {
        uuid: true,
        utf8: true,
    };
}

/// Bare numbers longer than this are left to Ruby (`Float()` reads at most 60 significant digits its own way).
const MAX_NUMBER: usize = 40;

/// How deep a native skip nests before it leaves the whole skip to Ruby (thrift 0.24's `skip` stops at 64).
const MAX_SKIP_DEPTH: usize = 32;

/// The bytes of the protocol's stream as a step reads them: the held byte first, then the transport's.
struct Cursor<'a> {
    held: Option<u8>,
    bytes: &'a [u8],
    /// Bytes taken from `bytes` (the held one included, once taken).
    pos: usize,
}

impl Cursor<'_> {
    /// `LookaheadReader#read`.
    #[inline(always)]
    fn read(&mut self) -> Option<u8> {
        if let Some(b) = self.held.take() {
            return Some(b);
        }
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// `LookaheadReader#peek`: the next byte, taken from the transport and held.
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        if self.held.is_none() {
            self.held = Some(*self.bytes.get(self.pos)?);
            self.pos += 1;
        }
        self.held
    }

    #[inline(always)]
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.read()? == c).then_some(())
    }
}

/// A string's content as read: where it is, and what kind of text it holds.
#[derive(Debug, Clone)]
struct Text {
    /// In the transport's bytes (no escapes), or `None`: in the scratch buffer.
    raw: Option<Range<usize>>,
    /// Raw bytes beyond ASCII.
    raw_non_ascii: bool,
    /// `\u` escapes beyond ASCII.
    escaped_non_ascii: bool,
}

/// A scalar as read, before it is made a value.
enum Parsed {
    Integer(i64),
    Double(f64),
    Text(Text),
    Binary,
    Uuid([u8; 16]),
}

/// The JsonProtocol's reading state, and the steps.
#[derive(Debug, Clone)]
pub struct JsonIn {
    held: Option<u8>,
    context: Context,
    /// The contexts around the current one, outermost first.
    stack: Vec<Context>,
    rules: JsonRules,
    /// Unescaped text and decoded base64.
    scratch: Vec<u8>,
}

/// One step in progress: the cursor, and the state it changes (rolled back if the step declines).
struct Step<'s, 'a> {
    cur: Cursor<'a>,
    context: &'s mut Context,
    stack: &'s mut Vec<Context>,
    scratch: &'s mut Vec<u8>,
    rules: JsonRules,
}

impl JsonIn {
    /// Reading in `context` (the protocol's `@context`), with `held` the byte its reader holds, if any.
    pub fn new(context: Context, held: Option<u8>, rules: JsonRules) -> Self {
        JsonIn {
            held,
            context,
            stack: Vec::new(),
            rules,
            scratch: Vec::new(),
        }
    }

    /// The byte the reader holds: taken from the transport, not yet read by the protocol.
    pub fn held(&self) -> Option<u8> {
        self.held
    }

    /// The current context: after a whole struct, the one it was read in, advanced past it.
    pub fn context(&self) -> Context {
        self.context
    }

    /// The contexts around the current one, outermost first.
    pub fn stack(&self) -> &[Context] {
        &self.stack
    }

    /// Runs a step over `bytes` (what the transport holds past what was taken): its result and how many bytes it
    /// took from the transport, or `None` with nothing changed.
    #[inline(always)]
    fn attempt<T>(
        &mut self,
        bytes: &[u8],
        step: impl FnOnce(&mut Step<'_, '_>) -> Option<T>,
    ) -> Option<(T, usize)> {
        let (context, depth) = (self.context, self.stack.len());
        let mut s = Step {
            cur: Cursor {
                held: self.held,
                bytes,
                pos: 0,
            },
            context: &mut self.context,
            stack: &mut self.stack,
            scratch: &mut self.scratch,
            rules: self.rules,
        };
        match step(&mut s) {
            Some(v) => {
                let (held, pos) = (s.cur.held, s.cur.pos);
                self.held = held;
                Some((v, pos))
            }
            None => {
                self.context = context;
                self.stack.truncate(depth);
                None
            }
        }
    }

    /// `read_struct_begin`.
    pub fn struct_begin(&mut self, bytes: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| s.open(b'{', Context::OBJECT))
            .map(|((), n)| n)
    }

    /// `read_struct_end`.
    pub fn struct_end(&mut self, bytes: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| s.close(b"}")).map(|((), n)| n)
    }

    /// `read_field_begin`: STOP when the object ends (its `}` peeked and held), else `"id":{"type"`.
    pub fn field_begin(&mut self, bytes: &[u8]) -> Option<(FieldBegin, usize)> {
        self.attempt(bytes, |s| {
            if s.cur.peek()? == b'}' {
                return Some(FieldBegin {
                    ttype: ttype::STOP.into(),
                    id: None,
                });
            }
            let id = s.integer()?;
            s.open(b'{', Context::OBJECT)?;
            let ttype = s.type_id()?;
            Some(FieldBegin {
                ttype,
                id: Some(id),
            })
        })
    }

    /// `read_field_end`.
    pub fn field_end(&mut self, bytes: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| s.close(b"}")).map(|((), n)| n)
    }

    /// `read_map_begin`: `["i32","str",2,{`.
    pub fn map_begin(&mut self, bytes: &[u8]) -> Option<(MapBegin, usize)> {
        self.attempt(bytes, |s| {
            s.open(b'[', Context::ARRAY)?;
            let key = s.type_id()?;
            let value = s.type_id()?;
            let size = s.size()?;
            s.open(b'{', Context::OBJECT)?;
            Some(MapBegin {
                key,
                value,
                size,
                negative: false,
            })
        })
    }

    /// `read_map_end`: `}]`.
    pub fn map_end(&mut self, bytes: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| s.close(b"}]")).map(|((), n)| n)
    }

    /// `read_list_begin` and `read_set_begin`: `["i32",2`.
    pub fn list_begin(&mut self, bytes: &[u8]) -> Option<(ListBegin, usize)> {
        self.attempt(bytes, |s| {
            s.open(b'[', Context::ARRAY)?;
            let element = s.type_id()?;
            let size = s.size()?;
            Some(ListBegin {
                element,
                size,
                negative: false,
            })
        })
    }

    /// `read_list_end` and `read_set_end`.
    pub fn list_end(&mut self, bytes: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| s.close(b"]")).map(|((), n)| n)
    }

    /// `read_json_syntax_char` of each of `expected` (the brackets an `*_end` method reads before it pops).
    pub fn syntax(&mut self, bytes: &[u8], expected: &[u8]) -> Option<usize> {
        self.attempt(bytes, |s| {
            for &b in expected {
                s.cur.expect(b)?;
            }
            Some(())
        })
        .map(|((), n)| n)
    }

    /// `read_message_begin`: `[1,"name",type,seqid`, the name made by `values` as `read_string` makes it. A version
    /// other than 1 is left to Ruby (its BAD_VERSION error).
    pub fn message_begin<V: Values>(
        &mut self,
        bytes: &[u8],
        values: &mut V,
    ) -> Option<(MessageHeader<V::Value>, usize)> {
        let utf8 = self.rules.utf8;
        self.attempt(bytes, |s| {
            s.open(b'[', Context::ARRAY)?;
            if s.integer()? != 1 {
                return None;
            }
            let name = s.text()?;
            let (message_type, seqid) = (s.integer()?, s.integer()?);
            let name = text_value(&name, bytes, s.scratch, utf8, values);
            Some((name, message_type, seqid))
        })
    }

    /// A value of a scalar kind, made by `values` as the protocol's method returns it: integers of any declared
    /// width as the Integer read (the Ruby methods check no range), text UTF-8 or (before thrift master, with raw
    /// non-ASCII bytes) BINARY, binaries BINARY, a UUID as lowercase text.
    pub fn scalar<V: Values>(
        &mut self,
        kind: Scalar,
        bytes: &[u8],
        values: &mut V,
    ) -> Option<(V::Value, usize)> {
        let utf8 = self.rules.utf8;
        self.attempt(bytes, |s| {
            let parsed = s.scalar(kind)?;
            let value = match parsed {
                Parsed::Integer(v) => integer_value(kind, v, values),
                Parsed::Double(f) => values.double(f),
                Parsed::Text(t) => text_value(&t, bytes, s.scratch, utf8, values),
                Parsed::Binary => values.binary(s.scratch.as_slice()),
                Parsed::Uuid(u) => values.string(&crate::uuid::format(&u)),
            };
            Some(value)
        })
    }

    /// `BaseProtocol#skip(ttype)` through the JSON methods, whole or not at all: it declines when any part of it
    /// would (then nothing is taken), or when it nests deeper than `MAX_SKIP_DEPTH`.
    pub fn skip(&mut self, ttype: i64, bytes: &[u8]) -> Option<usize> {
        // A skip closes only what it opens: rolling back the stack's length undoes it.
        self.attempt(bytes, |s| s.skip(ttype, MAX_SKIP_DEPTH))
            .map(|((), n)| n)
    }
}

/// A string read, as `read_json_string` makes it: UTF-8, or (before thrift master) BINARY with raw non-ASCII bytes.
fn text_value<V: Values>(
    t: &Text,
    bytes: &[u8],
    scratch: &[u8],
    utf8: bool,
    values: &mut V,
) -> V::Value {
    let text = match &t.raw {
        Some(r) => &bytes[r.clone()],
        None => scratch,
    };
    if !utf8 && t.raw_non_ascii {
        values.binary(text)
    } else {
        values.string(text)
    }
}

#[cfg(test)]
mod tests;
