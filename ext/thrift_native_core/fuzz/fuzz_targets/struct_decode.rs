//! Whole structs and unions through the struct codec the Ruby binding runs (`codec::read_struct`,
//! `codec::write_struct`/`write_union` with the binary and compact encodings), with plain Rust values. The input's
//! first byte says how many of the following bytes describe the definition; the rest is the payload. For each
//! encoding: decoding never panics, makes no more values than it consumes bytes (memory bounded by the input), and a
//! struct it decodes encodes back to bytes that decode to the same value in that encoding and in the other one;
//! encoding is canonical (re-encoding those bytes' value gives the same bytes).
#![no_main]

#[path = "common/schema.rs"]
mod schema;

use libfuzzer_sys::fuzz_target;
use schema::{unencodable, DefBytes};
use thrift_native_core::plain::{decode, decode_with, encode, Encoding, Value};
use thrift_native_core::codec::DEFAULT_DEPTH;
use thrift_native_core::wire::{NegativeSizes, Rules, Varint32Rule};
use thrift_native_core::CoreError;

/// thrift 0.14-0.22's rules.
const LEGACY: Rules = Rules {
    uuid: false,
    negative_sizes: NegativeSizes {
        binary: true,
        compact: true,
    },
    varint32: Varint32Rule::Wide,
};

fn encoded(v: &Value<'_>, encoding: Encoding) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::new();
    encode(v, encoding, &mut out).map(|()| out)
}

fn other(encoding: Encoding) -> Encoding {
    match encoding {
        Encoding::Binary => Encoding::Compact,
        Encoding::Compact => Encoding::Binary,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (def_bytes, payload) = rest.split_at(usize::from(n % 48).min(rest.len()));
    let def = DefBytes(def_bytes).struct_def(0);

    for encoding in [Encoding::Binary, Encoding::Compact] {
        // The rules of a thrift before 0.23 (negative sizes reach the decoder): no panic, no more values than bytes.
        if let Ok((value, consumed)) = decode_with(payload, encoding, &def, DEFAULT_DEPTH, LEGACY) {
            assert!(consumed <= payload.len());
            assert!(value.nodes() <= consumed);
        }
        let Ok((value, consumed)) = decode(payload, encoding, &def, DEFAULT_DEPTH) else {
            continue;
        };
        assert!(consumed <= payload.len());
        assert!(
            value.nodes() <= consumed,
            "{} values from {consumed} bytes",
            value.nodes()
        );
        let bytes = match encoded(&value, encoding) {
            Ok(bytes) => bytes,
            Err(e) => {
                // The first reason the encoder meets, in field order, need not be the first one found here.
                assert!(
                    unencodable(&value).is_some(),
                    "{e}: {value:?} should have encoded"
                );
                continue;
            }
        };
        assert!(unencodable(&value).is_none(), "{value:?} encoded");
        for again in [encoding, other(encoding)] {
            let bytes = if again == encoding {
                bytes.clone()
            } else {
                encoded(&value, again).expect("encodes in one encoding, so in the other")
            };
            let (decoded, n) = decode(&bytes, again, &def, DEFAULT_DEPTH)
                .unwrap_or_else(|e| panic!("{again:?} {e}: {value:?}"));
            assert_eq!(n, bytes.len());
            assert_eq!(decoded, value, "{again:?}");
            assert_eq!(
                encoded(&decoded, again).unwrap(),
                bytes,
                "{again:?} canonical"
            );
        }
    }
});
