//! One gzip member read as `Zlib::GzipReader` reads it, minus the io: the compressed bytes read so far, the
//! inflated bytes not yet handed out, the header, the CRC of what was handed out, the footer check. The binding
//! answers [`Progress::NeedInput`] by reading the io one 2048-byte chunk (Zlib's step) and calling [`Reader::feed`]
//! or [`Reader::end_of_input`], then asks again.
//!
//! Zlib inflates each chunk whole as it arrives; this reader inflates a chunk's bytes only until the caller's need
//! (or [`Reader::OUTPUT_STEP`]) is buffered, keeping the rest of the chunk as pending input. For ordinary data a
//! chunk inflates to less than that, so what is buffered, the io's position and the point an error surfaces are
//! Zlib's; a chunk of a bomb inflates only as far as it is read (Zlib's reader buffers all of it at once).

use super::inflate::{
    parse_header, DataError, FooterError, GzipHeader, HeaderError, HeaderParse, Inflate,
};
use super::FOOTER_LEN;

/// Why the reader cannot go on: Ruby's `Zlib::GzipFile::Error` family and `Zlib::DataError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// A refused header. `input`: the unread compressed bytes, which zlib.c attaches to "not in gzip format".
    Header {
        error: HeaderError,
        input: Option<Vec<u8>>,
    },
    /// The io ended inside the deflate body ("unexpected end of file").
    UnexpectedEof,
    /// inflate refused the body (zlib's message).
    Data(String),
    /// Fewer than 8 bytes after the body ("footer is not found"), with those bytes.
    NoFooter(Option<Vec<u8>>),
    Footer(FooterError),
}

impl From<DataError> for ReadError {
    fn from(e: DataError) -> Self {
        ReadError::Data(e.0)
    }
}

/// An answer, or a request for the next chunk of the io.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress<T> {
    NeedInput,
    Done(T),
}

/// A gzip member being read. See the module doc.
pub struct Reader {
    /// Compressed bytes read from the io and not yet consumed, from `input_at`.
    input: Vec<u8>,
    input_at: usize,
    /// The io has said EOF, and no answer has been made of it yet: like zlib.c, which asks the io again each time
    /// it needs more, the reader asks again after each answer that the end decided.
    at_eof: bool,
    header: Option<GzipHeader>,
    inflate: Inflate,
    /// Inflated bytes not yet handed out, from `out_at` (pushed-back bytes included).
    out: Vec<u8>,
    out_at: usize,
    /// CRC-32 of the bytes handed out, skipping the next `unget` bytes (pushed back by the user), as zlib.c's
    /// `gz->crc`; those from `crc_at` to `out_at` are still to be added, in one stretch (a line at a time costs
    /// more than the lines' bytes).
    crc: u32,
    crc_at: usize,
    unget: usize,
    footer_checked: bool,
    /// 8 once the footer is consumed: zlib.c counts it into `total_in` "to rewind correctly".
    footer_counted: u64,
}

impl Default for Reader {
    fn default() -> Self {
        Self::new()
    }
}

impl Reader {
    /// Bytes to inflate ahead of a caller's need, at most, from input already read: about what one 2048-byte
    /// chunk of ordinary data inflates to, so that such a chunk is inflated whole, as Zlib does.
    pub const OUTPUT_STEP: usize = 64 * 1024;
    /// Output capacity kept after a large read, so that one `read` of everything does not pin its size.
    pub const OUT_KEEP: usize = 256 * 1024;

    pub fn new() -> Self {
        Reader {
            input: Vec::new(),
            input_at: 0,
            at_eof: false,
            header: None,
            inflate: Inflate::new(),
            out: Vec::new(),
            out_at: 0,
            crc: 0,
            crc_at: 0,
            unget: 0,
            footer_checked: false,
            footer_counted: 0,
        }
    }

    /// Adds a chunk read from the io.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.input_at > 0 {
            self.input.drain(..self.input_at);
            self.input_at = 0;
        }
        self.input.extend_from_slice(chunk);
    }

    /// The io said EOF.
    pub fn end_of_input(&mut self) {
        self.at_eof = true;
    }

    fn pending_input(&self) -> &[u8] {
        &self.input[self.input_at..]
    }

    fn pending_input_copy(&self) -> Option<Vec<u8>> {
        let rest = self.pending_input();
        (!rest.is_empty()).then(|| rest.to_vec())
    }

    /// Parses the header from the input so far; then inflates what follows it in that input, as zlib.c does in
    /// `new`, so that a corrupt first chunk raises there.
    pub fn read_header(&mut self) -> Result<Progress<()>, ReadError> {
        if self.header.is_some() {
            return Ok(Progress::Done(()));
        }
        let at_end = std::mem::take(&mut self.at_eof);
        match parse_header(self.pending_input(), at_end) {
            Ok(HeaderParse::Incomplete) => Ok(Progress::NeedInput),
            Ok(HeaderParse::Complete(header)) => {
                self.input_at += header.len;
                self.header = Some(header);
                self.inflate_pending(0)?;
                Ok(Progress::Done(()))
            }
            Err(error) => {
                let input = match error {
                    HeaderError::NotGzip => self.pending_input_copy(),
                    _ => None,
                };
                Err(ReadError::Header { error, input })
            }
        }
    }

    /// The parsed header (None until [`Reader::read_header`] is done).
    pub fn header(&self) -> Option<&GzipHeader> {
        self.header.as_ref()
    }

    /// Inflates pending input until it is used up, the body ends, or `goal` (at least [`Self::OUTPUT_STEP`]) bytes
    /// are buffered.
    fn inflate_pending(&mut self, goal: usize) -> Result<(), ReadError> {
        let goal = goal.max(Self::OUTPUT_STEP);
        while self.input_at < self.input.len()
            && !self.inflate.ended()
            && self.buffered().len() < goal
        {
            self.compact_out();
            // Grown geometrically toward the goal, which may be "everything".
            let room = (goal - self.buffered().len()).min(Self::OUTPUT_STEP.max(self.out.len()));
            let total_in = self.inflate.total_in();
            let step = self
                .inflate
                .inflate_vec(&self.input[self.input_at..], &mut self.out, room);
            // Input taken before an error is gone too, as in zlib (whose state then refuses the rest); the output
            // made before it stays buffered.
            self.input_at += (self.inflate.total_in() - total_in) as usize;
            let step = step?;
            if step.consumed == 0 && step.produced == 0 && !step.stream_end {
                break;
            }
        }
        Ok(())
    }

    /// Drops the handed-out prefix of the output buffer before more is appended.
    fn compact_out(&mut self) {
        if self.out_at == 0 {
            return;
        }
        self.flush_crc();
        self.crc_at = 0;
        if self.out_at == self.out.len() {
            self.out.clear();
            if self.out.capacity() > Self::OUT_KEEP {
                self.out.shrink_to(Self::OUT_KEEP);
            }
        } else {
            self.out.drain(..self.out_at);
        }
        self.out_at = 0;
    }

    /// zlib.c's `gzfile_fill` loop without the footer: inflates (asking for input as needed) until `need` bytes
    /// are buffered or the body has ended; input already read is inflated up to `want` (at least `need`) bytes, as
    /// zlib.c inflates a chunk whole. `need` 0 asks for nothing.
    pub fn fill(&mut self, need: usize, want: usize) -> Result<Progress<()>, ReadError> {
        self.trim();
        loop {
            if self.input_at < self.input.len() && self.buffered().len() < want.max(need) {
                let before = (self.input_at, self.buffered().len());
                self.inflate_pending(want.max(need))?;
                if (self.input_at, self.buffered().len()) != before {
                    continue;
                }
            }
            if self.buffered().len() >= need || self.inflate.ended() {
                return Ok(Progress::Done(()));
            }
            if std::mem::take(&mut self.at_eof) {
                return Err(ReadError::UnexpectedEof);
            }
            return Ok(Progress::NeedInput);
        }
    }

    /// Whether [`Reader::fill`] with these arguments would inflate (rather than answer at once or ask for input):
    /// for a caller that runs the inflating ones with Ruby's GVL released.
    pub fn would_inflate(&self, need: usize, want: usize) -> bool {
        self.input_at < self.input.len()
            && !self.inflate.ended()
            && self.buffered().len() < want.max(need)
    }

    /// Where `sep` first occurs in the buffered bytes from `from` up to `end` (both offsets into
    /// [`Reader::buffered`], `end` at most its length): the offset just past it. The line reads' search.
    pub fn find_after(&self, sep: &[u8], from: usize, end: usize) -> Option<usize> {
        let hay = self.buffered().get(from..end)?;
        let at = match sep {
            [] => return None,
            [b] => memchr::memchr(*b, hay),
            _ => memchr::memmem::find(hay, sep),
        }?;
        Some(from + at + sep.len())
    }

    /// The inflated bytes not yet handed out.
    pub fn buffered(&self) -> &[u8] {
        &self.out[self.out_at..]
    }

    /// The deflate body has ended (zlib.c's `ZSTREAM_IS_FINISHED`).
    pub fn body_ended(&self) -> bool {
        self.inflate.ended()
    }

    /// The body has ended and every byte was handed out (zlib.c's `GZFILE_IS_FINISHED`).
    pub fn finished(&self) -> bool {
        self.inflate.ended() && self.out_at == self.out.len()
    }

    /// Hands out the first `n` buffered bytes (`n` at most [`Reader::buffered`]'s length), adding them to the CRC.
    pub fn take(&mut self, n: usize) -> &[u8] {
        let start = self.out_at;
        let n = n.min(self.out.len() - start);
        if self.unget > 0 {
            // Pushed-back bytes come first and are not counted again.
            self.flush_crc();
            let skip = n.min(self.unget);
            self.unget -= skip;
            self.crc_at = start + skip;
        }
        self.out_at += n;
        &self.out[start..start + n]
    }

    /// Gives back the output buffer's memory beyond [`Self::OUT_KEEP`] once everything in it was handed out (after
    /// a `read` of a whole member, which held all of it).
    pub fn trim(&mut self) {
        if self.out_at == self.out.len() && self.out.capacity() > Self::OUT_KEEP {
            self.compact_out();
        }
    }

    /// Adds the bytes handed out since the last time to the CRC.
    fn flush_crc(&mut self) {
        if self.crc_at < self.out_at {
            self.crc = zlib_rs::crc32::crc32(self.crc, &self.out[self.crc_at..self.out_at]);
            self.crc_at = self.out_at;
        }
    }

    /// Pushes `bytes` back in front of the buffered output (`ungetc`/`ungetbyte`): read again next, not counted
    /// again in the CRC.
    pub fn unget(&mut self, bytes: &[u8]) {
        // The bytes before `out_at` may be overwritten: count them first.
        self.flush_crc();
        if self.out_at >= bytes.len() {
            self.out_at -= bytes.len();
            self.out[self.out_at..self.out_at + bytes.len()].copy_from_slice(bytes);
        } else {
            self.out
                .splice(self.out_at..self.out_at, bytes.iter().copied());
        }
        self.crc_at = self.out_at;
        self.unget += bytes.len();
    }

    /// zlib.c's `gzfile_check_footer`, once per member: the 8 bytes after the body against the CRC and length of
    /// what was handed out. Asks for input while fewer than 8 bytes are pending.
    pub fn check_footer(&mut self) -> Result<Progress<()>, ReadError> {
        if self.footer_checked {
            return Ok(Progress::Done(()));
        }
        if self.pending_input().len() < FOOTER_LEN {
            if !std::mem::take(&mut self.at_eof) {
                return Ok(Progress::NeedInput);
            }
            self.footer_checked = true;
            return Err(ReadError::NoFooter(self.pending_input_copy()));
        }
        self.footer_checked = true;
        let mut footer = [0u8; FOOTER_LEN];
        footer.copy_from_slice(&self.pending_input()[..FOOTER_LEN]);
        self.input_at += FOOTER_LEN;
        self.footer_counted = FOOTER_LEN as u64;
        let crc = u32::from_le_bytes([footer[0], footer[1], footer[2], footer[3]]);
        let len = u32::from_le_bytes([footer[4], footer[5], footer[6], footer[7]]);
        if crc != self.crc() {
            return Err(ReadError::Footer(FooterError::Crc));
        }
        if len != self.inflate.total_out() as u32 {
            return Err(ReadError::Footer(FooterError::Length));
        }
        Ok(Progress::Done(()))
    }

    pub fn footer_checked(&self) -> bool {
        self.footer_checked
    }

    /// The bytes read past the footer (`unused`), once it is checked; None when there are none.
    pub fn unused(&self) -> Option<&[u8]> {
        let rest = self.pending_input();
        (self.footer_checked && !rest.is_empty()).then_some(rest)
    }

    /// CRC-32 of the bytes handed out so far.
    pub fn crc(&self) -> u32 {
        zlib_rs::crc32::crc32(self.crc, &self.out[self.crc_at..self.out_at])
    }

    /// `pos`: bytes inflated minus bytes buffered; negative after pushing back more than was read.
    pub fn pos(&self) -> i64 {
        self.inflate.total_out() as i64 - self.buffered().len() as i64
    }

    /// How far `rewind` moves the io back: to the start of the body (the header is not read again).
    pub fn rewind_distance(&self) -> u64 {
        self.inflate.total_in() + self.footer_counted + self.pending_input().len() as u64
    }

    /// Back to the start of the body, after the io was moved there: everything but the header forgotten.
    pub fn rewind(&mut self) {
        self.inflate.reset();
        self.input.clear();
        self.input_at = 0;
        self.at_eof = false;
        self.out.clear();
        self.out_at = 0;
        self.crc = 0;
        self.crc_at = 0;
        self.unget = 0;
        self.footer_checked = false;
        self.footer_counted = 0;
    }

    /// Native memory held (inflate's state aside), for the GC's accounting.
    pub fn buffer_bytes(&self) -> usize {
        self.input.capacity() + self.out.capacity()
    }
}

#[cfg(test)]
mod tests;
