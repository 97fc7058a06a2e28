//! The deflate body of a gzip member, as Ruby's `Zlib::GzipWriter` drives zlib: a raw stream (window 15, memLevel
//! 8) fed with zlib's flush modes, the CRC32 of everything fed, and zlib's answers once the stream is finished.
//!
//! flate2's `Compress` (zlib-rs backend) deflates with the default strategy; zlib-rs directly with the other four,
//! which flate2 does not expose.

use flate2::{Compress, Compression, Crc, FlushCompress};

use super::{effective_level, footer, FOOTER_LEN};

/// zlib's flush modes, as `Zlib::NO_FLUSH` ... `Zlib::FINISH` number them.
pub const Z_NO_FLUSH: i32 = 0;
pub const Z_PARTIAL_FLUSH: i32 = 1;
pub const Z_SYNC_FLUSH: i32 = 2;
pub const Z_FULL_FLUSH: i32 = 3;
pub const Z_FINISH: i32 = 4;

/// The output buffer grows by at least this much at a time (zlib's own step is 16 KiB).
const OUT_STEP: usize = 16 * 1024;

/// What one stream's state takes in memory (window, hash chains, pending buffer), measured by a test below.
pub const STATE_BYTES: usize = 371 * 1024;

/// A deflate call that zlib would have refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZError {
    /// Z_BUF_ERROR: nothing to do (a repeated flush, a sync write of nothing, a second FINISH).
    Buf,
    /// Z_STREAM_ERROR: an unknown flush mode, or input after FINISH.
    Stream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Ok,
    BufError,
    StreamEnd,
}

/// The raw deflate stream.
enum Engine {
    Flate2(Compress),
    Strategy(Box<zlib_rs::Deflate>),
}

impl Engine {
    fn new(level: i32, strategy: i32) -> Engine {
        if strategy == 0 {
            return Engine::Flate2(Compress::new(
                Compression::new(effective_level(level)),
                false,
            ));
        }
        let strategy = zlib_rs::Strategy::try_from(strategy).unwrap_or_default();
        let config = zlib_rs::DeflateConfig {
            level,
            window_bits: -15,
            strategy,
            ..Default::default()
        };
        Engine::Strategy(Box::new(zlib_rs::Deflate::new_with_config(config)))
    }

    fn total_in(&self) -> u64 {
        match self {
            Engine::Flate2(c) => c.total_in(),
            Engine::Strategy(d) => d.total_in(),
        }
    }

    /// One deflate call into the spare capacity of `out`.
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>, mode: i32) -> Result<Step, ZError> {
        match self {
            Engine::Flate2(c) => {
                let flush = match mode {
                    Z_NO_FLUSH => FlushCompress::None,
                    Z_PARTIAL_FLUSH => FlushCompress::Partial,
                    Z_SYNC_FLUSH => FlushCompress::Sync,
                    Z_FULL_FLUSH => FlushCompress::Full,
                    Z_FINISH => FlushCompress::Finish,
                    _ => return Err(ZError::Stream),
                };
                match c.compress_vec(input, out, flush) {
                    Ok(flate2::Status::Ok) => Ok(Step::Ok),
                    Ok(flate2::Status::BufError) => Ok(Step::BufError),
                    Ok(flate2::Status::StreamEnd) => Ok(Step::StreamEnd),
                    Err(_) => Err(ZError::Stream),
                }
            }
            Engine::Strategy(d) => {
                let flush = match mode {
                    Z_NO_FLUSH => zlib_rs::DeflateFlush::NoFlush,
                    Z_PARTIAL_FLUSH => zlib_rs::DeflateFlush::PartialFlush,
                    Z_SYNC_FLUSH => zlib_rs::DeflateFlush::SyncFlush,
                    Z_FULL_FLUSH => zlib_rs::DeflateFlush::FullFlush,
                    Z_FINISH => zlib_rs::DeflateFlush::Finish,
                    _ => return Err(ZError::Stream),
                };
                let before = d.total_out();
                let result = d.compress_uninit(input, out.spare_capacity_mut(), flush);
                let written = (d.total_out() - before) as usize;
                // SAFETY: deflate initialised exactly `written` bytes of the spare capacity it was given.
                unsafe { out.set_len(out.len() + written) };
                match result {
                    Ok(zlib_rs::Status::Ok) => Ok(Step::Ok),
                    Ok(zlib_rs::Status::BufError) => Ok(Step::BufError),
                    Ok(zlib_rs::Status::StreamEnd) => Ok(Step::StreamEnd),
                    Err(_) => Err(ZError::Stream),
                }
            }
        }
    }

    /// Deflates all of `input` with flush `mode`, appending to `out` (grown as needed), like zlib's `zstream_run`.
    /// A call that can make no progress at all is Z_BUF_ERROR, as Ruby raises it.
    fn run(&mut self, input: &[u8], out: &mut Vec<u8>, mode: i32) -> Result<(), ZError> {
        let mut pos = 0;
        let mut progressed = false;
        loop {
            let remaining = input.len() - pos;
            let want = remaining.saturating_add(remaining >> 3).max(OUT_STEP);
            if out.capacity() - out.len() < want.min(OUT_STEP) {
                out.reserve(want);
            }
            let in_before = self.total_in();
            let out_before = out.len();
            let step = self.step(&input[pos..], out, mode)?;
            let used = (self.total_in() - in_before) as usize;
            let produced = out.len() - out_before;
            pos += used;
            let moved = used > 0 || produced > 0;
            progressed |= moved;
            match step {
                Step::StreamEnd => return Ok(()),
                Step::BufError => return if progressed { Ok(()) } else { Err(ZError::Buf) },
                Step::Ok if pos == input.len() && out.len() < out.capacity() => return Ok(()),
                Step::Ok if !moved => return if progressed { Ok(()) } else { Err(ZError::Buf) },
                Step::Ok => {}
            }
        }
    }
}

/// One gzip member's deflate stream and checksum.
pub struct Deflate {
    engine: Engine,
    crc: Crc,
    /// `flush(FINISH)` ended the deflate stream (without a footer).
    finished: bool,
    /// Input that zlib refused after the FINISH (Ruby keeps it in the stream's input buffer).
    refused_input: bool,
}

impl Deflate {
    /// A stream at `level` (-1 is 6) with `strategy` (0..=4, Zlib's DEFAULT_STRATEGY ... FIXED); both checked by
    /// the caller (`super::valid_level`, `super::valid_strategy`).
    pub fn new(level: i32, strategy: i32) -> Self {
        Deflate {
            engine: Engine::new(level, strategy),
            crc: Crc::new(),
            finished: false,
            refused_input: false,
        }
    }

    /// Bytes fed in so far (`GzipWriter#pos`).
    pub fn total_in(&self) -> u64 {
        self.engine.total_in()
    }

    /// CRC32 of the bytes fed in so far (`GzipWriter#crc`).
    pub fn crc(&self) -> u32 {
        self.crc.sum()
    }

    /// True once `flush(FINISH)` ended the stream.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Feeds `input` (checksummed first, as Ruby's `gzfile_write` does) with flush `mode`, appending the output to
    /// `out`. After FINISH zlib refuses: any other mode is Z_STREAM_ERROR (Ruby keeps the refused input), a
    /// further FINISH is Z_STREAM_END with nothing to add, or Z_BUF_ERROR while refused input is waiting.
    pub fn write(&mut self, input: &[u8], mode: i32, out: &mut Vec<u8>) -> Result<(), ZError> {
        self.crc.update(input);
        if self.finished {
            if mode != Z_FINISH {
                self.refused_input |= !input.is_empty();
                return Err(ZError::Stream);
            }
            return if self.refused_input || !input.is_empty() {
                Err(ZError::Buf)
            } else {
                Ok(())
            };
        }
        let result = self.engine.run(input, out, mode);
        if result.is_ok() && mode == Z_FINISH {
            self.finished = true;
        }
        result
    }

    /// Ends the member: FINISH, then the footer, appended to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ZError> {
        self.write(&[], Z_FINISH, out)?;
        out.extend_from_slice(&self.footer());
        Ok(())
    }

    fn footer(&self) -> [u8; FOOTER_LEN] {
        footer(self.crc(), self.total_in())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::DeflateDecoder;
    use std::io::Read;

    fn inflate(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        DeflateDecoder::new(bytes).read_to_end(&mut out).unwrap();
        out
    }

    fn sample() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_strategy_round_trips_with_its_crc_and_size() {
        let data = sample();
        for strategy in 0..=4 {
            for level in [-1, 0, 1, 9] {
                let mut d = Deflate::new(level, strategy);
                let mut out = Vec::new();
                d.write(&data[..1000], Z_NO_FLUSH, &mut out).unwrap();
                d.write(&data[1000..], Z_NO_FLUSH, &mut out).unwrap();
                d.finish(&mut out).unwrap();
                let (body, tail) = out.split_at(out.len() - FOOTER_LEN);
                assert_eq!(inflate(body), data, "strategy {strategy} level {level}");
                let mut crc = Crc::new();
                crc.update(&data);
                assert_eq!(tail[..4], crc.sum().to_le_bytes());
                assert_eq!(tail[4..], (data.len() as u32).to_le_bytes());
                assert_eq!(d.total_in(), data.len() as u64);
            }
        }
    }

    #[test]
    fn a_sync_flush_makes_everything_so_far_decodable() {
        let mut d = Deflate::new(-1, 0);
        let mut out = Vec::new();
        d.write(b"hello, ", Z_NO_FLUSH, &mut out).unwrap();
        d.write(b"world", Z_SYNC_FLUSH, &mut out).unwrap();
        assert!(out.ends_with(&[0, 0, 0xff, 0xff]), "the empty stored block");
        let mut partial = Vec::new();
        let _ = DeflateDecoder::new(&out[..]).read_to_end(&mut partial);
        assert_eq!(partial, b"hello, world");
    }

    #[test]
    fn zlib_refuses_what_it_refuses() {
        let mut d = Deflate::new(-1, 0);
        let mut out = Vec::new();
        assert_eq!(
            d.write(&[], 7, &mut out),
            Err(ZError::Stream),
            "no flush mode 7"
        );
        d.write(b"x", Z_SYNC_FLUSH, &mut out).unwrap();
        assert_eq!(
            d.write(&[], Z_SYNC_FLUSH, &mut out),
            Err(ZError::Buf),
            "a second flush with nothing new"
        );
        d.write(&[], Z_FINISH, &mut out).unwrap();
        assert!(d.finished());
        assert_eq!(
            d.write(&[], Z_FINISH, &mut out),
            Ok(()),
            "FINISH again: nothing to add"
        );
        assert_eq!(d.write(b"late", Z_NO_FLUSH, &mut out), Err(ZError::Stream));
        assert_eq!(
            d.write(&[], Z_FINISH, &mut out),
            Err(ZError::Buf),
            "the refused input waits"
        );
        assert_eq!(d.total_in(), 1, "refused input is not fed");
    }

    /// Counts the bytes the Rust allocator hands out on each thread, to measure a stream's state.
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        thread_local! {
            pub static LIVE: Cell<isize> = const { Cell::new(0) };
        }

        pub struct Counting;

        // SAFETY: every call forwards to System with the same arguments; the counter only observes.
        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                LIVE.with(|n| n.set(n.get() + layout.size() as isize));
                // SAFETY: System.alloc's contract, which the caller meets.
                unsafe { System.alloc(layout) }
            }
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                LIVE.with(|n| n.set(n.get() - layout.size() as isize));
                // SAFETY: System.dealloc's contract, which the caller meets.
                unsafe { System.dealloc(ptr, layout) }
            }
        }

        #[global_allocator]
        static COUNTING: Counting = Counting;
    }

    #[test]
    fn state_bytes_is_what_a_stream_allocates() {
        for strategy in [0, 1] {
            let before = counting::LIVE.with(|n| n.get());
            let d = Deflate::new(-1, strategy);
            let used = (counting::LIVE.with(|n| n.get()) - before) as usize;
            drop(d);
            assert!(
                used.abs_diff(STATE_BYTES) < STATE_BYTES / 10,
                "strategy {strategy}: {used} bytes"
            );
        }
    }
}
