//! `Thrift::HeaderTransport` (thrift master): `read`, `write`, `flush` and `reset_protocol` native, with the Ruby
//! library's semantics: the same StringIO read and write buffers and ivars, client-type detection and the header format
//! (`thrift_native_core::header`) with master's limits and messages, the ZLIB transform through the system zlib (the
//! core's `header::zlib`, as Ruby's `Zlib`).
//!
//! As for FramedTransport: an exact, unfrozen instance whose ivars hold what the library puts there is handled
//! natively while no method of the class has been redefined (its private helpers included, as the native methods
//! do what they do); anything else runs the library's own method, captured at load time. Frames from a socket (or
//! any Ruby transport) are read in 1 MiB `read_all` calls, so that a declared size allocates nothing ahead of the
//! bytes received; the Ruby library asks for the whole frame in one call.
//!
//! Only master's HeaderTransport ([`masters_transport`]): thrift 0.24's, the first release with one, has other limits
//! and messages (no bound on an unframed message, a frame size checked before the header is added, "Attempting to
//! send frame that is too large", EOFError where master raises END_OF_FILE) and keeps its Ruby methods.

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::header::{
    self, client_type, protocol_id, ErrorKind, FirstWord, FrameKind, HeaderError,
};

use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::names::{
    BOUNDED_INFLATE, EOF_P, INCLUDE_P, IVAR_ALLOWED_CLIENT_TYPES, IVAR_CLIENT_TYPE, IVAR_FLAGS,
    IVAR_MAX_DECOMPRESSED_SIZE, IVAR_MAX_FRAME_SIZE, IVAR_PROTOCOL_ID, IVAR_READ_BUFFER,
    IVAR_READ_HEADERS, IVAR_SEQUENCE_ID, IVAR_TRANSPORT, IVAR_UNFRAMED_BYTES_READ,
    IVAR_WRITE_BUFFER, NEW, READ, WRITE,
};
use crate::ruby::rb;
use crate::thrift::{bytes, errors};
use crate::thrift::{thrift, HeaderClasses};

/// The methods defined natively, in the order of `ORIGINALS`.
const NATIVE_METHODS: [&str; 4] = ["read", "write", "flush", "reset_protocol"];
const READ_M: usize = 0;
const WRITE_M: usize = 1;
const FLUSH_M: usize = 2;
const RESET_PROTOCOL_M: usize = 3;

/// Tripped once Ruby code changes (or removes) any method of HeaderTransport: every native method falls back from
/// then on.
static GUARD: Guard = Guard::new();
static ORIGINALS: Originals<{ NATIVE_METHODS.len() }> = Originals::new(NATIVE_METHODS);

fn classes() -> Option<&'static HeaderClasses> {
    thrift().header.as_ref()
}

/// True when `this` may be handled natively: an exact, unfrozen HeaderTransport whose methods are ours.
#[inline(always)]
pub fn owns(this: VALUE) -> bool {
    classes().is_some_and(|h| rb::is_exact_instance(this, h.transport))
        && GUARD.intact()
        && !rb::is_frozen(this)
}

fn original(method: usize, this: VALUE, args: &[VALUE]) -> Result<VALUE, Error> {
    ORIGINALS.call(method, this, args)
}

fn ivar(this: VALUE, id: &crate::ruby::rb::StaticId) -> VALUE {
    rb::ivar_get(this, id.get())
}

fn set(this: VALUE, id: &crate::ruby::rb::StaticId, v: VALUE) -> Result<(), Error> {
    rb::ivar_set(this, id.get(), v)
}

/// `v` is a StringIO (exactly), as the library's buffers are.
fn is_string_io(v: VALUE) -> bool {
    rb::is_exact_instance(v, thrift().string_io)
}

/// The read buffer (a frame's StringIO), for the struct codec's fast path through an exact HeaderProtocol
/// (`transports::string_io`, which reads it in place while it is a StringIO).
#[inline(always)]
pub fn read_io(trans: VALUE) -> Option<VALUE> {
    owns(trans).then(|| ivar(trans, &IVAR_READ_BUFFER))
}

/// The write buffer (a StringIO), as `read_io`.
#[inline(always)]
pub fn write_io(trans: VALUE) -> Option<VALUE> {
    owns(trans).then(|| ivar(trans, &IVAR_WRITE_BUFFER))
}

/// A Fixnum ivar at least `min`.
fn fixnum_at_least(this: VALUE, id: &crate::ruby::rb::StaticId, min: i64) -> Option<i64> {
    rb::fixnum_value(ivar(this, id)).filter(|&n| n >= min)
}

/// The read side's settings, when they are what the library keeps there (else the Ruby method runs).
struct ReadState {
    max_frame_size: i64,
    max_decompressed_size: usize,
}

fn read_state(this: VALUE) -> Option<ReadState> {
    let max_frame_size = fixnum_at_least(this, &IVAR_MAX_FRAME_SIZE, 1)?;
    let max_decompressed_size = fixnum_at_least(this, &IVAR_MAX_DECOMPRESSED_SIZE, 1)?;
    fixnum_at_least(this, &IVAR_UNFRAMED_BYTES_READ, 0)?;
    rb::fixnum_value(ivar(this, &IVAR_CLIENT_TYPE))?;
    is_string_io(ivar(this, &IVAR_READ_BUFFER)).then_some(ReadState {
        max_frame_size,
        max_decompressed_size: usize::try_from(max_decompressed_size).ok()?,
    })
}

fn transport_error(e: HeaderError) -> Error {
    let h = classes().expect("only called on HeaderTransports");
    let code = match e.kind {
        ErrorKind::Unknown => h.unknown,
        ErrorKind::EndOfFile => h.end_of_file,
        ErrorKind::SizeLimit => h.size_limit,
        ErrorKind::NeedDict => {
            // SAFETY: Zlib::NeedDict is pinned at load time.
            let class = unsafe { rb::value(h.zlib_need_dict) };
            let class = magnus::ExceptionClass::from_value(class).expect("an exception class");
            return errors::exception(class, &e.message);
        }
    };
    errors::transport(code, &e.message)
}

fn unknown(message: String) -> Error {
    transport_error(HeaderError {
        kind: ErrorKind::Unknown,
        message,
    })
}

fn string_io(data: VALUE) -> Result<VALUE, Error> {
    rb::funcall(thrift().string_io, NEW.get(), &[data])
}

fn empty() -> VALUE {
    rb::binary_string(&[])
}

/// `a + b` (String#+).
fn concat(a: VALUE, b: VALUE) -> Result<VALUE, Error> {
    // SAFETY: protected; rb_str_plus raises TypeError for a non-String and Encoding::CompatibilityError.
    magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_plus(a, b) })
}

fn bytesize(s: VALUE) -> Result<usize, Error> {
    rb::check_type(s, rb_sys::ruby_value_type::RUBY_T_STRING)?;
    // SAFETY: `s` is a String.
    Ok(unsafe { rb::str_len(s) })
}

/// `@transport.read_all(n)`, EOFError turned into the transport's END_OF_FILE with `message` (as `rescue EOFError`).
fn inner_read_all(ruby: &Ruby, this: VALUE, n: u32, message: &str) -> Result<VALUE, Error> {
    let trans = ivar(this, &IVAR_TRANSPORT);
    let data =
        super::layered::inner_read_all(ruby, trans, rb::integer(i64::from(n))).map_err(|e| {
            if e.is_kind_of(ruby.exception_eof_error()) {
                transport_error(HeaderError {
                    kind: ErrorKind::EndOfFile,
                    message: message.into(),
                })
            } else {
                e
            }
        })?;
    // BaseTransport#read_all answers n bytes or raises; a shorter answer is an EOF too.
    if bytesize(data)? < n as usize {
        return Err(transport_error(HeaderError {
            kind: ErrorKind::EndOfFile,
            message: message.into(),
        }));
    }
    Ok(data)
}

/// Tripped once Ruby code defines or removes a method of `Zlib::Inflate` or `Zlib::Deflate` (or of their singleton
/// classes, as a mock of `Zlib::Inflate.new` does): from then on that direction of the ZLIB transform calls Zlib as
/// the library does.
static INFLATE: Guard = Guard::new();
static DEFLATE: Guard = Guard::new();

/// The ZLIB transform undone natively while Zlib::Inflate is as loaded; else through the library's own
/// `bounded_inflate`.
fn native_inflate() -> bool {
    INFLATE.intact()
}

/// The ZLIB transform applied natively while Zlib::Deflate is as loaded; else `Zlib::Deflate.deflate`.
pub(super) fn native_deflate() -> bool {
    DEFLATE.intact()
}

/// `set_client_type(ct)`: refused unless `@allowed_client_types.include?(ct)`.
fn set_client_type(this: VALUE, ct: i64) -> Result<(), Error> {
    let allowed = rb::funcall(
        ivar(this, &IVAR_ALLOWED_CLIENT_TYPES),
        INCLUDE_P.get(),
        &[rb::integer(ct)],
    )?;
    if !rb::truthy(allowed) {
        return Err(unknown(format!("Client type {ct} not allowed by server")));
    }
    set(this, &IVAR_CLIENT_TYPE, rb::integer(ct))
}

fn size_limit_error(max: i64) -> Error {
    transport_error(HeaderError {
        kind: ErrorKind::SizeLimit,
        message: format!("Unframed message size exceeds maximum {max}"),
    })
}

/// `read_unframed(size)`: at most what the frame-size limit leaves, in one `@transport.read`.
fn read_unframed(this: VALUE, state: &ReadState, size: i64) -> Result<VALUE, Error> {
    let read_so_far = fixnum_at_least(this, &IVAR_UNFRAMED_BYTES_READ, 0).unwrap_or(0);
    let remaining = state.max_frame_size - read_so_far;
    if remaining <= 0 {
        return Err(size_limit_error(state.max_frame_size));
    }
    let trans = ivar(this, &IVAR_TRANSPORT);
    let data = rb::funcall(trans, READ.get(), &[rb::integer(size.min(remaining))])?;
    let n = bytesize(data)? as i64;
    set(
        this,
        &IVAR_UNFRAMED_BYTES_READ,
        rb::integer(read_so_far + n),
    )?;
    Ok(data)
}

/// `handle_unframed(first_word, req_sz)`: the message's first four bytes, and what else was asked for, become the
/// read buffer.
fn handle_unframed(this: VALUE, state: &ReadState, first: VALUE, req_sz: i64) -> Result<(), Error> {
    set(this, &IVAR_UNFRAMED_BYTES_READ, rb::integer(4))?;
    if 4 > state.max_frame_size {
        return Err(size_limit_error(state.max_frame_size));
    }
    let bytes_left = req_sz - 4;
    let data = if bytes_left > 0 && 4 < state.max_frame_size {
        concat(first, read_unframed(this, state, bytes_left)?)?
    } else {
        first
    };
    set(this, &IVAR_READ_BUFFER, string_io(data)?)
}

/// `read_frame(req_sz)`: the next message, whatever its client type. Returns the new read buffer for a frame, nil
/// for an unframed message (what the Ruby method returns).
fn read_frame(ruby: &Ruby, this: VALUE, state: &ReadState, req_sz: i64) -> Result<VALUE, Error> {
    set(
        this,
        &IVAR_READ_HEADERS,
        magnus::rb_sys::AsRawValue::as_raw(ruby.hash_new()),
    )?;
    set(this, &IVAR_UNFRAMED_BYTES_READ, rb::integer(0))?;
    let first = inner_read_all(ruby, this, 4, "Unexpected EOF reading frame size")?;
    let word = {
        // SAFETY: `first` is a String of at least 4 bytes (checked by inner_read_all).
        let b = unsafe { rb::str_bytes(first) };
        [b[0], b[1], b[2], b[3]]
    };
    let size = match header::first_word(word) {
        FirstWord::UnframedBinary | FirstWord::UnframedCompact => {
            let (ct, id) = if header::first_word(word) == FirstWord::UnframedBinary {
                (client_type::UNFRAMED_BINARY, protocol_id::BINARY)
            } else {
                (client_type::UNFRAMED_COMPACT, protocol_id::COMPACT)
            };
            set_client_type(this, ct)?;
            set(this, &IVAR_PROTOCOL_ID, rb::integer(id))?;
            handle_unframed(this, state, first, req_sz)?;
            return Ok(rb::QNIL);
        }
        FirstWord::Framed(size) => size,
    };
    header::check_frame_size(size, state.max_frame_size as u64).map_err(transport_error)?;
    let frame = inner_read_all(ruby, this, size, "Unexpected EOF reading frame")?;
    // SAFETY: `frame` is a String held on this stack; the slice is dropped before any Ruby code runs.
    let kind = header::frame_kind(unsafe { rb::str_bytes(frame) }).map_err(transport_error)?;
    let buffer = match kind {
        FrameKind::Header => {
            set_client_type(this, client_type::HEADERS)?;
            header_payload(this, state, frame)?
        }
        FrameKind::FramedBinary | FrameKind::FramedCompact => {
            let (ct, id) = if kind == FrameKind::FramedBinary {
                (client_type::FRAMED_BINARY, protocol_id::BINARY)
            } else {
                (client_type::FRAMED_COMPACT, protocol_id::COMPACT)
            };
            set_client_type(this, ct)?;
            set(this, &IVAR_PROTOCOL_ID, rb::integer(id))?;
            frame
        }
    };
    let io = string_io(buffer)?;
    set(this, &IVAR_READ_BUFFER, io)?;
    Ok(io)
}

/// `parse_header_format`: the frame's flags, sequence id, protocol id and info headers into the ivars (as far as
/// the parser got, then its error), and the payload with its transforms undone.
fn header_payload(this: VALUE, state: &ReadState, frame: VALUE) -> Result<VALUE, Error> {
    let read_headers = ivar(this, &IVAR_READ_HEADERS);
    let (transforms, payload_at) = {
        // SAFETY: `frame` is a String held on this stack (so the GC neither frees nor moves it); nothing in this
        // block runs Ruby code (ivar sets, allocations, and Hash#[]= of Strings into the Hash read_frame made).
        let bytes = unsafe { rb::str_bytes(frame) };
        let p = header::parse_header(bytes);
        set(this, &IVAR_FLAGS, rb::integer(i64::from(p.flags)))?;
        set(
            this,
            &IVAR_SEQUENCE_ID,
            rb::integer(i64::from(p.sequence_id)),
        )?;
        if let Some(id) = p.protocol_id {
            set(this, &IVAR_PROTOCOL_ID, rb::integer(i64::from(id)))?;
        }
        for (k, v) in &p.headers {
            let (k, v) = (rb::binary_string(k), rb::binary_string(v));
            // SAFETY: protected; the key is dup'ed and frozen, as by Ruby's own Hash#[]=.
            magnus::rb_sys::protect(|| unsafe { rb_sys::rb_hash_aset(read_headers, k, v) })?;
        }
        if let Some(e) = p.error {
            return Err(transport_error(e));
        }
        (p.transforms.len(), bytes.len() - p.payload.len())
    };
    // SAFETY: `frame` is a String; Ruby code ran above, so its length is read again.
    let len = unsafe { rb::str_len(frame) };
    let mut payload = rb::str_subseq(frame, payload_at.min(len), len.saturating_sub(payload_at));
    if transforms > 0 && !native_inflate() {
        for _ in 0..transforms {
            payload = rb::funcall(this, BOUNDED_INFLATE.get(), &[payload])?;
        }
        return Ok(payload);
    }
    for _ in 0..transforms {
        // SAFETY: `payload` is a String on this stack; inflating runs no Ruby code.
        let inflated = header::inflate_bounded(
            unsafe { rb::str_bytes(payload) },
            state.max_decompressed_size,
        );
        payload = rb::binary_string(&inflated.map_err(transport_error)?);
    }
    Ok(payload)
}

/// `read(sz)`: from the read buffer, then (short of `sz`) from the next frame or the unframed stream.
fn read(ruby: &Ruby, rb_self: magnus::Value, sz: magnus::Value) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let (this, sz) = (rb_self.as_raw(), sz.as_raw());
    let state = rb::fixnum_value(sz)
        .filter(|_| owns(this))
        .and_then(|n| Some((n, read_state(this)?)));
    let Some((n, state)) = state else {
        return original(READ_M, this, &[sz]).map(rb::returned);
    };
    let buffered = rb::funcall(ivar(this, &IVAR_READ_BUFFER), READ.get(), &[sz])?;
    let data = if rb::is_nil(buffered) {
        empty()
    } else {
        buffered
    };
    let bytes_left = n - bytesize(data)? as i64;
    if bytes_left == 0 {
        return Ok(rb::returned(data));
    }
    let ct = rb::fixnum_value(ivar(this, &IVAR_CLIENT_TYPE));
    if matches!(
        ct,
        Some(client_type::UNFRAMED_BINARY | client_type::UNFRAMED_COMPACT)
    ) {
        return concat(data, read_unframed(this, &state, bytes_left)?).map(rb::returned);
    }
    read_frame(ruby, this, &state, bytes_left)?;
    let more = rb::funcall(
        ivar(this, &IVAR_READ_BUFFER),
        READ.get(),
        &[rb::integer(bytes_left)],
    )?;
    concat(data, if rb::is_nil(more) { empty() } else { more }).map(rb::returned)
}

/// `reset_protocol`: reads the next frame (detecting its client type) once the read buffer is used up.
fn reset_protocol(ruby: &Ruby, rb_self: magnus::Value) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let this = rb_self.as_raw();
    let Some(state) = read_state(this).filter(|_| owns(this)) else {
        return original(RESET_PROTOCOL_M, this, &[]).map(rb::returned);
    };
    let eof = rb::funcall(ivar(this, &IVAR_READ_BUFFER), EOF_P.get(), &[])?;
    if !rb::truthy(eof) {
        return Ok(rb::returned(rb::QNIL));
    }
    read_frame(ruby, this, &state, 0).map(rb::returned)
}

/// `write(buf)`: into the write buffer, re-tagged BINARY (`Bytes.force_binary_encoding`, in place).
fn write(_ruby: &Ruby, rb_self: magnus::Value, buf: magnus::Value) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let (this, buf) = (rb_self.as_raw(), buf.as_raw());
    let io = ivar(this, &IVAR_WRITE_BUFFER);
    if !owns(this) || !is_string_io(io) {
        return original(WRITE_M, this, &[buf]).map(rb::returned);
    }
    let buf = bytes::force_binary_encoding(buf)?;
    rb::funcall(io, WRITE.get(), &[buf]).map(rb::returned)
}

mod flush;

/// Whether the loaded HeaderTransport is master's, whose limits the native methods keep: the private methods of
/// master's limit on an unframed message (`read_unframed`) and on a frame written (`validate_frame_size!`), which
/// came in the change that gave the read side its END_OF_FILE errors.
fn masters_transport(ruby: &Ruby, class: magnus::RClass) -> Result<bool, Error> {
    use magnus::value::ReprValue;
    for name in ["read_unframed", "validate_frame_size!"] {
        let defined: bool = class
            .as_value()
            .funcall("private_method_defined?", (ruby.to_symbol(name),))?;
        if !defined {
            return Ok(false);
        }
    }
    Ok(true)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let Some(h) = classes() else {
        return Ok(());
    };
    // SAFETY: HeaderTransport is pinned at load time.
    let class = magnus::RClass::from_value(unsafe { rb::value(h.transport) }).expect("a class");
    if !masters_transport(ruby, class)? {
        GUARD.trip(); // every use of the native paths (structs through HeaderProtocol too) asks `owns`
        return Ok(());
    }
    ORIGINALS.keep(ruby, h.transport, false)?;
    GUARD.watch(h.transport, Watch::Every);
    INFLATE.watch(h.zlib_inflate, Watch::EveryWithSingleton);
    DEFLATE.watch(h.zlib_deflate, Watch::EveryWithSingleton);
    use crate::ruby::registry::define_method;
    define_method(ruby, class, "read", magnus::method!(read, 1))?;
    define_method(ruby, class, "write", magnus::method!(write, 1))?;
    define_method(ruby, class, "flush", magnus::method!(flush::flush, 0))?;
    define_method(
        ruby,
        class,
        "reset_protocol",
        magnus::method!(reset_protocol, 0),
    )
}
