//! The gzip reader (gzip::reader, on gzip::inflate): any bytes, fed in any chunk sizes and taken out in any piece
//! sizes (with bytes pushed back now and then), never panic, never hold more than the pieces asked for justify,
//! agree with one read of the whole input, and stop (progress or an answer at every step); what the writer
//! (gzip::deflate) makes of the same bytes reads back to them, footer checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::gzip::deflate::Deflate;
use thrift_native_core::gzip::reader::{Progress, ReadError, Reader};
use thrift_native_core::gzip::Header;

/// What reading `input` as one member came to: the bytes handed out, then the error or the footer's verdict.
type Outcome = (Vec<u8>, Result<(), ReadError>);

/// Answers the reader's requests from `input`, `chunk` bytes at a time, until `step` answers.
fn drive<T>(
    r: &mut Reader,
    input: &[u8],
    at: &mut usize,
    chunk: usize,
    mut step: impl FnMut(&mut Reader) -> Result<Progress<T>, ReadError>,
) -> Result<T, ReadError> {
    let mut asked = 0;
    loop {
        match step(r)? {
            Progress::Done(t) => return Ok(t),
            Progress::NeedInput if *at < input.len() => {
                let end = (*at + chunk).min(input.len());
                r.feed(&input[*at..end]);
                *at = end;
            }
            Progress::NeedInput => {
                // The end, said once per request; a second request at the end would be a hang.
                asked += 1;
                assert!(asked < 2, "the reader asked again after the end");
                r.end_of_input();
            }
        }
    }
}

fn read(input: &[u8], chunk: usize, piece: usize, unget_every: usize) -> Outcome {
    let mut r = Reader::new();
    let mut at = 0;
    let mut out = Vec::new();
    if let Err(e) = drive(&mut r, input, &mut at, chunk, |r| r.read_header()) {
        return (out, Err(e));
    }
    let mut n = 0;
    loop {
        if let Err(e) = drive(&mut r, input, &mut at, chunk, |r| r.fill(piece, piece)) {
            return (out, Err(e));
        }
        // Memory held is what was asked for, a step ahead at most, whatever the input inflates to.
        assert!(r.buffer_bytes() <= 4 * (piece + Reader::OUTPUT_STEP) + 2 * chunk + 64);
        if r.finished() {
            break;
        }
        let taken = r.take(piece.min(r.buffered().len())).to_vec();
        assert!(!taken.is_empty());
        n += 1;
        if unget_every > 0 && n % unget_every == 0 {
            // Pushed back and taken again: the bytes and the CRC come out as if never pushed.
            r.unget(&taken);
            assert_eq!(r.take(taken.len()), &taken[..]);
        }
        out.extend_from_slice(&taken);
    }
    let footer = drive(&mut r, input, &mut at, chunk, |r| r.check_footer());
    (out, footer)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let chunk = 1 + usize::from(data[0]) * 16;
    let piece = 1 + usize::from(data[1]) * 64;
    let unget_every = usize::from(data[2] % 4);
    let body = &data[3..];

    // Any bytes: the same bytes and verdict in any steps as in one.
    let whole = read(body, body.len().max(1), 1 << 20, 0);
    let (out, verdict) = read(body, chunk, piece, unget_every);
    assert!(whole.0.starts_with(&out) || out.starts_with(&whole.0));
    if verdict.is_ok() {
        assert_eq!((out, verdict), whole);
    }

    // A member our writer made: its bytes back, footer checked.
    let mut member = Vec::new();
    Header {
        mtime: 0,
        level: -1,
        orig_name: None,
        comment: None,
        os_code: 3,
    }
    .write_to(&mut member);
    let mut deflate = Deflate::new(i32::from(data[0] % 10), 0);
    deflate.write(body, 0, &mut member).unwrap();
    deflate.finish(&mut member).unwrap();
    assert_eq!(read(&member, chunk, piece, unget_every), (body.to_vec(), Ok(())));
});
