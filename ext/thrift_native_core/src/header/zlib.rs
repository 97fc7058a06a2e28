//! The ZLIB transform: `Zlib::Deflate.deflate` on the way out; on the way in, master's bounded inflate, which
//! gives up once the output passes `@max_decompressed_size` instead of inflating a small frame into gigabytes.
//!
//! flate2 over zlib-rs. Its deflate output decodes to the same payload as the system zlib's (which Ruby's Zlib
//! uses) but is not always byte-identical to it.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::{ErrorKind, HeaderError};

thread_local! {
    // One stream of each kind per thread, reset between messages: setting a deflate stream up (its window and hash
    // chains, some 370 KiB) costs more than compressing a small message.
    static DEFLATER: RefCell<Option<Compress>> = const { RefCell::new(None) };
    static INFLATER: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// Output grows by at most this much before the size is checked again (Ruby's Zlib yields 16 KiB chunks).
const STEP: usize = 16 * 1024;

fn invalid() -> HeaderError {
    HeaderError {
        kind: ErrorKind::Unknown,
        message: "Invalid ZLIB payload".into(),
    }
}

fn too_large(max: usize) -> HeaderError {
    HeaderError {
        kind: ErrorKind::SizeLimit,
        message: format!("Decompressed size exceeds limit of {max}"),
    }
}

/// Inflates a zlib stream as master's `bounded_inflate` does with Ruby's `Zlib::Inflate`: a truncated, empty or
/// corrupt stream is "Invalid ZLIB payload"; output beyond `max` bytes is a SIZE_LIMIT error (nothing past
/// `max + 1` bytes is ever allocated); a stream that needs a preset dictionary is `NeedDict`; bytes after the end of
/// the stream come out as they are (`Zlib::Inflate#finish` hands back unused input).
pub fn inflate_bounded(input: &[u8], max: usize) -> Result<Vec<u8>, HeaderError> {
    INFLATER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let z = slot.get_or_insert_with(|| Decompress::new(true));
        let result = inflate_with(z, input, max);
        z.reset(true);
        result
    })
}

fn inflate_with(z: &mut Decompress, input: &[u8], max: usize) -> Result<Vec<u8>, HeaderError> {
    let mut out: Vec<u8> = Vec::new();
    loop {
        if out.len() == out.capacity() {
            if out.len() > max {
                return Err(too_large(max));
            }
            let room = out.capacity().max(STEP).min(max + 1 - out.len());
            out.reserve_exact(room);
        }
        let consumed = z.total_in() as usize;
        let status = z
            .decompress_vec(&input[consumed..], &mut out, FlushDecompress::None)
            .map_err(|e| match e.needs_dictionary() {
                Some(_) => HeaderError {
                    kind: ErrorKind::NeedDict,
                    message: "need dictionary".into(),
                },
                None => invalid(),
            })?;
        if out.len() > max {
            return Err(too_large(max));
        }
        match status {
            Status::StreamEnd => {
                let rest = &input[z.total_in() as usize..];
                if out.len() + rest.len() > max {
                    return Err(too_large(max));
                }
                out.extend_from_slice(rest);
                return Ok(out);
            }
            // No progress possible: the input ended before the stream did.
            Status::BufError => return Err(invalid()),
            Status::Ok => {}
        }
    }
}

/// `Zlib::Deflate.deflate(payload)`: the default level, a zlib stream.
pub fn deflate(payload: &[u8]) -> Vec<u8> {
    DEFLATER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let z = slot.get_or_insert_with(|| Compress::new(Compression::default(), true));
        let out = deflate_with(z, payload);
        z.reset();
        out
    })
}

fn deflate_with(z: &mut Compress, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() / 2 + 64);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(STEP));
        }
        let consumed = z.total_in() as usize;
        let status = z
            .compress_vec(&payload[consumed..], &mut out, FlushCompress::Finish)
            .expect("deflating a buffer in memory cannot fail");
        if status == Status::StreamEnd {
            return out;
        }
    }
}
