//! Sequences of binary `Reader` operations against a shadow model: every read returns the big-endian value at the
//! shadow position and advances it, a short read returns Eof with the exact counts and consumes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::binary;
use thrift_native_core::reader::Reader;
use thrift_native_core::CoreError;

fuzz_target!(|data: &[u8]| {
    let Some((&n_ops, rest)) = data.split_first() else {
        return;
    };
    let n_ops = usize::from(n_ops % 64).min(rest.len());
    let (ops, payload) = rest.split_at(n_ops);
    let start = ops
        .first()
        .map_or(0, |&b| usize::from(b) % (payload.len() + 4));
    let mut r = Reader::new(payload, start);
    let mut pos = start.min(payload.len());
    assert_eq!(r.position(), pos);

    for (k, &op) in ops.iter().enumerate() {
        let remaining = payload.len() - pos;
        let width = match op % 8 {
            0 => 1,
            1 => 2,
            2 | 5 => 4,
            3 | 4 => 8,
            6 => match op >> 3 {
                31 => usize::MAX,
                30 => remaining + 1,
                n => usize::from(n),
            },
            _ => 3,
        };
        let at = |n: usize| &payload[pos..pos + n];
        if width > remaining {
            let eof = Err(CoreError::Eof {
                needed: width,
                available: remaining,
            });
            match op % 8 {
                0 => assert_eq!(r.read_i8().map(drop), eof),
                1 => assert_eq!(r.read_i16().map(drop), eof),
                2 => assert_eq!(r.read_i32().map(drop), eof),
                3 => assert_eq!(r.read_i64().map(drop), eof),
                4 => assert_eq!(r.read_double().map(drop), eof),
                5 => assert_eq!(r.read_size().map(drop), eof),
                6 => assert_eq!(r.take(width).map(drop), eof),
                _ => assert_eq!(r.read_array::<3>().map(drop), eof),
            }
        } else {
            match op % 8 {
                0 => assert_eq!(r.read_i8(), Ok(at(1)[0] as i8)),
                1 => assert_eq!(
                    r.read_i16(),
                    Ok(i16::from_be_bytes(at(2).try_into().unwrap()))
                ),
                2 => assert_eq!(
                    r.read_i32(),
                    Ok(i32::from_be_bytes(at(4).try_into().unwrap()))
                ),
                3 => assert_eq!(
                    r.read_i64(),
                    Ok(i64::from_be_bytes(at(8).try_into().unwrap()))
                ),
                4 => {
                    let bits = u64::from_be_bytes(at(8).try_into().unwrap());
                    let d = r.read_double().unwrap();
                    assert_eq!(d.to_bits(), bits);
                    assert_eq!(
                        binary::decode_double(binary::encode_double(d)).to_bits(),
                        bits
                    );
                }
                5 => {
                    let v = i32::from_be_bytes(at(4).try_into().unwrap());
                    let want = usize::try_from(v).map_err(|_| CoreError::NegativeSize);
                    assert_eq!(r.read_size(), want);
                }
                6 => assert_eq!(r.take(width), Ok(at(width))),
                _ => assert_eq!(r.read_array::<3>(), Ok(<[u8; 3]>::try_from(at(3)).unwrap())),
            }
            pos += width;
        }
        assert_eq!(r.position(), pos, "after op {k}");
        assert_eq!(r.remaining(), payload.len() - pos);
        // A copy is an independent cursor.
        let mut copy = r;
        let _ = copy.read_i8();
        assert_eq!(r.position(), pos);
    }
});
