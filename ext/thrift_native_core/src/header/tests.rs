//! Frames pinned from thrift master's Ruby `HeaderTransport` (lib/rb at c8f8761), parsed back and rebuilt.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `sequence_id = 7`, headers k => vv and trace => "", payload "hello", binary.
const WITH_HEADERS: &str = "0000001f0fff000000000007000400000102016b0276760574726163650068656c6c6f";
/// Then "x" with no headers (they are cleared by a flush).
const PLAIN: &str = "0000000f0fff00000000000700010000000078";

#[test]
fn parses_what_ruby_writes() {
    let bytes = hex(WITH_HEADERS);
    assert_eq!(
        first_word(bytes[..4].try_into().unwrap()),
        FirstWord::Framed(31)
    );
    let frame = &bytes[4..];
    check_frame_size(31, u64::from(MAX_FRAME_SIZE)).unwrap();
    assert_eq!(frame_kind(frame), Ok(FrameKind::Header));
    let p = parse_header(frame);
    assert_eq!(p.error, None);
    assert_eq!((p.flags, p.sequence_id, p.protocol_id), (0, 7, Some(0)));
    assert!(p.transforms.is_empty());
    assert_eq!(
        p.headers,
        vec![(&b"k"[..], &b"vv"[..]), (&b"trace"[..], &b""[..])]
    );
    assert_eq!(p.payload, b"hello");
}

#[test]
fn writes_what_ruby_writes() {
    let headers: [(&[u8], &[u8]); 2] = [(b"k", b"vv"), (b"trace", b"")];
    for (expected, headers, payload) in [
        (WITH_HEADERS, &headers[..], &b"hello"[..]),
        (PLAIN, &[][..], &b"x"[..]),
    ] {
        let h = FrameHeader {
            flags: 0,
            sequence_id: 7,
            protocol_id: 0,
            transforms: &[],
            headers,
        };
        let block = header_block(&h);
        let mut out = frame_prefix(&h, &block, payload.len());
        out.extend_from_slice(payload);
        assert_eq!(out, hex(expected));
    }
}

#[test]
fn zlib_frames_round_trip() {
    // Ruby: sequence_id = -2, add_transform(ZLIB), payload "abc" * 10.
    let ruby = hex("0000001b0fff0000fffffffe000100010100789c4b4c4a4ec48d00b20c0b7d");
    let p = parse_header(&ruby[4..]);
    assert_eq!(p.error, None);
    assert_eq!((p.sequence_id, p.transforms.as_slice()), (-2, &[1][..]));
    let payload = inflate_bounded(p.payload, DEFAULT_MAX_DECOMPRESSED_SIZE).unwrap();
    assert_eq!(payload, b"abc".repeat(10));
    // The system zlib, as Ruby's Zlib: the very bytes.
    assert_eq!(deflate(&payload), p.payload);
}

#[test]
fn small_and_large_payloads_deflate_to_streams_that_inflate_back() {
    for n in [0, 1, 100, 4096, 4097, 70_000] {
        let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect();
        let packed = deflate(&payload);
        assert_eq!(inflate_bounded(&packed, n).unwrap(), payload, "{n} bytes");
        // Twice from the same per-thread stream: reset between messages.
        assert_eq!(deflate(&payload), packed, "{n} bytes again");
    }
}

#[test]
fn detects_client_types() {
    assert_eq!(first_word([0x80, 0x01, 0, 1]), FirstWord::UnframedBinary);
    assert_eq!(first_word([0x82, 0x21, 0, 1]), FirstWord::UnframedCompact);
    assert_eq!(first_word([0, 0, 1, 0]), FirstWord::Framed(256));
    assert_eq!(frame_kind(&[0x80, 1, 0, 1]), Ok(FrameKind::FramedBinary));
    assert_eq!(
        frame_kind(&[0x82, 0x41, 0, 1]),
        Ok(FrameKind::FramedCompact)
    );
    let err = |m: &str| Err(HeaderError::unknown(m));
    let kind_err = |m: &str| Err::<FrameKind, _>(HeaderError::unknown(m));
    assert_eq!(
        frame_kind(&[0x0f, 0xff, 0, 0]),
        kind_err("Header transport frame is too small")
    );
    assert_eq!(
        frame_kind(&[1, 2, 3, 4]),
        kind_err("Could not detect client transport type")
    );
    assert_eq!(check_frame_size(3, 100), err("Frame size 3 is too small"));
    assert_eq!(
        check_frame_size(101, 100),
        err("Frame size 101 exceeds maximum 100")
    );
}

/// A header frame with `block` as its header bytes and `words` declared.
fn frame(words: u16, block: &[u8]) -> Vec<u8> {
    let mut f = vec![0x0f, 0xff, 0, 1, 0, 0, 0, 9];
    f.extend_from_slice(&words.to_be_bytes());
    f.extend_from_slice(block);
    f
}

#[test]
fn header_errors_say_how_far_the_parser_got() {
    let f = frame(16_384, &[]);
    let p = parse_header(&f);
    assert_eq!((p.flags, p.sequence_id), (1, 9));
    assert_eq!(p.error.unwrap().message, "Header size is unreasonable");
    let f = frame(1, &[0, 0]);
    let p = parse_header(&f);
    assert_eq!(p.error.unwrap().message, "Header size exceeds frame size");
    // Protocol id 2 read, then a transform count running past the block.
    let f = frame(1, &[2, 0x80, 0x80, 0x80]);
    let p = parse_header(&f);
    assert_eq!(p.protocol_id, Some(2));
    assert_eq!(
        p.error.unwrap().message,
        "Trying to read past header boundary"
    );
    let f = frame(2, &[0, 1, 3, 0, 0, 0, 0, 0]);
    let p = parse_header(&f);
    assert_eq!(p.error.unwrap().message, "Unknown transform: 3");
    let f = frame(2, &[0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0]);
    let p = parse_header(&f);
    assert_eq!(
        p.error.unwrap().message,
        "Variable-length int over 5 bytes."
    );
    let f = frame(2, &[0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0]);
    let p = parse_header(&f);
    assert_eq!(
        p.error.unwrap().message,
        "Variable-length int overflows uint32."
    );
    // One header read, then a key longer than what is left.
    let f = frame(3, &[0, 0, 1, 2, 1, b'a', 1, b'b', 9, b'c', 0, 0]);
    let p = parse_header(&f);
    assert_eq!(p.headers, vec![(&b"a"[..], &b"b"[..])]);
    assert_eq!(
        p.error.unwrap().message,
        "Info header length exceeds header size"
    );
    // An unknown info type ends the info headers; the payload follows the declared block.
    let f = [frame(2, &[0, 0, 7, 1, 1, b'a', 1, b'b']), b"pay".to_vec()].concat();
    let p = parse_header(&f);
    assert_eq!(
        (p.error, p.headers.len(), p.payload),
        (None, 0, &b"pay"[..])
    );
}

#[test]
fn inflate_follows_ruby_zlib() {
    let good = deflate(&b"hello world".repeat(1000));
    let invalid = Err(HeaderError::unknown("Invalid ZLIB payload"));
    assert_eq!(inflate_bounded(&[], 100), invalid);
    assert_eq!(inflate_bounded(&good[..good.len() - 3], 1 << 20), invalid);
    assert_eq!(inflate_bounded(&[0x78, 0x9c], 100), invalid);
    let mut bad_check = good.clone();
    *bad_check.last_mut().unwrap() ^= 1;
    assert_eq!(inflate_bounded(&bad_check, 1 << 20), invalid);
    // Trailing bytes come back as they are, as Zlib::Inflate#finish gives them.
    let trailing = inflate_bounded(&[&good[..], b"garbage"].concat(), 1 << 20).unwrap();
    assert_eq!(trailing.len(), 11_007);
    assert!(trailing.ends_with(b"garbage"));
    let limit = |n: usize| inflate_bounded(&deflate(&vec![b'a'; n]), 100);
    assert_eq!(limit(100).unwrap().len(), 100);
    assert_eq!(limit(101).unwrap_err().kind, ErrorKind::SizeLimit);
    assert_eq!(
        limit(101).unwrap_err().message,
        "Decompressed size exceeds limit of 100"
    );
    // A preset dictionary (FDICT set in a valid zlib header) is Zlib::NeedDict.
    let dict = [0x78, 0xbb, 0x06, 0x2c, 0x02, 0x15];
    assert_eq!(
        inflate_bounded(&dict, 100).unwrap_err().kind,
        ErrorKind::NeedDict
    );
}

#[test]
fn a_zlib_bomb_stops_at_the_limit() {
    let bomb = deflate(&vec![0u8; 64 << 20]);
    let err = inflate_bounded(&bomb, 1 << 20).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SizeLimit);
}

#[test]
fn varints_round_trip() {
    for n in [0u64, 1, 127, 128, 300, u64::from(u32::MAX)] {
        let mut out = Vec::new();
        write_varint(&mut out, n);
        let mut r = HeaderReader {
            frame: &out,
            pos: 0,
            end: out.len(),
        };
        assert_eq!(u64::from(r.varint32().unwrap()), n);
        assert_eq!(r.pos, out.len());
    }
}
