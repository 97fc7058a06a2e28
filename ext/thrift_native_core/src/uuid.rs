//! UUIDs: 16 raw bytes on the wire, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in Ruby.

use crate::CoreError;

const DASHES: [usize; 4] = [8, 13, 18, 23];

/// Two lower-case hex digits for every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [DIGITS[i >> 4], DIGITS[i & 0x0f]];
        i += 1;
    }
    table
};

/// Parses the canonical text form, upper- or lower-case hex: the bytes that `/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/`
/// accepts, and nothing else.
pub fn parse(text: &[u8]) -> Result<[u8; 16], CoreError> {
    if text.len() != 36 || DASHES.iter().any(|&i| text[i] != b'-') {
        return Err(CoreError::InvalidUuid);
    }
    let mut out = [0u8; 16];
    let mut digits = text
        .iter()
        .enumerate()
        .filter(|(i, _)| !DASHES.contains(i))
        .map(|(_, &c)| c);
    for byte in out.iter_mut() {
        let (hi, lo) = (digits.next(), digits.next());
        match (hi.and_then(hex_value), lo.and_then(hex_value)) {
            (Some(h), Some(l)) => *byte = (h << 4) | l,
            _ => return Err(CoreError::InvalidUuid),
        }
    }
    Ok(out)
}

/// Lower-case dashed hex, as the C accelerator's `read_uuid` returns it.
pub fn format(bytes: &[u8; 16]) -> [u8; 36] {
    let mut out = [b'-'; 36];
    let mut pos = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // A dash follows bytes 3, 5, 7 and 9.
        if matches!(i, 4 | 6 | 8 | 10) {
            pos += 1;
        }
        out[pos..pos + 2].copy_from_slice(&HEX_PAIRS[b as usize]);
        pos += 2;
    }
    out
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &[u8] = b"00112233-4455-6677-8899-aabbccddeeff";
    const BYTES: [u8; 16] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ];

    #[test]
    fn parses_and_formats_the_canonical_form() {
        assert_eq!(parse(TEXT).unwrap(), BYTES);
        assert_eq!(&format(&BYTES), TEXT);
        assert_eq!(
            parse(b"00112233-4455-6677-8899-AABBCCDDEEFF").unwrap(),
            BYTES
        );
    }

    #[test]
    fn rejects_everything_the_regex_rejects() {
        for bad in [
            &b""[..],
            b"00112233-4455-6677-8899-aabbccddeef",
            b"00112233-4455-6677-8899-aabbccddeeff0",
            b"0011223304455-6677-8899-aabbccddeeff",
            b"00112233-4455-6677-8899-aabbccddeefg",
            b"-0112233-4455-6677-8899-aabbccddeeff",
            b"00112233-4455-6677-8899-aabbccddee-f",
            b"0x112233-4455-6677-8899-aabbccddeeff",
            "00112233-4455-6677-8899-aabbccddeeé".as_bytes(),
        ] {
            assert_eq!(
                parse(bad),
                Err(CoreError::InvalidUuid),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn every_byte_value_round_trips() {
        for v in 0..=255u8 {
            let bytes = [v; 16];
            assert_eq!(parse(&format(&bytes)).unwrap(), bytes);
        }
    }
}
