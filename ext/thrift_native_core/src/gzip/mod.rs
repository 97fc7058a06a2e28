//! Gzip as Ruby's `Zlib::GzipWriter` writes it: the framing (RFC 1952: the header bytes for a given mtime, level,
//! original name, comment and OS code, the XFL rule, the 8-byte footer) here, and the deflate body in [`deflate`]:
//! a raw deflate stream (window 15, memLevel 8) with zlib's answers to every flush mode, before and after FINISH.
//! The reader side, as `Zlib::GzipReader` reads a member: the header and the body in [`inflate`], the buffers and
//! the checks around them in [`reader`].

pub mod deflate;
pub mod inflate;
pub mod reader;

/// First two bytes of every gzip member, then CM = 8 (deflate).
pub const MAGIC_AND_METHOD: [u8; 3] = [0x1f, 0x8b, 0x08];
/// FLG bit: an original file name follows the fixed header.
pub const FLAG_ORIG_NAME: u8 = 0x08;
/// FLG bit: a comment follows the file name (if any).
pub const FLAG_COMMENT: u8 = 0x10;
/// XFL when the level is 9 (best compression).
pub const EXTRAFLAG_SLOW: u8 = 0x02;
/// XFL when the level is 1 (best speed).
pub const EXTRAFLAG_FAST: u8 = 0x04;
/// Length of the header without optional fields.
pub const FIXED_HEADER_LEN: usize = 10;
/// Length of the footer: CRC32 then ISIZE, both little-endian.
pub const FOOTER_LEN: usize = 8;

/// The valid deflate levels: -1 (default, which is 6) and 0..=9.
pub fn valid_level(level: i64) -> bool {
    (-1..=9).contains(&level)
}

/// The valid deflate strategies: DEFAULT_STRATEGY, FILTERED, HUFFMAN_ONLY, RLE, FIXED.
pub fn valid_strategy(strategy: i64) -> bool {
    (0..=4).contains(&strategy)
}

/// The level deflate actually uses: -1 means 6.
pub fn effective_level(level: i32) -> u32 {
    if level < 0 {
        6
    } else {
        level as u32
    }
}

/// XFL as Ruby writes it: 4 for level 1, 2 for level 9, else 0 (also for 0 and -1, unlike flate2's GzBuilder).
pub fn extra_flags(level: i32) -> u8 {
    match level {
        1 => EXTRAFLAG_FAST,
        9 => EXTRAFLAG_SLOW,
        _ => 0,
    }
}

/// `bytes` up to (not including) the first NUL: what Ruby keeps of `orig_name=` and `comment=`.
pub fn truncate_at_nul(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

/// The settings the header is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    pub mtime: u32,
    pub level: i32,
    pub orig_name: Option<&'a [u8]>,
    pub comment: Option<&'a [u8]>,
    pub os_code: u8,
}

impl Header<'_> {
    /// Number of bytes `write_to` appends.
    pub fn len(&self) -> usize {
        let field = |f: Option<&[u8]>| f.map_or(0, |b| truncate_at_nul(b).len() + 1);
        FIXED_HEADER_LEN + field(self.orig_name) + field(self.comment)
    }

    /// Never empty: the fixed part is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Appends the header to `out`: magic, FLG, MTIME (LE), XFL, OS, then the NUL-terminated name and comment.
    /// A NUL inside a name or comment ends it there, as Ruby's setters truncate.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.len());
        let mut flags = 0;
        if self.orig_name.is_some() {
            flags |= FLAG_ORIG_NAME;
        }
        if self.comment.is_some() {
            flags |= FLAG_COMMENT;
        }
        out.extend_from_slice(&MAGIC_AND_METHOD);
        out.push(flags);
        out.extend_from_slice(&self.mtime.to_le_bytes());
        out.push(extra_flags(self.level));
        out.push(self.os_code);
        for field in [self.orig_name, self.comment].into_iter().flatten() {
            out.extend_from_slice(truncate_at_nul(field));
            out.push(0);
        }
    }
}

/// The 8-byte trailer: CRC32 of the uncompressed data, then its length mod 2^32, both little-endian.
pub fn footer(crc: u32, total_in: u64) -> [u8; FOOTER_LEN] {
    let mut f = [0; FOOTER_LEN];
    f[..4].copy_from_slice(&crc.to_le_bytes());
    f[4..].copy_from_slice(&(total_in as u32).to_le_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(h: Header) -> Vec<u8> {
        let mut v = Vec::new();
        h.write_to(&mut v);
        assert_eq!(v.len(), h.len());
        v
    }

    const PLAIN: Header = Header {
        mtime: 0x0102_0304,
        level: -1,
        orig_name: None,
        comment: None,
        os_code: 3,
    };

    #[test]
    fn fixed_header() {
        assert_eq!(header(PLAIN), [0x1f, 0x8b, 8, 0, 4, 3, 2, 1, 0, 3]);
    }

    #[test]
    fn xfl_rule() {
        let xfl = |level| header(Header { level, ..PLAIN })[8];
        assert_eq!(
            [xfl(-1), xfl(0), xfl(1), xfl(2), xfl(6), xfl(8), xfl(9)],
            [0, 0, 4, 0, 0, 0, 2]
        );
    }

    #[test]
    fn name_and_comment() {
        let h = header(Header {
            orig_name: Some(b"a.txt"),
            comment: Some(b"hi"),
            ..PLAIN
        });
        assert_eq!(h[3], FLAG_ORIG_NAME | FLAG_COMMENT);
        assert_eq!(&h[10..], b"a.txt\0hi\0");
        let only_comment = header(Header {
            comment: Some(b"c"),
            ..PLAIN
        });
        assert_eq!(only_comment[3], FLAG_COMMENT);
        assert_eq!(&only_comment[10..], b"c\0");
    }

    #[test]
    fn empty_name_still_sets_the_flag() {
        let h = header(Header {
            orig_name: Some(b""),
            ..PLAIN
        });
        assert_eq!(h[3], FLAG_ORIG_NAME);
        assert_eq!(&h[10..], b"\0");
    }

    #[test]
    fn nul_truncates() {
        assert_eq!(truncate_at_nul(b"a\0b"), b"a");
        assert_eq!(truncate_at_nul(b"ab"), b"ab");
        let h = header(Header {
            orig_name: Some(b"x\0y"),
            ..PLAIN
        });
        assert_eq!(&h[10..], b"x\0");
    }

    #[test]
    fn footer_wraps_isize() {
        assert_eq!(footer(0x8c73_6521, 3), [0x21, 0x65, 0x73, 0x8c, 3, 0, 0, 0]);
        assert_eq!(footer(0, (1u64 << 32) + 5), [0, 0, 0, 0, 5, 0, 0, 0]);
    }

    #[test]
    fn levels_and_strategies() {
        assert!(valid_level(-1) && valid_level(0) && valid_level(9));
        assert!(!valid_level(-2) && !valid_level(10));
        assert!(valid_strategy(0) && valid_strategy(4));
        assert!(!valid_strategy(-1) && !valid_strategy(5));
        assert_eq!(effective_level(-1), 6);
        assert_eq!(effective_level(9), 9);
    }
}
