use std::io::Write;

use flate2::{Compression, GzBuilder};

use super::*;
use crate::gzip::deflate::Deflate;
use crate::gzip::{footer, Header};

/// A member as flate2's GzBuilder writes it (name, comment, extra, mtime), of `data`.
fn member(data: &[u8], build: impl FnOnce(GzBuilder) -> GzBuilder) -> Vec<u8> {
    let mut e = build(GzBuilder::new()).write(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A member as this crate's writer (GzipWriter's engine) writes it.
fn ours(data: &[u8], level: i32) -> Vec<u8> {
    let mut out = Vec::new();
    Header {
        mtime: 7,
        level,
        orig_name: Some(b"n.txt"),
        comment: None,
        os_code: 3,
    }
    .write_to(&mut out);
    let mut d = Deflate::new(level, 0);
    d.write(data, 0, &mut out).unwrap();
    d.finish(&mut out).unwrap();
    out
}

fn header_of(bytes: &[u8]) -> GzipHeader {
    match parse_header(bytes, true).unwrap() {
        HeaderParse::Complete(h) => h,
        HeaderParse::Incomplete => panic!("incomplete"),
    }
}

/// Inflates a whole member (header, body, footer) in `piece`-byte outputs, feeding `chunk`-byte inputs.
fn read_member(bytes: &[u8], chunk: usize, piece: usize) -> (Vec<u8>, Result<usize, FooterError>) {
    let h = header_of(bytes);
    let mut inflate = Inflate::new();
    let (mut at, mut out) = (h.len, Vec::new());
    let mut buf = vec![0u8; piece];
    while !inflate.ended() {
        let end = (at + chunk).min(bytes.len());
        let step = inflate.inflate(&bytes[at..end], &mut buf).unwrap();
        out.extend_from_slice(&buf[..step.produced]);
        at += step.consumed;
        assert!(
            step.consumed > 0 || step.produced > 0 || step.stream_end,
            "no progress"
        );
    }
    let mut f = [0u8; FOOTER_LEN];
    f.copy_from_slice(&bytes[at..at + FOOTER_LEN]);
    (out, inflate.check_footer(&f).map(|()| at + FOOTER_LEN))
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i * 7 % 251) as u8 ^ (i / 1000) as u8)
        .collect()
}

#[test]
fn reads_members_of_both_writers_in_any_steps() {
    let data = pattern(200_000);
    let theirs = member(&data, |b| b.filename("f").comment("c").mtime(99));
    for bytes in [theirs, ours(&data, 1), ours(&data, 9), ours(b"", -1)] {
        for (chunk, piece) in [(2048, 16384), (1, 1), (7, 3), (100_000, 1 << 20)] {
            let (out, end) = read_member(&bytes, chunk, piece);
            let expected: &[u8] = if bytes.len() < 40 { b"" } else { &data };
            assert_eq!(out, expected);
            assert_eq!(end, Ok(bytes.len()));
        }
    }
}

#[test]
fn header_fields_as_zlib_reads_them() {
    let h = header_of(&member(b"x", |b| {
        b.filename("a.txt")
            .comment("hi")
            .mtime(0x01020304)
            .extra(vec![1, 2, 3])
    }));
    assert_eq!(h.mtime, 0x01020304);
    assert_eq!(h.orig_name.as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(h.comment.as_deref(), Some(&b"hi"[..]));
    let plain = ours(b"x", 1);
    let p = header_of(&plain);
    assert_eq!((p.level, p.os_code, p.mtime, p.len), (1, 3, 7, 16));
    assert_eq!(header_of(&ours(b"x", 9)).level, 9);
    assert_eq!(header_of(&ours(b"x", 6)).level, -1);
    // XFL 0x06: the 0x04 bit wins.
    let mut both = plain.clone();
    both[8] = 6;
    assert_eq!(header_of(&both).level, 1);
}

#[test]
fn header_refusals_in_zlib_order() {
    let good = ours(b"x", -1);
    let with = |i: usize, b: u8| {
        let mut v = good.clone();
        v[i] = b;
        parse_header(&v, true)
    };
    assert_eq!(with(0, 0x1e), Err(HeaderError::NotGzip));
    assert_eq!(with(2, 7), Err(HeaderError::UnsupportedMethod(7)));
    assert_eq!(with(3, 0x22), Err(HeaderError::MultiPart));
    assert_eq!(with(3, 0x21 | 0x08), Err(HeaderError::Encrypted));
    assert_eq!(with(3, 0x80), Err(HeaderError::UnknownFlags(0x80)));
    assert_eq!(
        HeaderError::UnknownFlags(0x80).message(),
        "unknown flags 0xffffff80"
    );
    assert_eq!(
        HeaderError::UnknownFlags(0x40).message(),
        "unknown flags 0x40"
    );
    assert_eq!(
        HeaderError::UnsupportedMethod(7).message(),
        "unsupported compression method 7"
    );
    // Short: more is asked for until the end, then the error of the part cut.
    assert_eq!(parse_header(&good[..9], false), Ok(HeaderParse::Incomplete));
    assert_eq!(parse_header(&good[..9], true), Err(HeaderError::NotGzip));
    assert_eq!(parse_header(b"", true), Err(HeaderError::NotGzip));
    // The magic is checked only once 10 bytes are there, as zlib.c reads them first.
    assert_eq!(parse_header(b"nope", false), Ok(HeaderParse::Incomplete));
    assert_eq!(
        parse_header(&good[..12], false),
        Ok(HeaderParse::Incomplete)
    ); // in FNAME
    assert_eq!(
        parse_header(&good[..12], true),
        Err(HeaderError::UnexpectedEof)
    );
    let extra = member(b"x", |b| b.extra(vec![9; 300]));
    assert_eq!(
        parse_header(&extra[..11], true),
        Err(HeaderError::UnexpectedEof)
    );
    assert_eq!(
        parse_header(&extra[..200], false),
        Ok(HeaderParse::Incomplete)
    );
    assert_eq!(header_of(&extra).len, 10 + 2 + 300);
}

#[test]
fn footer_checks_crc_before_length() {
    let data = pattern(5000);
    let good = ours(&data, -1);
    let n = good.len();
    let mut bad_crc = good.clone();
    bad_crc[n - 8] ^= 1;
    bad_crc[n - 1] ^= 1;
    assert_eq!(read_member(&bad_crc, 2048, 4096).1, Err(FooterError::Crc));
    let mut bad_len = good.clone();
    bad_len[n - 4] ^= 1;
    assert_eq!(
        read_member(&bad_len, 2048, 4096).1,
        Err(FooterError::Length)
    );
    assert_eq!(
        FooterError::Crc.message(),
        "invalid compressed data -- crc error"
    );
    // The length is mod 2^32, as the writer's footer.
    assert_eq!(footer(0, (1u64 << 32) + 5)[4..], [5, 0, 0, 0]);
}

#[test]
fn damaged_bodies_raise_zlibs_data_errors() {
    let mut inflate = Inflate::new();
    let mut out = [0u8; 64];
    // BTYPE 3 (reserved).
    let e = inflate.inflate(&[0x07], &mut out).unwrap_err();
    assert_eq!(e, DataError("invalid block type".to_owned()));
    let mut stored = Inflate::new();
    // A stored block whose LEN and NLEN disagree.
    let e = stored
        .inflate(&[0x01, 0x05, 0x00, 0x00, 0x00], &mut out)
        .unwrap_err();
    assert_eq!(e, DataError("invalid stored block lengths".to_owned()));
}

#[test]
fn a_bomb_is_inflated_only_as_far_as_asked() {
    let data = vec![0u8; 50 << 20];
    let bytes = ours(&data, 9);
    assert!(bytes.len() < 100_000);
    let h = header_of(&bytes);
    let mut inflate = Inflate::new();
    let mut buf = [0u8; 16];
    let step = inflate.inflate(&bytes[h.len..], &mut buf).unwrap();
    assert_eq!(step.produced, 16);
    assert_eq!(inflate.total_out(), 16);
    assert!(!step.stream_end);
}

#[test]
fn the_next_member_starts_after_the_footer() {
    let mut two = ours(b"first\n", -1);
    let first_len = two.len();
    two.extend(ours(b"second\n", -1));
    let (out, end) = read_member(&two, 2048, 64);
    assert_eq!(out, b"first\n");
    assert_eq!(end, Ok(first_len));
    assert_eq!(read_member(&two[first_len..], 2048, 64).0, b"second\n");
}

#[test]
fn reset_starts_the_body_again() {
    let data = pattern(10_000);
    let bytes = ours(&data, -1);
    let h = header_of(&bytes);
    let mut inflate = Inflate::new();
    let mut buf = vec![0u8; 100];
    inflate.inflate(&bytes[h.len..], &mut buf).unwrap();
    inflate.reset();
    assert_eq!(
        (inflate.total_in(), inflate.total_out(), inflate.crc()),
        (0, 0, 0)
    );
    let mut all = vec![0u8; 20_000];
    let step = inflate.inflate(&bytes[h.len..], &mut all).unwrap();
    assert!(step.stream_end);
    assert_eq!(&all[..step.produced], &data[..]);
}
