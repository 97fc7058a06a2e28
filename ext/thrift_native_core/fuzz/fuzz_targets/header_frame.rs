//! THeader frames: any bytes after a header magic parse without a panic, within the frame, and what parses writes
//! back to a frame that parses to the same fields; the first word and frame-kind checks take any bytes; the bounded
//! inflate never returns more than its limit and undoes the deflate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::header::{
    self, check_frame_size, first_word, frame_kind, inflate_bounded, FirstWord, FrameHeader,
    FrameKind, FIXED_LEN, MAX_HEADER_WORDS,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => parse_and_rewrite(rest),
        1 => {
            if rest.len() >= 4 {
                let word = [rest[0], rest[1], rest[2], rest[3]];
                if let FirstWord::Framed(size) = first_word(word) {
                    if check_frame_size(size, u64::from(header::MAX_FRAME_SIZE)).is_ok() {
                        assert!(size >= 4);
                    }
                }
                let _ = frame_kind(rest);
            }
        }
        _ => {
            let max = usize::from(mode) * 97;
            if let Ok(out) = inflate_bounded(rest, max) {
                assert!(out.len() <= max);
            }
            let packed = header::deflate(rest);
            assert_eq!(inflate_bounded(&packed, rest.len()).unwrap(), rest);
        }
    }
});

fn parse_and_rewrite(rest: &[u8]) {
    let mut frame = vec![0x0f, 0xff];
    frame.extend_from_slice(rest);
    if frame.len() < FIXED_LEN {
        return;
    }
    assert_eq!(frame_kind(&frame).unwrap(), FrameKind::Header);
    let p = header::parse_header(&frame);
    for (k, v) in &p.headers {
        assert!(k.len() + v.len() <= frame.len());
    }
    if p.error.is_some() {
        return;
    }
    assert!(frame.ends_with(p.payload));
    let h = FrameHeader {
        flags: p.flags,
        sequence_id: p.sequence_id as u32,
        protocol_id: u64::from(p.protocol_id.expect("parsed")),
        transforms: &p.transforms,
        headers: &p.headers,
    };
    let block = header::header_block(&h);
    assert_eq!(block.len() % 4, 0);
    if block.len() / 4 >= usize::from(MAX_HEADER_WORDS) {
        return;
    }
    let mut out = header::frame_prefix(&h, &block, p.payload.len());
    out.extend_from_slice(p.payload);
    let size = u32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
    assert_eq!(size, out.len() - 4);
    let again = header::parse_header(&out[4..]);
    assert_eq!(again.error, None);
    assert_eq!(
        (again.flags, again.sequence_id, again.protocol_id),
        (p.flags, p.sequence_id, p.protocol_id)
    );
    assert_eq!(again.transforms, p.transforms);
    assert_eq!(again.headers, p.headers);
    assert_eq!(again.payload, p.payload);
}
