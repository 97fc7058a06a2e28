//! Thrift's binary encoding: fixed-width big-endian integers and doubles, i32-length-prefixed bytes.

use byteorder::{BigEndian, ByteOrder};

use crate::wire::{FieldHeader, ListHeader, MapHeader, Rules, WireInput};
use crate::CoreError;

/// An i32 size of a container or byte string; negative is NegativeSize.
#[inline(always)]
pub fn read_size<I: WireInput>(input: &mut I) -> Result<usize, I::Error> {
    read_size_in(input, Rules::MASTER)
}

/// A byte string's length under `rules`: where they let negative sizes through, a negative length reads as empty
/// (the C accelerator before thrift 0.24 asked `read_all` for it, which answered ""), else it is NegativeSize.
#[inline(always)]
pub fn read_size_in<I: WireInput>(input: &mut I, rules: Rules) -> Result<usize, I::Error> {
    let size = read_container_size(input, rules)?;
    Ok(usize::try_from(size).unwrap_or(0))
}

/// A container's i32 size: negative is NegativeSize unless `rules` let it through.
#[inline(always)]
fn read_container_size<I: WireInput>(input: &mut I, rules: Rules) -> Result<i32, I::Error> {
    let size = decode_i32(input.read_array()?);
    if size < 0 && !rules.negative_sizes.binary {
        return Err(input.error(CoreError::NegativeSize));
    }
    Ok(size)
}

/// A field header: the type byte, then (unless it is STOP) the i16 id.
#[inline(always)]
pub fn read_field_header<I: WireInput>(input: &mut I) -> Result<FieldHeader, I::Error> {
    let ttype = input.read_byte()? as i8;
    if ttype == 0 {
        return Ok(FieldHeader::STOP);
    }
    let id = decode_i16(input.read_array()?);
    Ok(FieldHeader {
        ttype,
        id: id.into(),
    })
}

/// A map header: key type byte, value type byte, i32 size (a negative one let through where `rules` say so).
#[inline(always)]
pub fn read_map_header<I: WireInput>(input: &mut I, rules: Rules) -> Result<MapHeader, I::Error> {
    let key = input.read_byte()? as i8;
    let value = input.read_byte()? as i8;
    let size = read_container_size(input, rules)?.into();
    Ok(MapHeader { key, value, size })
}

/// A list or set header: element type byte, i32 size (a negative one let through where `rules` say so).
#[inline(always)]
pub fn read_list_header<I: WireInput>(input: &mut I, rules: Rules) -> Result<ListHeader, I::Error> {
    let element = input.read_byte()? as i8;
    let size = read_container_size(input, rules)?.into();
    Ok(ListHeader { element, size })
}

/// Decoders for the bytes a transport hands over (`read_into_buffer` fills at most N bytes of a scratch String).
pub fn decode_i16(b: [u8; 2]) -> i16 {
    BigEndian::read_i16(&b)
}
pub fn decode_i32(b: [u8; 4]) -> i32 {
    BigEndian::read_i32(&b)
}
pub fn decode_i64(b: [u8; 8]) -> i64 {
    BigEndian::read_i64(&b)
}
pub fn decode_double(b: [u8; 8]) -> f64 {
    BigEndian::read_f64(&b)
}

pub fn encode_i16(v: i16) -> [u8; 2] {
    let mut b = [0; 2];
    BigEndian::write_i16(&mut b, v);
    b
}
pub fn encode_i32(v: i32) -> [u8; 4] {
    let mut b = [0; 4];
    BigEndian::write_i32(&mut b, v);
    b
}
pub fn encode_i64(v: i64) -> [u8; 8] {
    let mut b = [0; 8];
    BigEndian::write_i64(&mut b, v);
    b
}
pub fn encode_double(v: f64) -> [u8; 8] {
    let mut b = [0; 8];
    BigEndian::write_f64(&mut b, v);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Reader;

    #[test]
    fn fixed_width_round_trips_at_the_boundaries() {
        for v in [i16::MIN, -1, 0, 1, i16::MAX] {
            assert_eq!(decode_i16(encode_i16(v)), v);
        }
        for v in [i32::MIN, -1, 0, 1, i32::MAX] {
            assert_eq!(decode_i32(encode_i32(v)), v);
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            assert_eq!(decode_i64(encode_i64(v)), v);
        }
        for v in [0.0, -0.0, 1.5, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY] {
            assert_eq!(decode_double(encode_double(v)).to_bits(), v.to_bits());
        }
        assert!(decode_double(encode_double(f64::NAN)).is_nan());
    }

    #[test]
    fn encodings_are_big_endian() {
        assert_eq!(encode_i16(0x0102), [1, 2]);
        assert_eq!(encode_i32(-2), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(encode_i64(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(encode_double(1.0), [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn reader_consumes_in_order_and_reports_short_input_without_consuming() {
        let bytes = [0x80, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0xff];
        let mut r = Reader::new(&bytes, 0);
        assert_eq!(r.read_i8().unwrap(), -128);
        assert_eq!(r.read_i16().unwrap(), 1);
        assert_eq!(r.read_i32().unwrap(), 0);
        assert_eq!(r.position(), 7);
        assert_eq!(
            r.read_i32(),
            Err(CoreError::Eof {
                needed: 4,
                available: 2
            })
        );
        assert_eq!(r.position(), 7);
        assert_eq!(r.take(2).unwrap(), &[5, 0xff]);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn sizes_must_not_be_negative() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff], 0);
        assert_eq!(r.read_size(), Err(CoreError::NegativeSize));
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff], 0);
        assert_eq!(r.read_size(), Ok(i32::MAX as usize));
    }

    #[test]
    fn before_thrift_0_24_negative_sizes_pass_and_a_negative_length_reads_nothing() {
        let mut legacy = Rules::MASTER;
        legacy.negative_sizes.binary = true;
        let bytes = [0x08, 0xff, 0xff, 0xff, 0xfd, 0x0b, 0x08, 0x80, 0, 0, 0];
        let mut r = Reader::new(&bytes, 0);
        let list = ListHeader {
            element: 8,
            size: -3,
        };
        assert_eq!(read_list_header(&mut r, legacy), Ok(list));
        let map = MapHeader {
            key: 11,
            value: 8,
            size: i32::MIN.into(),
        };
        assert_eq!(read_map_header(&mut r, legacy), Ok(map));
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x61], 0);
        assert_eq!(read_size_in(&mut r, legacy), Ok(0));
        assert_eq!(r.remaining(), 1);
        let mut r = Reader::new(&bytes, 0);
        assert_eq!(
            read_list_header(&mut r, Rules::MASTER),
            Err(CoreError::NegativeSize)
        );
    }

    #[test]
    fn headers_decode_as_written_by_the_binary_protocol() {
        let mut r = Reader::new(&[0x08, 0x00, 0x07, 0x00], 0);
        assert_eq!(
            read_field_header(&mut r),
            Ok(FieldHeader { ttype: 8, id: 7 })
        );
        assert_eq!(read_field_header(&mut r), Ok(FieldHeader::STOP));
        assert_eq!(r.remaining(), 0);

        let mut r = Reader::new(&[0xff, 0x80, 0x00], 0);
        assert_eq!(
            read_field_header(&mut r),
            Ok(FieldHeader {
                ttype: -1,
                id: -32768
            })
        );

        let mut r = Reader::new(&[0x0b, 0x08, 0, 0, 0, 2, 0x0c, 0, 0, 1, 0], 0);
        assert_eq!(
            read_map_header(&mut r, Rules::MASTER),
            Ok(MapHeader {
                key: 11,
                value: 8,
                size: 2
            })
        );
        assert_eq!(
            read_list_header(&mut r, Rules::MASTER),
            Ok(ListHeader {
                element: 12,
                size: 256
            })
        );
    }

    #[test]
    fn header_errors() {
        let mut r = Reader::new(&[0x0f, 0xff, 0xff, 0xff, 0xfe], 0);
        assert_eq!(
            read_list_header(&mut r, Rules::MASTER),
            Err(CoreError::NegativeSize)
        );
        let mut r = Reader::new(&[0x08, 0x00], 0);
        assert_eq!(
            read_field_header(&mut r),
            Err(CoreError::Eof {
                needed: 2,
                available: 1
            })
        );
        assert_eq!(
            r.position(),
            1,
            "the type byte was consumed, the short id not"
        );
    }

    #[test]
    fn a_start_past_the_end_is_clamped() {
        let r = Reader::new(&[1, 2], 5);
        assert_eq!(r.remaining(), 0);
    }
}
