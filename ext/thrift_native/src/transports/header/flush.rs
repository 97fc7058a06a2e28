//! `HeaderTransport#flush`: the write buffer's bytes out as one message in the client type last read (a header
//! frame by default; framed or unframed for legacy clients), in one `@transport.write` and one `@transport.flush`.

use std::borrow::Cow;

use magnus::{Error, Ruby};
use rb_sys::VALUE;
use thrift_native_core::header::{self, client_type, FrameHeader, TRANSFORM_ZLIB};

use super::{ivar, original, owns, set, string_io, transport_error, FLUSH_M};
use crate::ruby::names::{
    DEFLATE, FLUSH, IVAR_CLIENT_TYPE, IVAR_FLAGS, IVAR_MAX_FRAME_SIZE, IVAR_PROTOCOL_ID,
    IVAR_SEQUENCE_ID, IVAR_TRANSPORT, IVAR_WRITE_BUFFER, IVAR_WRITE_HEADERS, IVAR_WRITE_TRANSFORMS,
    STRING, WRITE,
};
use crate::ruby::rb;
use crate::thrift::bytes;

/// What a header frame needs from the ivars, when they hold what the library puts there.
struct WriteState {
    client_type: i64,
    max_frame_size: u64,
    flags: u16,
    sequence_id: u32,
    protocol_id: u64,
    transforms: Vec<u64>,
    /// `@write_headers`, a Hash of Strings to Strings.
    headers: VALUE,
    header_count: usize,
}

fn write_state(this: VALUE) -> Option<WriteState> {
    let fixnum = |id| rb::fixnum_value(ivar(this, id));
    let headers = ivar(this, &IVAR_WRITE_HEADERS);
    let transforms = ivar(this, &IVAR_WRITE_TRANSFORMS);
    if !rb::is_array(transforms) {
        return None;
    }
    // SAFETY: `transforms` is an Array; its elements are read without calling Ruby.
    let transforms = (0..unsafe { rb::array_len(transforms) })
        .map(|i| unsafe { rb::array_entry(transforms, i) })
        .map(|t| rb::fixnum_value(t).and_then(|n| u64::try_from(n).ok()))
        .collect::<Option<Vec<u64>>>()?;
    Some(WriteState {
        client_type: fixnum(&IVAR_CLIENT_TYPE)?,
        max_frame_size: u64::try_from(fixnum(&IVAR_MAX_FRAME_SIZE)?).ok()?,
        // Ruby packs them as "n" and "N": their low 16 and 32 bits.
        flags: fixnum(&IVAR_FLAGS)? as u16,
        sequence_id: fixnum(&IVAR_SEQUENCE_ID)? as u32,
        protocol_id: u64::try_from(fixnum(&IVAR_PROTOCOL_ID)?).ok()?,
        transforms,
        header_count: string_pairs(headers)?,
        headers,
    })
}

/// The size of a Hash of Strings to Strings.
fn string_pairs(hash: VALUE) -> Option<usize> {
    if rb::builtin_type(hash) != Some(rb_sys::ruby_value_type::RUBY_T_HASH) {
        return None;
    }
    let mut count = 0;
    let all_strings = rb::hash_foreach(hash, |k, v| {
        count += 1;
        match rb::is_string(k) && rb::is_string(v) {
            true => Ok(()),
            // Only a signal to stop the walk: the Ruby method runs instead.
            false => Err(Error::new(
                Ruby::get().expect("a Ruby thread").exception_arg_error(),
                "",
            )),
        }
    });
    all_strings.ok().map(|()| count)
}

fn too_large(size: u64, max: u64) -> Result<(), Error> {
    header::check_write_size(size, max).map_err(transport_error)
}

/// `@transport.write(bytes); @transport.flush`, answering what `flush` answers.
fn send(this: VALUE, prefix: &[u8], payload: &[u8]) -> Result<VALUE, Error> {
    // SAFETY: rb_str_buf_new allocates an empty String with room for both parts; it does not raise.
    let frame = unsafe { rb_sys::rb_str_buf_new((prefix.len() + payload.len()) as _) };
    rb::str_cat(frame, prefix)?;
    rb::str_cat(frame, payload)?;
    let trans = ivar(this, &IVAR_TRANSPORT);
    rb::funcall(trans, WRITE.get(), &[frame])?;
    rb::funcall(trans, FLUSH.get(), &[])
}

pub fn flush(ruby: &Ruby, rb_self: magnus::Value) -> Result<magnus::Value, Error> {
    use magnus::rb_sys::AsRawValue;
    let this = rb_self.as_raw();
    let io = ivar(this, &IVAR_WRITE_BUFFER);
    let state = write_state(this).filter(|_| owns(this) && super::is_string_io(io));
    let Some(state) = state else {
        return original(FLUSH_M, this, &[]).map(rb::returned);
    };
    let payload = rb::funcall(io, STRING.get(), &[])?;
    rb::check_type(payload, rb_sys::ruby_value_type::RUBY_T_STRING)?;
    set(this, &IVAR_WRITE_BUFFER, string_io(rb::binary_string(&[]))?)?;
    if header_format(state.client_type) {
        return flush_header_format(ruby, this, &state, payload).map(rb::returned);
    }
    // SAFETY: `payload` is a String on this stack, no longer reachable from the transport; nothing below runs Ruby
    // code while the slice is in use (allocations only, until `send` has copied it).
    let bytes = unsafe { rb::str_bytes(payload) };
    if bytes.is_empty() {
        return Ok(rb::returned(rb::QNIL));
    }
    match state.client_type {
        client_type::FRAMED_BINARY | client_type::FRAMED_COMPACT => {
            too_large(bytes.len() as u64, state.max_frame_size)?;
            let prefix = (bytes.len() as u32).to_be_bytes();
            send(this, &prefix, bytes).map(rb::returned)
        }
        client_type::UNFRAMED_BINARY | client_type::UNFRAMED_COMPACT => {
            too_large(bytes.len() as u64, state.max_frame_size)?;
            send(this, &[], bytes).map(rb::returned)
        }
        _ => unreachable!("header_format covers the other client types"),
    }
}

/// Every client type but the four legacy ones writes header frames.
fn header_format(ct: i64) -> bool {
    !matches!(
        ct,
        client_type::FRAMED_BINARY
            | client_type::FRAMED_COMPACT
            | client_type::UNFRAMED_BINARY
            | client_type::UNFRAMED_COMPACT
    )
}

/// `flush_header_format`: the transforms applied, the header block built, the size checked, `@write_headers`
/// cleared, the frame sent.
fn flush_header_format(
    ruby: &Ruby,
    this: VALUE,
    state: &WriteState,
    payload: VALUE,
) -> Result<VALUE, Error> {
    // SAFETY: `payload` is a String (checked by the caller).
    if unsafe { rb::str_len(payload) } == 0 {
        return Ok(rb::QNIL);
    }
    let native_zlib = !state.transforms.contains(&TRANSFORM_ZLIB) || super::native_deflate();
    // Bytes.force_binary_encoding of each key and value, as write_varstring does (in place, or a dup of a frozen
    // one): the only step here that may run Ruby code, so it comes before any bytes are borrowed. `strings` (an
    // Array on this stack) keeps the dups alive.
    // SAFETY: rb_ary_new_capa allocates; it does not raise.
    let strings =
        unsafe { rb_sys::rb_ary_new_capa(2 * state.header_count as std::os::raw::c_long) };
    rb::hash_foreach(state.headers, |k, v| {
        for s in [k, v] {
            let s = bytes::force_binary_encoding(s)?;
            // SAFETY: `strings` is a new, unfrozen Array.
            unsafe { rb_sys::rb_ary_push(strings, s) };
        }
        Ok(())
    })?;
    if !native_zlib {
        // Zlib::Deflate.deflate is mocked or redefined: called as the library calls it, once per ZLIB entry.
        let mut deflated = payload;
        for _ in state.transforms.iter().filter(|&&t| t == TRANSFORM_ZLIB) {
            deflated = rb::funcall(zlib_deflate(), DEFLATE.get(), &[deflated])?;
            rb::check_type(deflated, rb_sys::ruby_value_type::RUBY_T_STRING)?;
        }
        // SAFETY: `deflated` is a String on this stack (or `payload`); no Ruby code runs from here to `send`.
        let body = unsafe { rb::str_bytes(deflated) };
        return finish_header_frame(ruby, this, state, strings, body);
    }
    // SAFETY: `payload` is a String on this stack; no Ruby code runs from here to `send`, which copies the bytes.
    let mut body = Cow::Borrowed(unsafe { rb::str_bytes(payload) });
    for &t in &state.transforms {
        if t == TRANSFORM_ZLIB {
            body = Cow::Owned(header::deflate(&body));
        }
    }
    finish_header_frame(ruby, this, state, strings, &body)
}

fn zlib_deflate() -> VALUE {
    crate::thrift::thrift()
        .header
        .as_ref()
        .expect("HeaderTransport")
        .zlib_deflate
}

/// The header block for `strings`, the size check, `@write_headers` cleared, the frame sent.
fn finish_header_frame(
    ruby: &Ruby,
    this: VALUE,
    state: &WriteState,
    strings: VALUE,
    body: &[u8],
) -> Result<VALUE, Error> {
    // SAFETY: `strings` is an Array of Strings (key, value, key, ...) held on the caller's stack; the slices are
    // dropped before the next allocation.
    let pairs: Vec<(&[u8], &[u8])> = (0..unsafe { rb::array_len(strings) } / 2)
        .map(|i| unsafe {
            (
                rb::str_bytes(rb::array_entry(strings, 2 * i)),
                rb::str_bytes(rb::array_entry(strings, 2 * i + 1)),
            )
        })
        .collect();
    let h = FrameHeader {
        flags: state.flags,
        sequence_id: state.sequence_id,
        protocol_id: state.protocol_id,
        transforms: &state.transforms,
        headers: &pairs,
    };
    let block = header::header_block(&h);
    too_large(header::frame_size(&block, body.len()), state.max_frame_size)?;
    let prefix = header::frame_prefix(&h, &block, body.len());
    drop(pairs);
    set(
        this,
        &IVAR_WRITE_HEADERS,
        magnus::rb_sys::AsRawValue::as_raw(ruby.hash_new()),
    )?;
    send(this, &prefix, body)
}
