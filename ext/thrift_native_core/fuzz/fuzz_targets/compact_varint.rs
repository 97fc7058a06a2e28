//! Compact varints: both readers against a straightforward reference decoder, re-encoding of every decoded value,
//! zigzag round trips, and field headers decoded back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::compact::{
    decode_varint, field_header, unzigzag32, unzigzag64, zigzag32, zigzag64, Varint,
    Varint32Reader, Varint64Reader, MAX_VARINT32_BYTES, MAX_VARINT64_BYTES,
};
use thrift_native_core::CoreError;

fn eof(bytes: &[u8]) -> (Result<u64, CoreError>, usize) {
    let e = CoreError::Eof {
        needed: bytes.len() + 1,
        available: bytes.len(),
    };
    (Err(e), bytes.len())
}

/// The 32-bit rule spelled out: four 7-bit groups, then a 5th byte with no continuation bit and at most 4 bits.
fn reference32(bytes: &[u8]) -> (Result<u64, CoreError>, usize) {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(MAX_VARINT32_BYTES) {
        if i == MAX_VARINT32_BYTES - 1 {
            if b & 0x80 != 0 {
                return (Err(CoreError::VarintTooLong32), i + 1);
            }
            if b > 0x0f {
                return (Err(CoreError::VarintOverflow32), i + 1);
            }
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (Ok(value), i + 1);
        }
    }
    eof(bytes)
}

/// The 64-bit rule: up to ten 7-bit groups, bits beyond 64 dropped, an 11th byte is an error after ten.
fn reference64(bytes: &[u8]) -> (Result<u64, CoreError>, usize) {
    let mut value: u128 = 0;
    for (i, &b) in bytes.iter().enumerate().take(MAX_VARINT64_BYTES) {
        value |= u128::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (Ok(value as u64), i + 1);
        }
        if i == MAX_VARINT64_BYTES - 1 {
            return (Err(CoreError::VarintTooLong64), i + 1);
        }
    }
    eof(bytes)
}

fn word<const N: usize>(data: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, b) in out.iter_mut().zip(data) {
        *o = *b;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    // Both readers agree with the reference, value, error and bytes consumed.
    let (r32, n32) = decode_varint::<Varint32Reader>(data);
    assert_eq!((r32.map(u64::from), n32), reference32(data));
    let (r64, n64) = decode_varint::<Varint64Reader>(data);
    assert_eq!((r64, n64), reference64(data));
    assert!(n32 <= data.len() && n64 <= data.len());

    // In thrift 0.24 a 5th byte's bits beyond 32 are dropped: the same bytes consumed, the same outcome
    // but for the overflow, which becomes the 64-bit reading's low 32 bits.
    let (dropping, n) = decode_varint::<Varint32Reader<false>>(data);
    assert_eq!(n, n32);
    match r32 {
        Err(CoreError::VarintOverflow32) => {
            let low = decode_varint::<Varint64Reader>(&data[..n])
                .0
                .map(|v| v as u32);
            assert_eq!(dropping, low);
        }
        other => assert_eq!(dropping, other),
    }

    // A decoded value re-encodes to at most as many bytes, and that encoding decodes to the same value.
    if let Ok(v) = r32 {
        let enc = Varint::new(v.into());
        assert!(enc.as_bytes().len() <= n32);
        assert_eq!(
            decode_varint::<Varint32Reader>(enc.as_bytes()),
            (Ok(v), enc.as_bytes().len())
        );
    }
    if let Ok(v) = r64 {
        let enc = Varint::new(v);
        assert!(enc.as_bytes().len() <= n64);
        assert_eq!(
            decode_varint::<Varint64Reader>(enc.as_bytes()),
            (Ok(v), enc.as_bytes().len())
        );
    }

    // Zigzag is a bijection both ways, and a zigzagged value survives the varint round trip.
    let n32 = i32::from_le_bytes(word(data));
    let n64 = i64::from_le_bytes(word(data));
    let u32v = u32::from_le_bytes(word(data));
    let u64v = u64::from_le_bytes(word(data));
    assert_eq!(unzigzag32(zigzag32(n32)), n32);
    assert_eq!(unzigzag64(zigzag64(n64)), n64);
    assert_eq!(zigzag32(unzigzag32(u32v)), u32v);
    assert_eq!(zigzag64(unzigzag64(u64v)), u64v);
    assert_eq!(zigzag32(n32) as u64, zigzag64(n32.into()));
    let z = Varint::new(zigzag64(n64));
    assert_eq!(
        decode_varint::<Varint64Reader>(z.as_bytes())
            .0
            .map(unzigzag64),
        Ok(n64)
    );
    let z = Varint::new(zigzag32(n32).into());
    assert!(z.as_bytes().len() <= MAX_VARINT32_BYTES);
    assert_eq!(
        decode_varint::<Varint32Reader>(z.as_bytes())
            .0
            .map(unzigzag32),
        Ok(n32)
    );

    // A field header decodes back to its type and id.
    let ctype = data.get(8).copied().unwrap_or(5) & 0x0f;
    let id = n32 as i16;
    let last = i64::from(i16::from_le_bytes(word(data.get(9..).unwrap_or(&[]))));
    let (hdr, len) = field_header(ctype, id, last);
    assert_eq!(hdr[0] & 0x0f, ctype);
    let delta = i64::from(hdr[0] >> 4);
    if delta != 0 {
        assert_eq!(len, 1);
        assert_eq!(last + delta, i64::from(id));
    } else {
        let (v, used) = decode_varint::<Varint32Reader>(&hdr[1..len]);
        assert_eq!(used, len - 1);
        assert_eq!(unzigzag32(v.unwrap()) as i16, id);
        assert_eq!(unzigzag32(v.unwrap()), i32::from(id));
    }
});
