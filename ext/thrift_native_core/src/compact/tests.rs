//! The compact encoding's varints, zigzag, headers and sizes, pinned to bytes.
use super::*;

fn read32(bytes: &[u8]) -> (Result<u32, CoreError>, usize) {
    decode_varint::<Varint32Reader>(bytes)
}

fn read64(bytes: &[u8]) -> (Result<u64, CoreError>, usize) {
    decode_varint::<Varint64Reader>(bytes)
}

#[test]
fn zigzag_round_trips_at_the_boundaries() {
    for n in [i32::MIN, -2, -1, 0, 1, 2, i32::MAX] {
        assert_eq!(unzigzag32(zigzag32(n)), n);
    }
    for n in [i64::MIN, -1, 0, 1, i64::MAX] {
        assert_eq!(unzigzag64(zigzag64(n)), n);
    }
    assert_eq!(zigzag32(-1), 1);
    assert_eq!(zigzag32(1), 2);
    assert_eq!(zigzag32(i32::MIN), u32::MAX);
    assert_eq!(zigzag64(i64::MIN), u64::MAX);
}

#[test]
fn varints_encode_as_leb128() {
    assert_eq!(Varint::new(0).as_bytes(), &[0]);
    assert_eq!(Varint::new(127).as_bytes(), &[0x7f]);
    assert_eq!(Varint::new(128).as_bytes(), &[0x80, 0x01]);
    assert_eq!(Varint::new(300).as_bytes(), &[0xac, 0x02]);
    assert_eq!(
        Varint::new(u32::MAX.into()).as_bytes(),
        &[0xff, 0xff, 0xff, 0xff, 0x0f]
    );
    assert_eq!(
        Varint::new(u64::MAX).as_bytes(),
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
    );
}

#[test]
fn varints_round_trip() {
    for n in [0u64, 1, 127, 128, 16383, 16384, u32::MAX.into()] {
        let v = Varint::new(n);
        assert_eq!(read32(v.as_bytes()), (Ok(n as u32), v.as_bytes().len()));
    }
    for n in [0u64, 1, 1 << 35, 1 << 63, u64::MAX] {
        let v = Varint::new(n);
        assert_eq!(read64(v.as_bytes()), (Ok(n), v.as_bytes().len()));
    }
}

#[test]
fn varint32_limits() {
    assert_eq!(
        read32(&[0x80, 0x80, 0x80, 0x80, 0x0f]),
        (Ok(0xf000_0000), 5)
    );
    assert_eq!(
        read32(&[0xff, 0xff, 0xff, 0xff, 0x07]),
        (Ok(i32::MAX as u32), 5)
    );
    assert_eq!(
        read32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
        (Err(CoreError::VarintTooLong32), 5)
    );
    for last in [0x10, 0x7f] {
        assert_eq!(
            read32(&[0x80, 0x80, 0x80, 0x80, last]),
            (Err(CoreError::VarintOverflow32), 5)
        );
    }
}

#[test]
fn varint64_limits() {
    let mut ten = [0xffu8; 10];
    ten[9] = 0x7f; // bits beyond 64 are dropped
    assert_eq!(read64(&ten), (Ok(u64::MAX), 10));
    assert_eq!(read64(&[0x80; 11]), (Err(CoreError::VarintTooLong64), 10));
}

#[test]
fn a_short_varint_is_eof_after_all_its_bytes() {
    assert_eq!(
        read32(&[0x80, 0x80]),
        (
            Err(CoreError::Eof {
                needed: 3,
                available: 2
            }),
            2
        )
    );
    assert_eq!(read64(&[]).1, 0);
    assert_eq!(read32(&[0x05, 0xff]), (Ok(5), 1));
}

#[test]
fn type_mapping_both_ways() {
    for t in [2u8, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16] {
        let c = compact_type_of(t.into()).unwrap();
        assert_eq!(thrift_type_of(c), Ok(t));
    }
    assert_eq!(thrift_type_of(ctype::BOOLEAN_FALSE), Ok(ttype::BOOL));
    assert_eq!(thrift_type_of(0), Ok(0));
    for bad in [0i64, 1, 5, 7, 9, 17, 99, -1, 256] {
        assert_eq!(
            compact_type_of(bad),
            Err(CoreError::UnknownCompactType(bad))
        );
    }
    for bad in [14u8, 15] {
        assert_eq!(
            thrift_type_of(bad),
            Err(CoreError::UnknownCompactType(bad.into()))
        );
    }
}

#[test]
fn field_headers_use_deltas_up_to_15() {
    assert_eq!(field_header(ctype::I32, 1, 0), ([0x15, 0, 0, 0], 1));
    assert_eq!(field_header(ctype::I32, 15, 0), ([0xf5, 0, 0, 0], 1));
    assert_eq!(field_header(ctype::I32, 16, 0), ([0x05, 0x20, 0, 0], 2));
    assert_eq!(field_header(ctype::I32, 3, 3), ([0x05, 0x06, 0, 0], 2));
    assert_eq!(field_header(ctype::I32, -1, 0), ([0x05, 0x01, 0, 0], 2));
    assert_eq!(
        field_header(ctype::BYTE, i16::MIN, 0),
        ([0x03, 0xff, 0xff, 0x03], 4)
    );
}

fn bytes(b: &[u8]) -> crate::reader::Reader<'_> {
    crate::reader::Reader::new(b, 0)
}

#[test]
fn field_headers_read_deltas_long_ids_and_bool_values() {
    let mut last = 0;
    let mut r = bytes(&[0x15, 0x21, 0x0c, 0x03, 0x00]);
    let f = read_field_header(&mut r, &mut last).unwrap();
    assert_eq!(f.header, FieldHeader { ttype: 8, id: 1 });
    assert_eq!(f.bool_value, None);
    let f = read_field_header(&mut r, &mut last).unwrap();
    assert_eq!(f.header, FieldHeader { ttype: 2, id: 3 });
    assert_eq!(f.bool_value, Some(true));
    let f = read_field_header(&mut r, &mut last).unwrap();
    assert_eq!(f.header, FieldHeader { ttype: 12, id: -2 });
    assert_eq!(last, -2);
    let f = read_field_header(&mut r, &mut last).unwrap();
    assert_eq!(f.header, FieldHeader::STOP);
    assert_eq!(last, -2, "STOP leaves the last id alone");
    // A long-form id is an i16: 65535 (zigzag of 131070) keeps its low 16 bits, as in the C accelerator.
    let mut r = bytes(&[0x02, 0xfe, 0xff, 0x07]);
    let f = read_field_header(&mut r, &mut last).unwrap();
    assert_eq!(f.header, FieldHeader { ttype: 2, id: -1 });
    assert_eq!(f.bool_value, Some(false));
}

/// The rules of a thrift before 0.23 (no UUID, negative sizes let through, varint32 overflow dropped).
const LEGACY: Rules = Rules {
    uuid: false,
    negative_sizes: crate::wire::NegativeSizes {
        binary: true,
        compact: true,
    },
    varint32: Varint32Rule::Wide,
};
const MASTER: Rules = Rules::MASTER;
/// thrift 0.24's rules: its varint32, and a compact container size beyond INT32_MAX answered (unsigned).
const DROPPING: Rules = Rules {
    varint32: Varint32Rule::Dropping,
    negative_sizes: crate::wire::NegativeSizes {
        binary: false,
        compact: true,
    },
    ..Rules::MASTER
};

#[test]
fn compact_type_13_is_uuid_only_for_a_thrift_with_uuid() {
    let mut last = 0;
    let f = read_field_header_in(&mut bytes(&[0x1d]), &mut last, MASTER).unwrap();
    assert_eq!(f.header, FieldHeader { ttype: 16, id: 1 });
    assert_eq!(
        read_field_header_in(&mut bytes(&[0x1d]), &mut last, LEGACY),
        Err(CoreError::UnknownCompactType(13))
    );
    assert_eq!(last, 2, "the id is taken before the type is checked");
    assert_eq!(
        read_list_header(&mut bytes(&[0x1d]), MASTER).map(|h| h.element),
        Ok(16)
    );
    assert_eq!(
        read_list_header(&mut bytes(&[0x1d]), LEGACY),
        Err(CoreError::UnknownCompactType(13))
    );
    // Both types unknown: the value type is named on x86_64, the key type on aarch64 (where thrift master knows 13,
    // UUID, only 14 is unknown whatever the order).
    let (first, other) = if VALUE_TYPE_FIRST { (13, 14) } else { (14, 13) };
    assert_eq!(
        read_map_header(&mut bytes(&[0x01, 0xed]), LEGACY),
        Err(CoreError::UnknownCompactType(first))
    );
    assert_eq!(
        read_map_header(&mut bytes(&[0x01, 0xde]), LEGACY),
        Err(CoreError::UnknownCompactType(other))
    );
    assert_eq!(
        read_map_header(&mut bytes(&[0x01, 0xed]), MASTER),
        Err(CoreError::UnknownCompactType(14))
    );
    assert_eq!(thrift_type_in(ctype::I32, LEGACY), Ok(ttype::I32));
}

#[test]
fn header_errors_name_the_bad_type_and_size() {
    let mut last = 0;
    assert_eq!(
        read_field_header(&mut bytes(&[0x1e]), &mut last),
        Err(CoreError::UnknownCompactType(14))
    );
    assert_eq!(last, 1, "the id is taken before the type is checked");
    assert_eq!(
        read_list_header(
            &mut bytes(&[0xf8, 0x80, 0x80, 0x80, 0x80, 0x08]),
            Rules::MASTER
        ),
        Err(CoreError::ContainerSizeLimit)
    );
    assert_eq!(
        read_map_header(&mut bytes(&[0x01, 0xe8]), Rules::MASTER),
        Err(CoreError::UnknownCompactType(14))
    );
    assert_eq!(
        read_size(&mut bytes(&[0xff, 0xff, 0xff, 0xff, 0x0f]), MASTER),
        Err(CoreError::BinarySizeLimit)
    );
}

#[test]
fn older_thrifts_answer_negative_sizes_and_cut_varint32s() {
    let size = [0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f];
    let list = ListHeader {
        element: ttype::I32 as i8,
        size: -1,
    };
    assert_eq!(read_list_header(&mut bytes(&size), LEGACY), Ok(list));
    let map = read_map_header(&mut bytes(&[0x80, 0x80, 0x80, 0x80, 0x08, 0x55]), LEGACY);
    assert_eq!(map.map(|h| h.size), Ok(i32::MIN.into()));
    // thrift 0.24 answers the unsigned value (its varint32 is a uint32).
    let map = read_map_header(&mut bytes(&[0x80, 0x80, 0x80, 0x80, 0x08, 0x55]), DROPPING);
    assert_eq!(map.map(|h| h.size), Ok(1 << 31));
    assert_eq!(
        read_list_header(&mut bytes(&size), DROPPING).map(|h| h.size),
        Ok(u32::MAX.into())
    );
    // A byte string's length stays limited: a transport may allocate what `read_all` is asked for.
    assert_eq!(
        read_size(&mut bytes(&size[1..]), LEGACY),
        Err(CoreError::BinarySizeLimit)
    );
    // The 5th byte's bits beyond 32 (0x10) are dropped before master, refused on it.
    let over = [0x80, 0x80, 0x80, 0x80, 0x10];
    for rules in [LEGACY, DROPPING] {
        assert_eq!(read_i32(&mut bytes(&over), rules), Ok(0));
    }
    assert_eq!(
        read_i32(&mut bytes(&over), MASTER),
        Err(CoreError::VarintOverflow32)
    );
    let max = [0xfe, 0xff, 0xff, 0xff, 0x7f];
    assert_eq!(read_i32(&mut bytes(&max), DROPPING), Ok(i32::MAX));
    // Before 0.24 a varint32 was a varint64 cut to 32 bits (10 bytes at most here); since, 5 bytes at most.
    let six = [0x82, 0x80, 0x80, 0x80, 0x80, 0x01];
    assert_eq!(read_i32(&mut bytes(&six), LEGACY), Ok(1));
    for rules in [DROPPING, MASTER] {
        let got = read_i32(&mut bytes(&six), rules);
        assert_eq!(got, Err(CoreError::VarintTooLong32));
    }
    let eleven = [0x80; 11];
    assert_eq!(
        read_i32(&mut bytes(&eleven), LEGACY),
        Err(CoreError::VarintTooLong64)
    );
    // A byte string's length is not cut: beyond INT32_MAX it is refused.
    let long = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    assert_eq!(
        read_size(&mut bytes(&long), LEGACY),
        Err(CoreError::BinarySizeLimit)
    );
}

#[test]
fn container_headers_round_trip() {
    for size in [0u32, 1, 14, 15, 300, i32::MAX as u32] {
        let (b, n) = list_header(ctype::I32, size);
        assert_eq!(
            read_list_header(&mut bytes(&b[..n]), Rules::MASTER),
            Ok(ListHeader {
                element: ttype::I32 as i8,
                size: size.into()
            })
        );
        let (b, n) = map_header(ctype::BINARY, ctype::STRUCT, size);
        let expected = if size == 0 {
            (0, 0)
        } else {
            (ttype::STRING as i8, ttype::STRUCT as i8)
        };
        assert_eq!(
            read_map_header(&mut bytes(&b[..n]), Rules::MASTER),
            Ok(MapHeader {
                key: expected.0,
                value: expected.1,
                size: size.into()
            })
        );
    }
    assert_eq!(list_header(ctype::BYTE, 14).0[0], 0xe3);
    assert_eq!(&list_header(ctype::BYTE, 15).0[..2], &[0xf3, 0x0f]);
    assert_eq!(&map_header(ctype::I32, ctype::I64, 1).0[..2], &[0x01, 0x56]);
}

#[test]
fn doubles_are_little_endian() {
    assert_eq!(encode_double(1.0), [0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
    assert_eq!(
        decode_double(encode_double(-0.0)).to_bits(),
        (-0.0f64).to_bits()
    );
}
