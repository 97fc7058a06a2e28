//! The steps themselves: what each JsonProtocol method reads, over a [`Cursor`], declining (`None`) whatever it does
//! not read the common way.

use super::{Context, Parsed, Step, Text, MAX_NUMBER};
use crate::codec::{Scalar, Values};
use crate::json::type_id;
use crate::ttype;

/// An Integer read for a field of `kind`: the Ruby methods check no range, so one beyond the declared width is made
/// as the Integer it is.
#[inline(always)]
pub(super) fn integer_value<V: Values>(kind: Scalar, v: i64, values: &mut V) -> V::Value {
    match kind {
        Scalar::Bool => values.bool(v != 0),
        Scalar::Byte => match i8::try_from(v) {
            Ok(n) => values.byte(n),
            Err(_) => values.i64(v),
        },
        Scalar::I16 => match i16::try_from(v) {
            Ok(n) => values.i16(n),
            Err(_) => values.i64(v),
        },
        Scalar::I32 => match i32::try_from(v) {
            Ok(n) => values.i32(n),
            Err(_) => values.i64(v),
        },
        _ => values.i64(v),
    }
}

#[inline(always)]
fn is_numeric(c: u8) -> bool {
    matches!(c, b'+' | b'-' | b'.' | b'0'..=b'9' | b'E' | b'e')
}

/// What `Integer()` reads as decimal: `[+-]?(0|[1-9][0-9]*)` within i64 (a leading 0 makes it octal in Ruby).
fn parse_integer(text: &[u8]) -> Option<i64> {
    let digits = match text.first()? {
        b'+' | b'-' => &text[1..],
        _ => text,
    };
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits[0] == b'0' && digits.len() > 1)
    {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// What `Float()` reads the same as Rust: `[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?`, a normal double
/// or a zero written as one.
fn parse_double(text: &[u8]) -> Option<f64> {
    let n = text.len();
    let digits_from = |mut i: usize| {
        while i < n && text[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let whole_end = digits_from(i);
    let has_whole = whole_end > i;
    i = whole_end;
    if text.get(i) == Some(&b'.') {
        let fraction_end = digits_from(i + 1);
        if fraction_end == i + 1 {
            return None;
        }
        i = fraction_end;
    } else if !has_whole {
        return None;
    }
    let mantissa_end = i;
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(text.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent_end = digits_from(i);
        if exponent_end == i || exponent_end - i > 3 {
            return None;
        }
        i = exponent_end;
    }
    if i != n {
        return None;
    }
    let v: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let zero_mantissa = !text[..mantissa_end]
        .iter()
        .any(|c| matches!(c, b'1'..=b'9'));
    let normal = v.is_normal() || (v == 0.0 && zero_mantissa);
    normal.then_some(v)
}

fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() != 4 || !b.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(b).ok()?, 16).ok()
}

/// `(+1.0/0.0)/(+1.0/0.0)` on x86: the NaN `read_json_double` returns for `"NaN"`.
const RUBY_NAN: u64 = 0xFFF8_0000_0000_0000;

impl Step<'_, '_> {
    /// `@context.read(@reader)`: the separator before the next element; whether its numbers are quoted.
    #[inline(always)]
    pub(super) fn element(&mut self) -> Option<bool> {
        if let Some(separator) = self.context.step() {
            self.cur.expect(separator)?;
        }
        Some(self.context.escape_num())
    }

    /// `read_json_object_start` / `read_json_array_start`.
    pub(super) fn open(&mut self, bracket: u8, context: Context) -> Option<()> {
        self.element()?;
        self.cur.expect(bracket)?;
        self.stack.push(std::mem::replace(self.context, context));
        Some(())
    }

    /// `read_json_object_end` / `read_json_array_end`, one per bracket.
    pub(super) fn close(&mut self, brackets: &[u8]) -> Option<()> {
        if self.stack.len() < brackets.len() {
            return None;
        }
        for &b in brackets {
            self.cur.expect(b)?;
        }
        for _ in brackets {
            *self.context = self.stack.pop()?;
        }
        Some(())
    }

    /// `read_json_numeric_chars`: the run of number characters, the byte after it peeked.
    pub(super) fn numeric_chars<'b>(&mut self, buf: &'b mut [u8; MAX_NUMBER]) -> Option<&'b [u8]> {
        let mut n = 0;
        loop {
            let c = self.cur.peek()?;
            if !is_numeric(c) {
                return Some(&buf[..n]);
            }
            *buf.get_mut(n)? = c;
            n += 1;
            self.cur.held = None;
        }
    }

    /// `read_json_integer`.
    pub(super) fn integer(&mut self) -> Option<i64> {
        let quoted = self.element()?;
        if quoted {
            self.cur.expect(b'"')?;
        }
        let mut buf = [0u8; MAX_NUMBER];
        let v = parse_integer(self.numeric_chars(&mut buf)?)?;
        if quoted {
            self.cur.expect(b'"')?;
        }
        Some(v)
    }

    /// A container size, as the struct codec takes it (a negative or beyond-INT32_MAX one is left to Ruby).
    pub(super) fn size(&mut self) -> Option<usize> {
        let n = self.integer()?;
        usize::try_from(n).ok().filter(|&n| n <= i32::MAX as usize)
    }

    /// `read_json_double`.
    pub(super) fn double(&mut self) -> Option<f64> {
        let quoted_key = self.element()?;
        if self.cur.peek()? == b'"' {
            let t = self.string(true)?;
            let text = &self.cur.bytes[t.raw?];
            return match text {
                b"NaN" => Some(f64::from_bits(RUBY_NAN)),
                b"Infinity" => Some(f64::INFINITY),
                b"-Infinity" => Some(f64::NEG_INFINITY),
                _ if quoted_key => parse_double(text),
                _ => None,
            };
        }
        if quoted_key {
            return None;
        }
        let mut buf = [0u8; MAX_NUMBER];
        parse_double(self.numeric_chars(&mut buf)?)
    }

    /// `read_json_string(skip_context)`: the content, unescaped into the scratch buffer if it has escapes.
    pub(super) fn string(&mut self, skip_context: bool) -> Option<Text> {
        if !skip_context {
            self.element()?;
        }
        self.cur.expect(b'"')?;
        let start = self.cur.pos;
        let rest = self.cur.bytes.get(start..)?;
        let stop = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
        let raw_non_ascii = !rest[..stop].is_ascii();
        if rest[stop] == b'"' {
            self.cur.pos = start + stop + 1;
            return Some(Text {
                raw: Some(start..start + stop),
                raw_non_ascii,
                escaped_non_ascii: false,
            });
        }
        let mut t = Text {
            raw: None,
            raw_non_ascii,
            escaped_non_ascii: false,
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(&rest[..stop]);
        let mut i = stop;
        loop {
            match *rest.get(i)? {
                b'"' => break,
                b'\\' => {
                    let unescaped = match *rest.get(i + 1)? {
                        c @ (b'"' | b'\\' | b'/') => c,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let (c, len) = self.unicode_escape(rest.get(i + 2..)?)?;
                            let mut utf8 = [0u8; 4];
                            let encoded = c.encode_utf8(&mut utf8);
                            t.escaped_non_ascii |= !c.is_ascii();
                            self.scratch.extend_from_slice(encoded.as_bytes());
                            i += 2 + len;
                            continue;
                        }
                        _ => return None,
                    };
                    self.scratch.push(unescaped);
                    i += 2;
                }
                b => {
                    t.raw_non_ascii |= !b.is_ascii();
                    self.scratch.push(b);
                    i += 1;
                }
            }
        }
        self.cur.pos = start + i + 1;
        Some(t)
    }

    /// The four hex digits after `\u` (and, in thrift master, a low surrogate's `\uXXXX` after a high one's): the
    /// character and how many bytes it took.
    pub(super) fn unicode_escape(&self, after_u: &[u8]) -> Option<(char, usize)> {
        let unit = hex4(after_u.get(..4)?)?;
        if !(0xD800..=0xDFFF).contains(&unit) {
            return Some((char::from_u32(unit)?, 4));
        }
        if !self.rules.utf8 || unit > 0xDBFF || after_u.get(4..6)? != b"\\u" {
            return None;
        }
        let low = hex4(after_u.get(6..10)?)?;
        if !(0xDC00..=0xDFFF).contains(&low) {
            return None;
        }
        let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        Some((char::from_u32(c)?, 10))
    }

    /// A string's text as the Ruby method makes it: before thrift master, raw and escaped non-ASCII text together
    /// is an error; in master, text that is not UTF-8 is.
    pub(super) fn text(&mut self) -> Option<Text> {
        let t = self.string(false)?;
        if self.rules.utf8 {
            let bytes = match &t.raw {
                Some(r) => &self.cur.bytes[r.clone()],
                None => self.scratch.as_slice(),
            };
            std::str::from_utf8(bytes).ok()?;
        } else if t.raw_non_ascii && t.escaped_non_ascii {
            return None;
        }
        Some(t)
    }

    /// A type name (`get_type_id_for_type_name(read_json_string)`).
    pub(super) fn type_id(&mut self) -> Option<i64> {
        let t = self.string(false)?;
        type_id(&self.cur.bytes[t.raw?], self.rules.uuid)
    }

    /// `read_json_base64` into the scratch buffer: ASCII text, padded with `=` to a multiple of four, decoded
    /// strictly (`unpack1("m0")`).
    pub(super) fn base64(&mut self) -> Option<()> {
        use base64::Engine as _;
        let t = self.string(false)?;
        let text = &self.cur.bytes[t.raw?];
        let mut padded = [b'='; 4];
        let whole = text.len() - text.len() % 4;
        padded[..text.len() - whole].copy_from_slice(&text[whole..]);
        let tail: &[u8] = if whole == text.len() { &[] } else { &padded };
        self.scratch.clear();
        let engine = &base64::engine::general_purpose::STANDARD;
        engine.decode_vec(&text[..whole], self.scratch).ok()?;
        if !tail.is_empty() {
            if text[..whole].ends_with(b"=") {
                return None;
            }
            engine.decode_vec(tail, self.scratch).ok()?;
        }
        Some(())
    }

    /// A UUID's text (thrift 0.23 on): exactly the canonical form.
    pub(super) fn uuid(&mut self) -> Option<[u8; 16]> {
        if !self.rules.uuid {
            return None;
        }
        let t = self.string(false)?;
        crate::uuid::parse(&self.cur.bytes[t.raw?]).ok()
    }

    pub(super) fn scalar(&mut self, kind: Scalar) -> Option<Parsed> {
        Some(match kind {
            Scalar::Bool | Scalar::Byte | Scalar::I16 | Scalar::I32 | Scalar::I64 => {
                Parsed::Integer(self.integer()?)
            }
            Scalar::Double => Parsed::Double(self.double()?),
            Scalar::String => Parsed::Text(self.text()?),
            Scalar::Binary => {
                self.base64()?;
                Parsed::Binary
            }
            Scalar::Uuid => Parsed::Uuid(self.uuid()?),
        })
    }

    /// `BaseProtocol#skip`: STRING by `read_string`, the others by their own read; nothing made.
    pub(super) fn skip(&mut self, ttype: i64, depth: usize) -> Option<()> {
        let kind = match u8::try_from(ttype).ok()? {
            ttype::BOOL => Scalar::Bool,
            ttype::BYTE => Scalar::Byte,
            ttype::I16 => Scalar::I16,
            ttype::I32 => Scalar::I32,
            ttype::I64 => Scalar::I64,
            ttype::DOUBLE => Scalar::Double,
            ttype::STRING => Scalar::String,
            ttype::UUID => Scalar::Uuid,
            ttype::STRUCT => {
                let depth = depth.checked_sub(1)?;
                self.open(b'{', Context::OBJECT)?;
                while self.cur.peek()? != b'}' {
                    self.integer()?;
                    self.open(b'{', Context::OBJECT)?;
                    let t = self.type_id()?;
                    self.skip(t, depth)?;
                    self.close(b"}")?;
                }
                return self.close(b"}");
            }
            ttype::MAP => {
                let depth = depth.checked_sub(1)?;
                self.open(b'[', Context::ARRAY)?;
                let (k, v) = (self.type_id()?, self.type_id()?);
                let size = self.size()?;
                self.open(b'{', Context::OBJECT)?;
                for _ in 0..size {
                    self.skip(k, depth)?;
                    self.skip(v, depth)?;
                }
                return self.close(b"}]");
            }
            ttype::SET | ttype::LIST => {
                let depth = depth.checked_sub(1)?;
                self.open(b'[', Context::ARRAY)?;
                let e = self.type_id()?;
                let size = self.size()?;
                for _ in 0..size {
                    self.skip(e, depth)?;
                }
                return self.close(b"]");
            }
            _ => return None,
        };
        self.scalar(kind).map(drop)
    }
}
