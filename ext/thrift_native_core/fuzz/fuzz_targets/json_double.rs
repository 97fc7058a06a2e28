//! The JSON encoder's doubles: every finite double is written as text that reads back as that very double (sign of
//! zero included), in Ruby's `Float#to_s` shapes (`D.DDD`, or `D.DDDe+XX` / `D.DDDe-XX` with at least two exponent
//! digits), never longer than 17 significant digits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::json::format_double;

fuzz_target!(|data: [u8; 8]| {
    let f = f64::from_bits(u64::from_le_bytes(data));
    if !f.is_finite() {
        return;
    }
    let mut out = Vec::new();
    format_double(f, &mut out);
    let text = std::str::from_utf8(&out).expect("ASCII");
    let back: f64 = text.parse().expect("Rust reads Ruby's float text");
    assert_eq!(back.to_bits(), f.to_bits(), "{text}");
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (text, None),
    };
    let (whole, fraction) = mantissa
        .trim_start_matches('-')
        .split_once('.')
        .expect("a point, always");
    assert!(!whole.is_empty() && !fraction.is_empty(), "{text}");
    assert!(
        whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit()),
        "{text}"
    );
    if let Some(e) = exponent {
        assert!(e.starts_with('+') || e.starts_with('-'), "{text}");
        assert!(e.len() >= 3, "{text}");
        assert_eq!(whole.len(), 1, "{text}");
    }
    let significant = whole
        .bytes()
        .chain(fraction.bytes())
        .skip_while(|&b| b == b'0')
        .count();
    assert!(significant <= 17 + 1, "{text}");
});
