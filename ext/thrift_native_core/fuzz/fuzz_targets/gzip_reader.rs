//! The gzip reader (gzip::inflate): any bytes, fed in any chunk sizes and read out in any piece sizes, never panic,
//! never make more output than the space given, agree with one parse of the whole input, and stop (progress or an
//! answer at every step); what the writer (gzip::deflate) makes of the same bytes reads back to them, footer checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::gzip::deflate::Deflate;
use thrift_native_core::gzip::inflate::{parse_header, HeaderParse, Inflate};
use thrift_native_core::gzip::{Header, FOOTER_LEN};

/// Reads `input` as one member, `chunk` bytes made available at a time, `piece` bytes of output asked each step:
/// the output, or None where the header or body was refused or the input ended first.
fn read(input: &[u8], chunk: usize, piece: usize) -> Option<(Vec<u8>, bool)> {
    let mut available = chunk.min(input.len());
    let header = loop {
        let at_end = available == input.len();
        let parsed = parse_header(&input[..available], at_end);
        // Whatever a prefix settles, the whole input settles the same way.
        if !matches!(parsed, Ok(HeaderParse::Incomplete)) {
            assert_eq!(parsed, parse_header(input, true));
        }
        match parsed {
            Ok(HeaderParse::Complete(h)) => break h,
            Ok(HeaderParse::Incomplete) => {
                assert!(!at_end);
                available = (available + chunk).min(input.len());
            }
            Err(_) => return None,
        }
    };
    assert!(header.len <= input.len());
    let mut inflate = Inflate::new();
    let mut at = header.len;
    let mut out = Vec::new();
    let mut space = vec![0u8; piece];
    while !inflate.ended() {
        if at == available && available < input.len() {
            available = (available + chunk).min(input.len());
        }
        let step = inflate.inflate(&input[at..available], &mut space).ok()?;
        assert!(step.produced <= piece && at + step.consumed <= available);
        out.extend_from_slice(&space[..step.produced]);
        at += step.consumed;
        assert_eq!(inflate.total_out(), out.len() as u64);
        if step.consumed == 0 && step.produced == 0 && !step.stream_end && available == input.len()
        {
            return None; // the input ended inside the body
        }
    }
    let footer: &[u8; FOOTER_LEN] = input.get(at..at + FOOTER_LEN)?.try_into().ok()?;
    Some((out, inflate.check_footer(footer).is_ok()))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let chunk = 1 + usize::from(data[0]) * 16;
    let piece = 1 + usize::from(data[1]) * 64;
    let body = &data[2..];
    read(body, chunk, piece);

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
    assert_eq!(read(&member, chunk, piece), Some((body.to_vec(), true)));
});
