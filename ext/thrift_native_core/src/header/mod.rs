//! THeader framing, as thrift master's `Thrift::HeaderTransport` reads and writes it: client-type detection from a
//! message's first bytes, the header block (flags, sequence id, protocol id, transforms, key-value info headers)
//! parsed and written with master's exact limits and messages, and the ZLIB transform (`zlib.rs`).
//!
//! ```text
//! LENGTH (4, excludes itself) | 0x0FFF | FLAGS (2) | SEQUENCE ID (4) | HEADER WORDS (2) | HEADER | PAYLOAD
//! HEADER = varint protocol id, varint transform count, varint transform ids, info headers, zero padding to 4
//! ```
//!
//! Errors carry the `TransportException` type and message the Ruby library raises; where the Ruby parser had set
//! some of the transport's state before failing, [`ParsedHeader`] says how far it got.

mod zlib;

pub use zlib::{deflate, inflate_bounded};

pub const HEADER_MAGIC: u16 = 0x0FFF;
/// `HeaderTransport::MAX_FRAME_SIZE`: the largest frame (and the default limit).
pub const MAX_FRAME_SIZE: u32 = 0x3FFF_FFFF;
/// `DEFAULT_MAX_DECOMPRESSED_SIZE`: the default cap on a ZLIB payload's inflated size.
pub const DEFAULT_MAX_DECOMPRESSED_SIZE: usize = 16_384_000;
/// The fixed part of a header frame after the length: magic, flags, sequence id, header words.
pub const FIXED_LEN: usize = 10;
/// Header words at or above this are refused ("Header size is unreasonable").
pub const MAX_HEADER_WORDS: u16 = 16_384;

const BINARY_VERSION_MASK: u32 = 0xffff_0000;
const BINARY_VERSION_1: u32 = 0x8001_0000;
const COMPACT_PROTOCOL_ID: u8 = 0x82;
const COMPACT_VERSION_MASK: u8 = 0x1f;
const COMPACT_VERSION: u8 = 0x01;

/// `HeaderClientType`.
pub mod client_type {
    pub const HEADERS: i64 = 0;
    pub const FRAMED_BINARY: i64 = 1;
    pub const UNFRAMED_BINARY: i64 = 2;
    pub const FRAMED_COMPACT: i64 = 3;
    pub const UNFRAMED_COMPACT: i64 = 4;
}

/// `HeaderSubprotocolID`.
pub mod protocol_id {
    pub const BINARY: i64 = 0;
    pub const COMPACT: i64 = 2;
}

/// `HeaderTransformID::ZLIB`.
pub const TRANSFORM_ZLIB: u64 = 1;
/// `HeaderInfoType::KEY_VALUE`.
pub const INFO_KEY_VALUE: u64 = 1;

/// The `TransportException` type of an error (or, for a ZLIB stream that needs a preset dictionary, the
/// `Zlib::NeedDict` the Ruby library lets through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Unknown,
    EndOfFile,
    SizeLimit,
    NeedDict,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    pub kind: ErrorKind,
    pub message: String,
}

impl HeaderError {
    fn unknown(message: impl Into<String>) -> Self {
        HeaderError {
            kind: ErrorKind::Unknown,
            message: message.into(),
        }
    }
}

/// What a message's first four bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstWord {
    /// An unframed binary message (strict version 1 header).
    UnframedBinary,
    /// An unframed compact message.
    UnframedCompact,
    /// A frame of this many bytes.
    Framed(u32),
}

fn is_compact_start(word: &[u8]) -> bool {
    word[0] == COMPACT_PROTOCOL_ID && (word[1] & COMPACT_VERSION_MASK) == COMPACT_VERSION
}

pub fn first_word(word: [u8; 4]) -> FirstWord {
    let n = u32::from_be_bytes(word);
    if n & BINARY_VERSION_MASK == BINARY_VERSION_1 {
        FirstWord::UnframedBinary
    } else if is_compact_start(&word) {
        FirstWord::UnframedCompact
    } else {
        FirstWord::Framed(n)
    }
}

/// A declared frame size the transport may read (`max`: its `@max_frame_size`).
pub fn check_frame_size(size: u32, max: u64) -> Result<(), HeaderError> {
    if u64::from(size) > max {
        return Err(HeaderError::unknown(format!(
            "Frame size {size} exceeds maximum {max}"
        )));
    }
    if size < 4 {
        return Err(HeaderError::unknown(format!(
            "Frame size {size} is too small"
        )));
    }
    Ok(())
}

/// What a frame holds, from its first four bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Header,
    FramedBinary,
    FramedCompact,
}

/// The kind of a frame that passed [`check_frame_size`] (at least 4 bytes).
pub fn frame_kind(frame: &[u8]) -> Result<FrameKind, HeaderError> {
    if u16::from_be_bytes([frame[0], frame[1]]) == HEADER_MAGIC {
        if frame.len() < FIXED_LEN {
            return Err(HeaderError::unknown("Header transport frame is too small"));
        }
        return Ok(FrameKind::Header);
    }
    let word = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if word & BINARY_VERSION_MASK == BINARY_VERSION_1 {
        Ok(FrameKind::FramedBinary)
    } else if is_compact_start(frame) {
        Ok(FrameKind::FramedCompact)
    } else {
        Err(HeaderError::unknown(
            "Could not detect client transport type",
        ))
    }
}

/// A header frame, parsed as far as it goes: the Ruby parser sets `@flags`, `@sequence_id`, `@protocol_id` and each
/// info header as it reads them, so a frame that fails part-way leaves those it reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedHeader<'a> {
    pub flags: u16,
    pub sequence_id: i32,
    pub protocol_id: Option<u32>,
    pub transforms: Vec<u64>,
    pub headers: Vec<(&'a [u8], &'a [u8])>,
    /// The bytes after the header block (before any transform).
    pub payload: &'a [u8],
    pub error: Option<HeaderError>,
}

/// Reads the header block's varints and strings, never past its end.
struct HeaderReader<'a> {
    frame: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> HeaderReader<'a> {
    fn varint32(&mut self) -> Result<u32, HeaderError> {
        let mut result: u32 = 0;
        let mut shift = 0;
        loop {
            if self.pos >= self.end {
                return Err(HeaderError::unknown("Trying to read past header boundary"));
            }
            let byte = self.frame[self.pos];
            self.pos += 1;
            if shift == 28 {
                if byte & 0x80 != 0 {
                    return Err(HeaderError::unknown("Variable-length int over 5 bytes."));
                }
                if byte & !0x0f != 0 {
                    return Err(HeaderError::unknown(
                        "Variable-length int overflows uint32.",
                    ));
                }
            }
            result |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(result);
            }
            shift += 7;
        }
    }

    fn varstring(&mut self) -> Result<&'a [u8], HeaderError> {
        let size = self.varint32()? as usize;
        if size > self.end - self.pos {
            return Err(HeaderError::unknown(
                "Info header length exceeds header size",
            ));
        }
        let s = &self.frame[self.pos..self.pos + size];
        self.pos += size;
        Ok(s)
    }
}

/// Parses a header frame (the bytes after the length; [`frame_kind`] said `Header`, so at least 10 of them).
pub fn parse_header(frame: &[u8]) -> ParsedHeader<'_> {
    let flags = u16::from_be_bytes([frame[2], frame[3]]);
    let sequence_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let header_words = u16::from_be_bytes([frame[8], frame[9]]);
    let mut parsed = ParsedHeader {
        flags,
        sequence_id,
        protocol_id: None,
        transforms: Vec::new(),
        headers: Vec::new(),
        payload: &[],
        error: None,
    };
    if header_words >= MAX_HEADER_WORDS {
        parsed.error = Some(HeaderError::unknown("Header size is unreasonable"));
        return parsed;
    }
    let end = FIXED_LEN + usize::from(header_words) * 4;
    if end > frame.len() {
        parsed.error = Some(HeaderError::unknown("Header size exceeds frame size"));
        return parsed;
    }
    let mut r = HeaderReader {
        frame,
        pos: FIXED_LEN,
        end,
    };
    if let Err(e) = read_header_block(&mut r, &mut parsed) {
        parsed.error = Some(e);
        return parsed;
    }
    parsed.payload = &frame[end..];
    parsed
}

fn read_header_block<'a>(
    r: &mut HeaderReader<'a>,
    parsed: &mut ParsedHeader<'a>,
) -> Result<(), HeaderError> {
    parsed.protocol_id = Some(r.varint32()?);
    let transform_count = r.varint32()?;
    for _ in 0..transform_count {
        let id = u64::from(r.varint32()?);
        if id != TRANSFORM_ZLIB {
            return Err(HeaderError::unknown(format!("Unknown transform: {id}")));
        }
        parsed.transforms.push(id);
    }
    while r.pos < r.end {
        match u64::from(r.varint32()?) {
            INFO_KEY_VALUE => {
                let count = r.varint32()?;
                for _ in 0..count {
                    let key = r.varstring()?;
                    let value = r.varstring()?;
                    parsed.headers.push((key, value));
                }
            }
            // 0 is padding; an unknown type ends the info headers too.
            _ => break,
        }
    }
    Ok(())
}

/// Appends `n` as the header's unsigned varint.
pub fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n & !0x7f != 0 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// What a header frame carries besides its payload.
#[derive(Debug, Clone, Copy)]
pub struct FrameHeader<'a> {
    /// Written as their low 16 bits (Ruby's `pack("n")`).
    pub flags: u16,
    pub sequence_id: u32,
    pub protocol_id: u64,
    pub transforms: &'a [u64],
    pub headers: &'a [(&'a [u8], &'a [u8])],
}

/// The header block: protocol id, transforms, the key-value info headers if any, zero-padded to 4 bytes.
pub fn header_block(h: &FrameHeader<'_>) -> Vec<u8> {
    let mut block = Vec::with_capacity(16);
    write_varint(&mut block, h.protocol_id);
    write_varint(&mut block, h.transforms.len() as u64);
    for &t in h.transforms {
        write_varint(&mut block, t);
    }
    if !h.headers.is_empty() {
        write_varint(&mut block, INFO_KEY_VALUE);
        write_varint(&mut block, h.headers.len() as u64);
        for (key, value) in h.headers {
            for s in [key, value] {
                write_varint(&mut block, s.len() as u64);
                block.extend_from_slice(s);
            }
        }
    }
    block.resize(block.len().div_ceil(4) * 4, 0);
    block
}

/// The frame size a header frame declares for `block` and a payload of `payload_len` bytes.
pub fn frame_size(block: &[u8], payload_len: usize) -> u64 {
    (FIXED_LEN + block.len()) as u64 + payload_len as u64
}

/// Refuses a frame larger than `max` (`validate_frame_size!`).
pub fn check_write_size(size: u64, max: u64) -> Result<(), HeaderError> {
    if size > max {
        return Err(HeaderError::unknown(format!(
            "Frame size {size} exceeds maximum {max}"
        )));
    }
    Ok(())
}

/// The bytes before the payload: length, magic, flags, sequence id, header words (their low 16 bits, as Ruby packs
/// them), the block.
pub fn frame_prefix(h: &FrameHeader<'_>, block: &[u8], payload_len: usize) -> Vec<u8> {
    let size = frame_size(block, payload_len);
    let mut out = Vec::with_capacity(4 + FIXED_LEN + block.len());
    out.extend_from_slice(&(size as u32).to_be_bytes());
    out.extend_from_slice(&HEADER_MAGIC.to_be_bytes());
    out.extend_from_slice(&h.flags.to_be_bytes());
    out.extend_from_slice(&h.sequence_id.to_be_bytes());
    out.extend_from_slice(&((block.len() / 4) as u16).to_be_bytes());
    out.extend_from_slice(block);
    out
}

#[cfg(test)]
mod tests;
