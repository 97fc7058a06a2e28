//! UUID text: `parse` accepts exactly what `/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/` accepts, and `format` inverts it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::{uuid, CoreError};

fn canonical(text: &[u8]) -> bool {
    text.len() == 36
        && text.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fuzz_target!(|data: &[u8]| {
    match uuid::parse(data) {
        Ok(bytes) => {
            assert!(canonical(data));
            assert_eq!(&uuid::format(&bytes)[..], &data.to_ascii_lowercase()[..]);
        }
        Err(e) => {
            assert_eq!(e, CoreError::InvalidUuid);
            assert!(!canonical(data));
        }
    }
    if data.len() >= 16 {
        let mut raw = [0u8; 16];
        raw.copy_from_slice(&data[..16]);
        let text = uuid::format(&raw);
        assert!(canonical(&text));
        assert_eq!(uuid::parse(&text), Ok(raw));
        assert_eq!(uuid::parse(&text.to_ascii_uppercase()), Ok(raw));
    }
});
