use std::io::Write;

use flate2::{Compression, GzBuilder};

use super::*;

fn member(data: &[u8]) -> Vec<u8> {
    let mut e = GzBuilder::new()
        .filename("f")
        .write(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i * 7 % 251) as u8 ^ (i / 1000) as u8)
        .collect()
}

/// Drives `reader` over `bytes` from `*at`, in `chunk`-byte feeds, until `step` answers.
fn drive<T>(
    reader: &mut Reader,
    bytes: &[u8],
    at: &mut usize,
    chunk: usize,
    mut step: impl FnMut(&mut Reader) -> Result<Progress<T>, ReadError>,
) -> Result<T, ReadError> {
    loop {
        match step(reader)? {
            Progress::Done(t) => return Ok(t),
            Progress::NeedInput if *at < bytes.len() => {
                let end = (*at + chunk).min(bytes.len());
                reader.feed(&bytes[*at..end]);
                *at = end;
            }
            Progress::NeedInput => reader.end_of_input(),
        }
    }
}

/// Reads all of a member in `piece`-byte takes: the bytes, then the footer's verdict.
fn read_all(bytes: &[u8], chunk: usize, piece: usize) -> (Vec<u8>, Result<(), ReadError>, Reader) {
    let mut r = Reader::new();
    let mut at = 0;
    drive(&mut r, bytes, &mut at, chunk, |r| r.read_header()).unwrap();
    let mut out = Vec::new();
    loop {
        match drive(&mut r, bytes, &mut at, chunk, |r| r.fill(piece, piece)) {
            Ok(()) => {}
            Err(e) => return (out, Err(e), r),
        }
        if r.finished() {
            break;
        }
        let n = piece.min(r.buffered().len());
        out.extend_from_slice(r.take(n));
    }
    let footer = drive(&mut r, bytes, &mut at, chunk, |r| r.check_footer());
    (out, footer, r)
}

#[test]
fn reads_a_member_in_any_steps_and_checks_its_footer() {
    let data = pattern(300_000);
    let bytes = member(&data);
    for (chunk, piece) in [(2048, 16384), (1, 1), (7, 1000), (1 << 20, 1 << 20)] {
        let (out, footer, r) = read_all(&bytes, chunk, piece);
        assert_eq!(out, data);
        assert_eq!(footer, Ok(()));
        assert_eq!(r.crc(), flate2_crc(&data));
        assert_eq!(r.pos(), data.len() as i64);
        assert_eq!(r.unused(), None);
    }
}

fn flate2_crc(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

#[test]
fn bytes_after_the_footer_are_unused_and_rewind_reaches_the_body() {
    let mut bytes = member(b"hello");
    let body_start = 12; // 10 + "f\0"
    bytes.extend_from_slice(b"TRAILER");
    let (out, footer, r) = read_all(&bytes, 2048, 100);
    assert_eq!((out.as_slice(), footer), (&b"hello"[..], Ok(())));
    assert_eq!(r.unused(), Some(&b"TRAILER"[..]));
    // The io stood at its end (everything was one chunk); rewind goes back to just after the header.
    assert_eq!(bytes.len() as u64 - r.rewind_distance(), body_start);
}

#[test]
fn footer_errors_in_zlib_order() {
    let good = member(b"abc");
    let n = good.len();
    let mut bad_crc = good.clone();
    bad_crc[n - 8] ^= 1;
    bad_crc[n - 1] ^= 1; // the length is wrong too: the CRC is reported
    assert_eq!(
        read_all(&bad_crc, 2048, 10).1,
        Err(ReadError::Footer(FooterError::Crc))
    );
    let mut bad_len = good.clone();
    bad_len[n - 4] ^= 1;
    assert_eq!(
        read_all(&bad_len, 2048, 10).1,
        Err(ReadError::Footer(FooterError::Length))
    );
    assert_eq!(
        read_all(&good[..n - 3], 2048, 10).1,
        Err(ReadError::NoFooter(Some(good[n - 8..n - 3].to_vec())))
    );
    assert_eq!(
        read_all(&good[..n - 8], 2048, 10).1,
        Err(ReadError::NoFooter(None))
    );
    assert_eq!(
        read_all(&good[..n - 10], 2048, 10).1,
        Err(ReadError::UnexpectedEof)
    );
}

#[test]
fn not_gzip_carries_the_bytes_read() {
    let mut r = Reader::new();
    r.feed(b"foobarzothoge");
    assert_eq!(
        r.read_header(),
        Err(ReadError::Header {
            error: HeaderError::NotGzip,
            input: Some(b"foobarzothoge".to_vec())
        })
    );
    let mut r = Reader::new();
    r.end_of_input();
    assert_eq!(
        r.read_header(),
        Err(ReadError::Header {
            error: HeaderError::NotGzip,
            input: None
        })
    );
    let mut r = Reader::new();
    r.feed(&[0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 3]);
    assert_eq!(
        r.read_header(),
        Err(ReadError::Header {
            error: HeaderError::UnsupportedMethod(7),
            input: None
        })
    );
}

#[test]
fn a_bomb_inflates_only_as_far_as_it_is_read() {
    let zeros = vec![0u8; 50 << 20];
    let bytes = member(&zeros);
    assert!(bytes.len() < 60_000);
    let mut r = Reader::new();
    let mut at = 0;
    drive(&mut r, &bytes, &mut at, 2048, |r| r.read_header()).unwrap();
    let mut read = 0;
    while read < 1 << 20 {
        drive(&mut r, &bytes, &mut at, 2048, |r| r.fill(100, 100)).unwrap();
        read += r.take(100).len();
        assert!(
            r.buffer_bytes() <= 2 * Reader::OUTPUT_STEP + 4096,
            "{}",
            r.buffer_bytes()
        );
    }
    assert!(at <= 2048, "read {at} bytes of the io for 1 MiB of output");
}

#[test]
fn pushed_back_bytes_come_first_and_skip_the_crc() {
    let (data, bytes) = (b"abcdef", member(b"abcdef"));
    let mut r = Reader::new();
    let mut at = 0;
    drive(&mut r, &bytes, &mut at, 2048, |r| r.read_header()).unwrap();
    r.unget(b"XY"); // before anything was read: pos goes negative
    assert_eq!(r.pos(), -2);
    drive(&mut r, &bytes, &mut at, 2048, |r| r.fill(4, 4)).unwrap();
    assert_eq!(r.take(4), b"XYab");
    r.unget(b"Q");
    assert_eq!(r.take(5), b"Qcdef");
    assert!(r.finished());
    assert_eq!(r.crc(), flate2_crc(data));
    assert_eq!(
        drive(&mut r, &bytes, &mut at, 2048, |r| r.check_footer()),
        Ok(())
    );
}

#[test]
fn a_data_error_keeps_what_was_made_before_it_and_repeats() {
    let data = pattern(200_000);
    let mut bytes = member(&data);
    let n = bytes.len();
    for b in &mut bytes[n / 2..n / 2 + 64] {
        *b = 0xff;
    }
    let (out, err, mut r) = read_all(&bytes, 2048, 1000);
    assert!(matches!(err, Err(ReadError::Data(_))), "{err:?}");
    assert!(!out.is_empty() && data.starts_with(&out));
    let again = r.fill(usize::MAX, usize::MAX);
    assert!(
        matches!(again, Err(ReadError::Data(_)) | Ok(Progress::NeedInput)),
        "{again:?}"
    );
}

#[test]
fn the_end_of_input_is_asked_again_after_each_answer_it_decided() {
    let bytes = member(b"truncated body");
    let cut = &bytes[..bytes.len() - 12];
    let mut r = Reader::new();
    r.feed(cut);
    assert_eq!(r.read_header(), Ok(Progress::Done(())));
    assert_eq!(r.fill(100, 100), Ok(Progress::NeedInput));
    r.end_of_input();
    assert_eq!(r.fill(100, 100), Err(ReadError::UnexpectedEof));
    // zlib.c reads the io again on the next call, so the reader asks again.
    assert_eq!(r.fill(100, 100), Ok(Progress::NeedInput));
}

#[test]
fn a_data_error_keeps_zlibs_message_on_the_fast_path() {
    // A member whose FNAME was cut short: the body starts inside the old name, and inflate's fast path (room of at
    // least 258 bytes) meets a distance before the start (zlib-rs before 0.6.9 reported its "repeated call" there).
    let mut e = GzBuilder::new()
        .filename("n.txt")
        .comment("c")
        .write(Vec::new(), Compression::default());
    e.write_all(&b"hello\nworld\n".repeat(4)).unwrap();
    let mut bytes = e.finish().unwrap();
    bytes[10] = 0;
    let mut r = Reader::new();
    r.feed(&bytes);
    assert_eq!(
        r.read_header(),
        Err(ReadError::Data("invalid distance too far back".to_owned()))
    );
    // What was made before the error stays; asking for more meets the same error again.
    assert_eq!(r.buffered().len(), 1);
    assert_eq!(
        r.fill(2, 2),
        Err(ReadError::Data("invalid distance too far back".to_owned()))
    );
}

#[test]
fn a_whole_member_handed_out_gives_its_memory_back() {
    let data = pattern(3 << 20);
    let bytes = member(&data);
    let mut r = Reader::new();
    let mut at = 0;
    drive(&mut r, &bytes, &mut at, 2048, |r| r.read_header()).unwrap();
    drive(&mut r, &bytes, &mut at, 2048, |r| {
        r.fill(usize::MAX, usize::MAX)
    })
    .unwrap();
    assert!(r.buffer_bytes() >= 3 << 20);
    assert_eq!(r.take(usize::MAX).len(), 3 << 20);
    r.trim();
    assert!(
        r.buffer_bytes() <= Reader::OUT_KEEP + 4096,
        "{}",
        r.buffer_bytes()
    );
    assert_eq!(r.crc(), flate2_crc(&data));
}
