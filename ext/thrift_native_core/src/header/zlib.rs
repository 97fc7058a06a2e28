//! The ZLIB transform: `Zlib::Deflate.deflate` on the way out; on the way in, master's bounded inflate, which
//! gives up once the output passes `@max_decompressed_size` instead of inflating a small frame into gigabytes.
//!
//! Through the system zlib (libz-sys), the library Ruby's own `Zlib` is linked against: in one process both use the
//! same code, so a frame we compress has the very bytes the Ruby library's would, and a damaged payload fails the
//! same way. One stream of each kind per thread, reset between messages: setting a stream up costs more than
//! compressing a small message.

use std::cell::RefCell;
use std::os::raw::{c_int, c_uint};

use libz_sys as z;

use super::{ErrorKind, HeaderError};

/// Output grows by at most this much before the size is checked again (Ruby's Zlib yields 16 KiB chunks).
const STEP: usize = 16 * 1024;
/// zlib's defaults, as `Zlib::Deflate.deflate` and `Zlib::Inflate.new` use them.
const LEVEL: c_int = 6;
const WINDOW_BITS: c_int = 15;
const MEM_LEVEL: c_int = 8;

fn invalid() -> HeaderError {
    HeaderError {
        kind: ErrorKind::Unknown,
        message: "Invalid ZLIB payload".into(),
    }
}

fn too_large(max: usize) -> HeaderError {
    HeaderError {
        kind: ErrorKind::SizeLimit,
        message: format!("Decompressed size exceeds limit of {max}"),
    }
}

// SAFETY (both): zlib calls these with the `opaque` it was given (unused) and sizes that fit in memory; calloc and
// free are the C library's, as zlib's own defaults.
unsafe extern "C" fn alloc(_opaque: z::voidpf, items: z::uInt, size: z::uInt) -> z::voidpf {
    // SAFETY: see above.
    unsafe { calloc(items as usize, size as usize) }
}

unsafe extern "C" fn free_fn(_opaque: z::voidpf, address: z::voidpf) {
    // SAFETY: `address` came from `alloc`.
    unsafe { free(address) }
}

extern "C" {
    fn calloc(n: usize, size: usize) -> z::voidpf;
    fn free(p: z::voidpf);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deflate,
    Inflate,
}

/// A zlib stream, boxed: zlib's state points back at it, so it must not move once initialised.
struct Stream {
    z: Box<z::z_stream>,
    kind: Kind,
}

impl Stream {
    fn new(kind: Kind) -> Stream {
        let mut s = Box::new(z::z_stream {
            next_in: std::ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: std::ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            zalloc: alloc,
            zfree: free_fn,
            opaque: std::ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        let size = std::mem::size_of::<z::z_stream>() as c_int;
        // SAFETY: `s` is a valid, boxed z_stream with allocation functions; zlibVersion is a static string.
        let ret = unsafe {
            match kind {
                Kind::Deflate => z::deflateInit2_(
                    &mut *s,
                    LEVEL,
                    z::Z_DEFLATED,
                    WINDOW_BITS,
                    MEM_LEVEL,
                    z::Z_DEFAULT_STRATEGY,
                    z::zlibVersion(),
                    size,
                ),
                Kind::Inflate => z::inflateInit2_(&mut *s, WINDOW_BITS, z::zlibVersion(), size),
            }
        };
        assert_eq!(
            ret,
            z::Z_OK,
            "zlib could not set a stream up (out of memory?)"
        );
        Stream { z: s, kind }
    }

    fn reset(&mut self) {
        // SAFETY: the stream was initialised for this kind.
        unsafe {
            match self.kind {
                Kind::Deflate => z::deflateReset(&mut *self.z),
                Kind::Inflate => z::inflateReset(&mut *self.z),
            };
        }
    }

    /// One call of deflate or inflate from `input` into the spare capacity of `out`: (zlib's answer, input used).
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>, flush: c_int) -> (c_int, usize) {
        let spare = out.spare_capacity_mut();
        let room = spare.len().min(c_uint::MAX as usize);
        self.z.next_in = input.as_ptr() as *mut u8;
        self.z.avail_in = input.len().min(c_uint::MAX as usize) as c_uint;
        self.z.next_out = spare.as_mut_ptr().cast();
        self.z.avail_out = room as c_uint;
        let before_in = self.z.avail_in;
        // SAFETY: next_in/avail_in describe `input`, next_out/avail_out the spare capacity of `out`; zlib reads and
        // writes within them only.
        let ret = unsafe {
            match self.kind {
                Kind::Deflate => z::deflate(&mut *self.z, flush),
                Kind::Inflate => z::inflate(&mut *self.z, flush),
            }
        };
        let written = room - self.z.avail_out as usize;
        // SAFETY: zlib initialised exactly `written` bytes of the spare capacity.
        unsafe { out.set_len(out.len() + written) };
        let used = (before_in - self.z.avail_in) as usize;
        self.z.next_in = std::ptr::null_mut();
        self.z.next_out = std::ptr::null_mut();
        (ret, used)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised for this kind and is ended once.
        unsafe {
            match self.kind {
                Kind::Deflate => z::deflateEnd(&mut *self.z),
                Kind::Inflate => z::inflateEnd(&mut *self.z),
            };
        }
    }
}

thread_local! {
    static DEFLATER: RefCell<Option<Stream>> = const { RefCell::new(None) };
    static INFLATER: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

fn with_stream<T>(
    cell: &'static std::thread::LocalKey<RefCell<Option<Stream>>>,
    kind: Kind,
    f: impl FnOnce(&mut Stream) -> T,
) -> T {
    cell.with(|cell| {
        let mut slot = cell.borrow_mut();
        let stream = slot.get_or_insert_with(|| Stream::new(kind));
        let result = f(stream);
        stream.reset();
        result
    })
}

/// Inflates a zlib stream as master's `bounded_inflate` does with Ruby's `Zlib::Inflate`: a truncated, empty or
/// corrupt stream is "Invalid ZLIB payload"; output beyond `max` bytes is a SIZE_LIMIT error (nothing past
/// `max + 1` bytes is ever allocated); a stream that needs a preset dictionary is `NeedDict`; bytes after the end of
/// the stream come out as they are (`Zlib::Inflate#finish` hands back unused input).
pub fn inflate_bounded(input: &[u8], max: usize) -> Result<Vec<u8>, HeaderError> {
    with_stream(&INFLATER, Kind::Inflate, |s| inflate_with(s, input, max))
}

fn inflate_with(s: &mut Stream, input: &[u8], max: usize) -> Result<Vec<u8>, HeaderError> {
    let mut out: Vec<u8> = Vec::new();
    let mut pos = 0;
    loop {
        if out.len() == out.capacity() {
            if out.len() > max {
                return Err(too_large(max));
            }
            let room = out.capacity().max(STEP).min(max + 1 - out.len());
            out.reserve_exact(room);
        }
        let (ret, used) = s.step(&input[pos..], &mut out, z::Z_NO_FLUSH);
        pos += used;
        if out.len() > max {
            return Err(too_large(max));
        }
        match ret {
            z::Z_STREAM_END => {
                let rest = &input[pos..];
                if out.len() + rest.len() > max {
                    return Err(too_large(max));
                }
                out.extend_from_slice(rest);
                return Ok(out);
            }
            z::Z_OK => {}
            z::Z_NEED_DICT => {
                return Err(HeaderError {
                    kind: ErrorKind::NeedDict,
                    message: "need dictionary".into(),
                })
            }
            // Z_BUF_ERROR: no progress possible, the input ended before the stream did; Z_DATA_ERROR and the rest:
            // a corrupt stream.
            _ => return Err(invalid()),
        }
    }
}

/// `Zlib::Deflate.deflate(payload)`: the default level, a zlib stream.
pub fn deflate(payload: &[u8]) -> Vec<u8> {
    with_stream(&DEFLATER, Kind::Deflate, |s| {
        // SAFETY: the stream is an initialised deflate stream; deflateBound only computes a size.
        let bound = unsafe { z::deflateBound(&mut *s.z, payload.len() as z::uLong) } as usize;
        let mut out = Vec::with_capacity(bound.max(64));
        let mut pos = 0;
        loop {
            if out.len() == out.capacity() {
                out.reserve(STEP);
            }
            let (ret, used) = s.step(&payload[pos..], &mut out, z::Z_FINISH);
            pos += used;
            match ret {
                z::Z_STREAM_END => return out,
                z::Z_OK | z::Z_BUF_ERROR => {}
                other => panic!("deflating a buffer in memory failed: {other}"),
            }
        }
    })
}
