//! Gzip headers: `write_to` appends exactly `len()` bytes, and they parse back (RFC 1952) to the settings, with
//! names and comments cut at their first NUL; the footer is CRC32 then ISIZE, little-endian.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thrift_native_core::gzip::{
    self, extra_flags, footer, truncate_at_nul, Header, FIXED_HEADER_LEN, FLAG_COMMENT,
    FLAG_ORIG_NAME, MAGIC_AND_METHOD,
};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (fixed, rest) = data.split_at(8);
    let mtime = u32::from_le_bytes(fixed[0..4].try_into().unwrap());
    let level = i32::from(fixed[4] as i8);
    let os_code = fixed[5];
    let split = usize::from(fixed[6]).min(rest.len());
    let (name, comment) = rest.split_at(split);
    let header = Header {
        mtime,
        level,
        orig_name: (fixed[7] & 1 != 0).then_some(name),
        comment: (fixed[7] & 2 != 0).then_some(comment),
        os_code,
    };

    // Appends after whatever is already there.
    let prefix = &data[..usize::from(fixed[7] >> 4).min(data.len())];
    let mut out = prefix.to_vec();
    header.write_to(&mut out);
    assert_eq!(&out[..prefix.len()], prefix);
    let h = &out[prefix.len()..];
    assert_eq!(h.len(), header.len());
    assert!(!header.is_empty() && h.len() >= FIXED_HEADER_LEN);

    assert_eq!(&h[..3], &MAGIC_AND_METHOD);
    let flags = h[3];
    assert_eq!(flags & FLAG_ORIG_NAME != 0, header.orig_name.is_some());
    assert_eq!(flags & FLAG_COMMENT != 0, header.comment.is_some());
    assert_eq!(flags & !(FLAG_ORIG_NAME | FLAG_COMMENT), 0);
    assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), mtime);
    let want_xfl = match level {
        1 => 4,
        9 => 2,
        _ => 0,
    };
    assert_eq!(h[8], want_xfl);
    assert_eq!(extra_flags(level), want_xfl);
    assert_eq!(h[9], os_code);

    let mut tail = &h[FIXED_HEADER_LEN..];
    for (flag, field) in [
        (FLAG_ORIG_NAME, header.orig_name),
        (FLAG_COMMENT, header.comment),
    ] {
        if flags & flag == 0 {
            continue;
        }
        let end = tail
            .iter()
            .position(|&b| b == 0)
            .expect("a NUL-terminated field");
        assert_eq!(&tail[..end], truncate_at_nul(field.unwrap()));
        assert!(!tail[..end].contains(&0));
        tail = &tail[end + 1..];
    }
    assert!(tail.is_empty());

    let total = u64::from_le_bytes(data[..8].try_into().unwrap());
    let f = footer(mtime, total);
    assert_eq!(u32::from_le_bytes(f[..4].try_into().unwrap()), mtime);
    assert_eq!(u32::from_le_bytes(f[4..].try_into().unwrap()), total as u32);
    assert!(gzip::valid_level(level.into()) == (-1..=9).contains(&level));
    if gzip::valid_level(level.into()) {
        assert!((0..=9).contains(&gzip::effective_level(level)));
    }
});
