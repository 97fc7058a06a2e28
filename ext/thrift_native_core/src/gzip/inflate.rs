//! Reading a gzip member as Ruby's `Zlib::GzipReader` reads one (the reader side of [`super::deflate`]): the header
//! checked in zlib.c's order with its refusals, the raw deflate body (window 15) inflated into space the caller
//! gives, never ahead of it, the CRC32 and length of what came out, and the footer checked against them.
//!
//! Input-driven and free of any IO: the caller holds the bytes read so far and says when its source is at its end;
//! [`parse_header`] answers [`HeaderParse::Incomplete`] where Zlib would read another chunk. The Ruby class (which
//! reads the io in Zlib's 2048-byte steps, so that the io's position and `unused` agree with Zlib's) is the binding's.

use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::{FLAG_COMMENT, FLAG_ORIG_NAME, FOOTER_LEN, MAGIC_AND_METHOD};

/// FLG bit 0x02, RFC 1952's FHCRC, which zlib.c names GZ_FLAG_MULTIPART and refuses.
pub const FLAG_MULTIPART: u8 = 0x02;
/// FLG bit: an extra field (a 2-byte length, then that many bytes) follows the fixed header.
pub const FLAG_EXTRA: u8 = 0x04;
/// FLG bit zlib.c refuses as encryption.
pub const FLAG_ENCRYPT: u8 = 0x20;
/// FLG bits zlib.c knows nothing of.
pub const FLAG_UNKNOWN_MASK: u8 = 0xc0;

/// What the header of a member says, as `Zlib::GzipReader` exposes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GzipHeader {
    pub mtime: u32,
    /// From XFL: 1 (bit 0x04), else 9 (bit 0x02), else -1, as zlib.c reads it.
    pub level: i32,
    pub os_code: u8,
    /// FNAME and FCOMMENT without their NUL; the FEXTRA field is passed over, as zlib.c does.
    pub orig_name: Option<Vec<u8>>,
    pub comment: Option<Vec<u8>>,
    /// How many bytes the header took.
    pub len: usize,
}

/// A header zlib.c refuses, each raised there as `Zlib::GzipFile::Error` with [`HeaderError::message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer than 10 bytes before the end, or not the gzip magic (zlib.c raises it with the unread bytes as the
    /// error's `input`).
    NotGzip,
    UnsupportedMethod(u8),
    MultiPart,
    Encrypted,
    UnknownFlags(u8),
    /// The end came inside FEXTRA, FNAME or FCOMMENT.
    UnexpectedEof,
}

impl HeaderError {
    /// zlib.c's message. The flags are a signed char there, printed with `%02x`: 0x80 prints as `0xffffff80`.
    pub fn message(&self) -> String {
        match *self {
            HeaderError::NotGzip => "not in gzip format".to_owned(),
            HeaderError::UnsupportedMethod(m) => format!("unsupported compression method {m}"),
            HeaderError::MultiPart => "multi-part gzip file is not supported".to_owned(),
            HeaderError::Encrypted => "encrypted gzip file is not supported".to_owned(),
            HeaderError::UnknownFlags(f) => format!("unknown flags 0x{:02x}", i32::from(f as i8)),
            HeaderError::UnexpectedEof => "unexpected end of file".to_owned(),
        }
    }
}

/// What [`parse_header`] made of the bytes so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderParse {
    /// More bytes are needed (zlib.c would read another chunk).
    Incomplete,
    Complete(GzipHeader),
}

/// Parses a member's header from `input` (the bytes read so far), in zlib.c's order: 10 bytes, the magic, the
/// method, the refused flags (multi-part before encrypted before unknown), then FEXTRA, FNAME, FCOMMENT. `at_end`:
/// no more bytes will come, so a short input is an error rather than [`HeaderParse::Incomplete`].
pub fn parse_header(input: &[u8], at_end: bool) -> Result<HeaderParse, HeaderError> {
    let short = |error| {
        if at_end {
            Err(error)
        } else {
            Ok(HeaderParse::Incomplete)
        }
    };
    if input.len() < 10 {
        return short(HeaderError::NotGzip);
    }
    if input[..2] != MAGIC_AND_METHOD[..2] {
        return Err(HeaderError::NotGzip);
    }
    if input[2] != MAGIC_AND_METHOD[2] {
        return Err(HeaderError::UnsupportedMethod(input[2]));
    }
    let flags = input[3];
    if flags & FLAG_MULTIPART != 0 {
        return Err(HeaderError::MultiPart);
    }
    if flags & FLAG_ENCRYPT != 0 {
        return Err(HeaderError::Encrypted);
    }
    if flags & FLAG_UNKNOWN_MASK != 0 {
        return Err(HeaderError::UnknownFlags(flags));
    }
    let xfl = input[8];
    let level = if xfl & super::EXTRAFLAG_FAST != 0 {
        1
    } else if xfl & super::EXTRAFLAG_SLOW != 0 {
        9
    } else {
        -1
    };
    let mut at = 10;
    if flags & FLAG_EXTRA != 0 {
        let Some(len) = input.get(at..at + 2) else {
            return short(HeaderError::UnexpectedEof);
        };
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        if input.len() < at + 2 + len {
            return short(HeaderError::UnexpectedEof);
        }
        at += 2 + len;
    }
    let mut zero_terminated = |flag: u8| -> Result<Option<Option<Vec<u8>>>, HeaderError> {
        if flags & flag == 0 {
            return Ok(Some(None));
        }
        match input[at..].iter().position(|&b| b == 0) {
            Some(end) => {
                let field = input[at..at + end].to_vec();
                at += end + 1;
                Ok(Some(Some(field)))
            }
            None if at_end => Err(HeaderError::UnexpectedEof),
            None => Ok(None),
        }
    };
    let Some(orig_name) = zero_terminated(FLAG_ORIG_NAME)? else {
        return Ok(HeaderParse::Incomplete);
    };
    let Some(comment) = zero_terminated(FLAG_COMMENT)? else {
        return Ok(HeaderParse::Incomplete);
    };
    Ok(HeaderParse::Complete(GzipHeader {
        mtime: u32::from_le_bytes([input[4], input[5], input[6], input[7]]),
        level,
        os_code: input[9],
        orig_name,
        comment,
        len: at,
    }))
}

/// An inflate that zlib would have answered with an error: `Zlib::DataError` with zlib's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError(pub String);

/// One [`Inflate::inflate`] call: input taken, output made, and whether the deflate stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub consumed: usize,
    pub produced: usize,
    pub stream_end: bool,
}

/// A footer that does not match what was inflated: Ruby's `Zlib::GzipFile::CRCError` and `LengthError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FooterError {
    Crc,
    Length,
}

impl FooterError {
    pub fn message(&self) -> &'static str {
        match self {
            FooterError::Crc => "invalid compressed data -- crc error",
            FooterError::Length => "invalid compressed data -- length error",
        }
    }
}

/// A member's deflate body, inflated into space the caller gives: what one 2048-byte chunk of a bomb inflates to is
/// made only as the caller asks for it.
pub struct Inflate {
    stream: Decompress,
    crc: Crc,
    ended: bool,
}

impl Default for Inflate {
    fn default() -> Self {
        Self::new()
    }
}

impl Inflate {
    pub fn new() -> Self {
        Inflate {
            stream: Decompress::new(false),
            crc: Crc::new(),
            ended: false,
        }
    }

    /// Inflates from `input` into `out` (as much of each as zlib takes and fills in one call, `Z_SYNC_FLUSH`).
    /// After the stream's end nothing more is taken or made.
    pub fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> Result<Step, DataError> {
        if self.ended || out.is_empty() {
            return Ok(Step {
                consumed: 0,
                produced: 0,
                stream_end: self.ended,
            });
        }
        let (in_before, out_before) = (self.stream.total_in(), self.stream.total_out());
        let status = self
            .stream
            .decompress(input, out, FlushDecompress::Sync)
            .map_err(|e| DataError(e.message().unwrap_or("invalid compressed data").to_owned()));
        let consumed = (self.stream.total_in() - in_before) as usize;
        let produced = (self.stream.total_out() - out_before) as usize;
        self.crc.update(&out[..produced]);
        match status? {
            Status::StreamEnd => self.ended = true,
            Status::Ok | Status::BufError => {}
        }
        Ok(Step {
            consumed,
            produced,
            stream_end: self.ended,
        })
    }

    /// Inflates from `input` into the spare capacity of `out` (at least `room` bytes of it, reserved here; more if
    /// `out` already has it: memory held is filled, none is allocated beyond `room`), appending what it makes.
    /// Unlike [`Inflate::inflate`] it leaves [`Inflate::crc`] alone: for a caller that checksums the bytes as it
    /// hands them out (the reader, whose `crc` is of those), so that no byte is checksummed twice.
    pub fn inflate_vec(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        room: usize,
    ) -> Result<Step, DataError> {
        if self.ended || room == 0 {
            return Ok(Step {
                consumed: 0,
                produced: 0,
                stream_end: self.ended,
            });
        }
        out.reserve(room);
        let (in_before, out_before) = (self.stream.total_in(), self.stream.total_out());
        let status = self
            .stream
            .decompress_vec(input, out, FlushDecompress::Sync)
            .map_err(|e| DataError(e.message().unwrap_or("invalid compressed data").to_owned()));
        let consumed = (self.stream.total_in() - in_before) as usize;
        let produced = (self.stream.total_out() - out_before) as usize;
        if let Status::StreamEnd = status? {
            self.ended = true;
        }
        Ok(Step {
            consumed,
            produced,
            stream_end: self.ended,
        })
    }

    /// True once the deflate stream has ended.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Deflate bytes taken so far (zlib's `total_in`).
    pub fn total_in(&self) -> u64 {
        self.stream.total_in()
    }

    /// Bytes inflated so far (zlib's `total_out`).
    pub fn total_out(&self) -> u64 {
        self.stream.total_out()
    }

    /// CRC32 of everything inflated so far.
    pub fn crc(&self) -> u32 {
        self.crc.sum()
    }

    /// Checks the 8-byte footer against what was inflated: the CRC first, then the length mod 2^32, as zlib.c.
    pub fn check_footer(&self, footer: &[u8; FOOTER_LEN]) -> Result<(), FooterError> {
        let crc = u32::from_le_bytes([footer[0], footer[1], footer[2], footer[3]]);
        let len = u32::from_le_bytes([footer[4], footer[5], footer[6], footer[7]]);
        if crc != self.crc() {
            return Err(FooterError::Crc);
        }
        if len != self.total_out() as u32 {
            return Err(FooterError::Length);
        }
        Ok(())
    }

    /// Back to the start of a deflate body (`rewind`: zlib.c's `inflateReset`; the header is not read again).
    pub fn reset(&mut self) {
        self.stream.reset(false);
        self.crc.reset();
        self.ended = false;
    }
}

#[cfg(test)]
mod tests;
