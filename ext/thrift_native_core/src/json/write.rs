//! [`JsonOut`], the struct codec's JSON encoder, and the number and string forms it writes.
//!
//! Strings reach [`JsonOut`] as bytes the caller has found fit: text in an ASCII-compatible encoding, whose escaping
//! is then the same byte by byte as the Ruby code's character by character (a character whose first byte is below
//! `0`, 0x30, is a one-byte ASCII one; every other is written whole).

use std::io::Write as _;

use base64::Engine as _;

use super::{type_name, Context};
use crate::codec::{Encoder, Primitive, Scalar};
use crate::CoreError;

/// A double as Ruby's `Float#to_s` writes it, for a finite one: the shortest digits that read back as it (ties to
/// even), in fixed notation from 1e-4 up to 16 integer digits (when a fraction follows them, else 15), else as
/// `d.ddde+XX`.
pub fn format_double(f: f64, out: &mut Vec<u8>) {
    debug_assert!(f.is_finite());
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let mut buffer = ryu::Buffer::new();
    let (digits, decpt) = shortest_digits(buffer.format_finite(f.abs()));
    let n = digits.len() as i32;
    if decpt > -4 && decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
        out.extend_from_slice(&digits);
    } else if decpt > 0 && (decpt <= 15 || (decpt == 16 && n > 16)) {
        let whole = decpt as usize;
        if digits.len() <= whole {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', whole - digits.len()));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..whole]);
            out.push(b'.');
            out.extend_from_slice(&digits[whole..]);
        }
    } else {
        out.push(digits[0]);
        out.push(b'.');
        if digits.len() > 1 {
            out.extend_from_slice(&digits[1..]);
        } else {
            out.push(b'0');
        }
        let _ = write!(out, "e{:+03}", decpt - 1);
    }
}

/// The significant digits of ryu's text for a positive finite double, and where the decimal point goes: the value is
/// `0.DIGITS` times ten to the `decpt`.
fn shortest_digits(text: &str) -> (Vec<u8>, i32) {
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
    let leading = all.iter().take_while(|&&b| b == b'0').count();
    let mut digits = all[leading..].to_vec();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, whole.len() as i32 - leading as i32 + exponent)
}

/// A string's bytes as `write_json_string` escapes them: `\` doubled, `"` and the control characters with a
/// two-character escape (`\b \t \n \f \r`) so written, the other control characters as `\u00xx` (lowercase), every
/// other byte as it is (`/` and non-ASCII included).
pub fn escape_string(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x00..=0x1f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0x0f)],
                ]);
            }
            _ => out.push(b),
        }
    }
}

/// The struct codec's JSON encoder: the bytes `Thrift::JsonProtocol`'s methods write for a struct, with the
/// contexts kept here instead of in Ruby objects. It starts in the context the struct is written in, and
/// [`JsonOut::context`] gives that context back as the write leaves it.
#[derive(Debug)]
pub struct JsonOut {
    pub out: Vec<u8>,
    context: Context,
    stack: Vec<Context>,
    /// Whether the loaded thrift knows UUID (`"uid"`; before thrift 0.23 an unknown type).
    uuid: bool,
}

impl JsonOut {
    pub fn new(out: Vec<u8>, context: Context, uuid: bool) -> Self {
        JsonOut {
            out,
            context,
            stack: Vec::new(),
            uuid,
        }
    }

    /// The current context: after a whole struct, the one it was written in, advanced past it.
    pub fn context(&self) -> Context {
        self.context
    }

    /// The contexts around the current one, outermost first: the one the struct is written in, then those opened
    /// since.
    pub fn stack(&self) -> &[Context] {
        &self.stack
    }

    /// The current context as code of the host (Ruby's own protocol methods) left it after writing a value.
    pub fn set_context(&mut self, context: Context) {
        self.context = context;
    }

    /// Steps the context to the next element, writing its separator; whether its numbers are quoted.
    #[inline(always)]
    pub fn element(&mut self) -> bool {
        if let Some(separator) = self.context.step() {
            self.out.push(separator);
        }
        self.context.escape_num()
    }

    /// `write_json_object_start` / `write_json_array_start`: the separator, the bracket, and the new context.
    pub fn open(&mut self, bracket: u8, context: Context) {
        self.element();
        self.out.push(bracket);
        self.stack
            .push(std::mem::replace(&mut self.context, context));
    }

    fn close(&mut self, bracket: u8) {
        self.context = self.stack.pop().unwrap_or(Context::Top);
        self.out.push(bracket);
    }

    /// `write_json_integer`.
    #[inline(always)]
    pub fn integer(&mut self, n: i64) {
        let quoted = self.element();
        if quoted {
            self.out.push(b'"');
        }
        let _ = write!(self.out, "{n}");
        if quoted {
            self.out.push(b'"');
        }
    }

    /// `write_json_double`.
    pub fn double(&mut self, f: f64) {
        let quoted = self.element();
        let special: Option<&[u8]> = if f.is_nan() {
            Some(b"NaN")
        } else if f.is_infinite() {
            Some(if f > 0.0 { b"Infinity" } else { b"-Infinity" })
        } else {
            None
        };
        match special {
            Some(name) => {
                self.out.push(b'"');
                self.out.extend_from_slice(name);
                self.out.push(b'"');
            }
            None => {
                if quoted {
                    self.out.push(b'"');
                }
                format_double(f, &mut self.out);
                if quoted {
                    self.out.push(b'"');
                }
            }
        }
    }

    /// `write_json_string` of text the caller has found fit (see the module's doc).
    pub fn string(&mut self, bytes: &[u8]) {
        self.element();
        self.out.push(b'"');
        escape_string(bytes, &mut self.out);
        self.out.push(b'"');
    }

    /// `write_json_base64`.
    pub fn base64(&mut self, bytes: &[u8]) {
        self.element();
        self.out.push(b'"');
        let start = self.out.len();
        let encoded = base64::encoded_len(bytes.len(), true).unwrap_or(0);
        self.out.resize(start + encoded, 0);
        let written = base64::engine::general_purpose::STANDARD
            .encode_slice(bytes, &mut self.out[start..])
            .unwrap_or(0);
        self.out.truncate(start + written);
        self.out.push(b'"');
    }

    fn type_name(&self, t: i64) -> Result<&'static [u8], CoreError> {
        type_name(t, self.uuid).ok_or(CoreError::UnknownJsonType(t))
    }

    /// `write_message_begin`: `[1,"name",type,seqid`.
    pub fn message_begin(&mut self, name: &[u8], message_type: i64, seqid: i64) {
        self.open(b'[', Context::ARRAY);
        self.integer(1);
        self.string(name);
        self.integer(message_type);
        self.integer(seqid);
    }
}

impl Encoder for JsonOut {
    #[inline(always)]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    fn struct_begin(&mut self) -> i64 {
        self.open(b'{', Context::OBJECT);
        0
    }

    fn struct_end(&mut self, _saved: i64) {
        self.close(b'}');
    }

    /// The id as an object key, then an object holding the type name: `"1":{"i32"`. An unknown type fails after the
    /// `{`, as the Ruby method does.
    fn field_begin(&mut self, ttype: i64, id: i64) -> Result<(), CoreError> {
        self.integer(id);
        self.open(b'{', Context::OBJECT);
        let name = self.type_name(ttype)?;
        self.string(name);
        Ok(())
    }

    fn field_end(&mut self) {
        self.close(b'}');
    }

    fn field_stop(&mut self) {}

    /// `["i32","str",2,{`.
    fn map_begin(&mut self, key: i64, value: i64, size: usize) -> Result<(), CoreError> {
        self.open(b'[', Context::ARRAY);
        let key = self.type_name(key)?;
        self.string(key);
        let value = self.type_name(value)?;
        self.string(value);
        self.integer(size as i64);
        self.open(b'{', Context::OBJECT);
        Ok(())
    }

    fn map_end(&mut self) {
        self.close(b'}');
        self.close(b']');
    }

    /// `["i32",2` (sets alike).
    fn list_begin(&mut self, element: i64, size: usize) -> Result<(), CoreError> {
        self.open(b'[', Context::ARRAY);
        let name = self.type_name(element)?;
        self.string(name);
        self.integer(size as i64);
        Ok(())
    }

    fn list_end(&mut self) {
        self.close(b']');
    }

    fn primitive(&mut self, kind: Scalar, p: Primitive<'_>) {
        match p {
            Primitive::Bool(b) => self.integer(i64::from(b)),
            Primitive::Byte(n) => self.integer(n.into()),
            Primitive::I16(n) => self.integer(n.into()),
            Primitive::I32(n) => self.integer(n.into()),
            Primitive::I64(n) => self.integer(n),
            Primitive::Double(f) => self.double(f),
            Primitive::Bytes(b) if kind == Scalar::Binary => self.base64(b),
            Primitive::Bytes(b) => self.string(b),
            Primitive::Uuid(b) => self.string(&crate::uuid::format(&b)),
        }
    }
}
