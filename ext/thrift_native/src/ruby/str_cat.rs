//! Appending bytes to a String, as `rb_str_cat`. Most appends on the hot paths (a message header, a struct's bytes,
//! a frame's size into a write buffer) fit in the buffer the String already has; there `rb_str_cat`'s work is a
//! copy, the new length and the coderange forgotten, which is done here without the protected call (whose
//! `rb_protect`, and `rb_str_cat`'s own encoding look-ups, cost more than the copy). Everything else (a frozen,
//! locked, chilled or shared String, one that must grow, a wide encoding's terminator) goes through `rb_str_cat`.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::{ruby_value_type, VALUE};

use super::rb;

use rb_sys::ruby_fl_type::{
    RUBY_FL_FREEZE, RUBY_FL_USER0, RUBY_FL_USER1, RUBY_FL_USER18, RUBY_FL_USER2, RUBY_FL_USER3,
    RUBY_FL_USER5, RUBY_FL_USER6, RUBY_FL_USER7,
};

/// Flags under which a String is not appended to here: frozen; `STR_TMPLOCK` (FL_USER7 on every Ruby of the matrix);
/// `STR_SHARED` (FL_USER2 up to 3.3, FL_USER0 from 3.4 on); a chilled String's FL_USER2 and FL_USER3 (3.4 and 4.0:
/// its first change warns). On 3.1 FL_USER2 and FL_USER3 are also bits of an embedded String's length, which only
/// keeps such Strings to `rb_str_cat`.
const NOT_IN_PLACE: VALUE = (RUBY_FL_FREEZE as VALUE)
    | (RUBY_FL_USER7 as VALUE)
    | (RUBY_FL_USER0 as VALUE)
    | (RUBY_FL_USER2 as VALUE)
    | (RUBY_FL_USER3 as VALUE);
/// `STR_NOEMBED` (FL_USER1): the bytes are in a buffer of their own, whose capacity is `as.heap.aux.capa` unless
/// the String is `STR_NOFREE` (FL_USER18), a shared root (`STR_SHARED_ROOT`, FL_USER5 from 3.2 on) or borrowed
/// (`STR_BORROWED`, FL_USER6), which go through the libruby calls.
const NOEMBED: VALUE = RUBY_FL_USER1 as VALUE;
const NOT_OWN_HEAP: VALUE =
    (RUBY_FL_USER18 as VALUE) | (RUBY_FL_USER5 as VALUE) | (RUBY_FL_USER6 as VALUE);
const CODERANGE_MASK: VALUE = rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_MASK as VALUE;
/// ASCII-8BIT, UTF-8 and US-ASCII (Ruby's fixed encoding indices 0, 1, 2): a terminator of one byte.
const LAST_ONE_BYTE_TERMINATED: i32 = 2;

/// Appends raw bytes to a String, whatever its encoding (as `rb_str_buf_cat`). Raises FrozenError as Ruby does.
#[inline(always)]
pub fn str_cat(s: VALUE, bytes: &[u8]) -> Result<(), Error> {
    // SAFETY: `bytes` is Rust memory or another String's bytes, valid for the call, outside `s`'s free room.
    if unsafe { appended_in_place(s, bytes.as_ptr(), bytes.len()) } {
        return Ok(());
    }
    // SAFETY: protect catches FrozenError (and the "temporarily locked" RuntimeError); `bytes` stays valid for the
    // call: it is either Rust memory or another String that rb_str_cat does not free.
    protect(|| unsafe { rb_sys::rb_str_cat(s, bytes.as_ptr() as *const _, bytes.len() as _) })
        .map(|_| ())
}

/// Appends the bytes of String `src` to String `dst` (which may be the same object).
pub fn str_cat_str(dst: VALUE, src: VALUE) -> Result<(), Error> {
    let api = get_default();
    // SAFETY: `src` is a String; its bytes lie in its own buffer, before `dst`'s free room when it is `dst`.
    if unsafe {
        appended_in_place(
            dst,
            api.rstring_ptr(src) as *const u8,
            api.rstring_len(src) as usize,
        )
    } {
        return Ok(());
    }
    // SAFETY: rb_str_cat copes with a source pointer inside the destination (it re-bases it after growing); the
    // pointer is read inside the protected call, after which nothing holds it.
    protect(|| unsafe { rb_sys::rb_str_cat(dst, api.rstring_ptr(src), api.rstring_len(src)) })
        .map(|_| ())
}

/// Appends the first `n` bytes of String `src` (at most its length) to String `dst` (which may be the same object).
pub fn str_cat_prefix(dst: VALUE, src: VALUE, n: usize) -> Result<(), Error> {
    let api = get_default();
    // SAFETY: as str_cat_str; `n` is capped at the source's length.
    let n = unsafe { n.min(api.rstring_len(src) as usize) };
    // SAFETY: as str_cat_str.
    if unsafe { appended_in_place(dst, api.rstring_ptr(src) as *const u8, n) } {
        return Ok(());
    }
    // SAFETY: as str_cat_str; the length is capped at the source's length inside the protected call.
    protect(|| unsafe {
        let n = (n as std::os::raw::c_long).min(api.rstring_len(src));
        rb_sys::rb_str_cat(dst, api.rstring_ptr(src), n)
    })
    .map(|_| ())
}

/// `rb_str_cat(s, src, n)` where it is only a copy into room `s` has: then done, true; else nothing done, false.
///
/// # Safety
/// `src` must be valid for `n` bytes and not overlap the bytes after `s`'s length (Rust memory, another String, or
/// `s`'s own bytes).
#[inline(always)]
unsafe fn appended_in_place(s: VALUE, src: *const u8, n: usize) -> bool {
    if n == 0 || rb::builtin_type(s) != Some(ruby_value_type::RUBY_T_STRING) {
        return false;
    }
    let api = get_default();
    let basic = s as *mut rb_sys::RBasic;
    // SAFETY: `s` is a live String (checked), whose header is an RBasic; its encoding index is read as ENCODING_GET.
    let (flags, encoding) = unsafe { ((*basic).flags, api.encoding_get(s)) };
    if flags & NOT_IN_PLACE != 0 || !(0..=LAST_ONE_BYTE_TERMINATED).contains(&encoding) {
        return false;
    }
    if flags & (NOEMBED | NOT_OWN_HEAP) == NOEMBED {
        // SAFETY: an unfrozen, unlocked, unshared String with a buffer of its own (the flags checked), whose
        // `capa` bytes (and a terminator) it may hold; `src` does not overlap the room after its length.
        return unsafe { appended_to_own_buffer(s, src, n) };
    }
    // SAFETY: `s` is a String; rb_str_capacity answers what it holds without growing (a shared String's length, so
    // no room: it is never written here).
    let (len, capacity) = unsafe {
        (
            api.rstring_len(s) as usize,
            rb_sys::rb_str_capacity(s) as usize,
        )
    };
    if capacity.saturating_sub(len) < n {
        return false;
    }
    // SAFETY: `s` is an unfrozen, unlocked String that owns its buffer (a shared one has no room), with room for `n`
    // bytes after its `len`; `src` does not overlap them (the caller's promise). As rb_str_cat: the coderange is
    // forgotten (before the new length, so that rb_str_set_len leaves it unknown), then the length set, which
    // writes the one-byte terminator and cannot raise for such a String.
    unsafe {
        let dst = (api.rstring_ptr(s) as *mut u8).add(len);
        std::ptr::copy(src, dst, n);
        (*basic).flags &= !CODERANGE_MASK;
        rb_sys::rb_str_set_len(s, (len + n) as std::os::raw::c_long);
    }
    true
}

/// [`appended_in_place`] for a String with a buffer of its own (`as.heap`): its length, pointer and capacity read
/// and the length written in the RString itself, where libruby's calls (`rb_str_capacity`, `rb_str_set_len`) would
/// look its encoding up twice more: most of an append's cost (callgrind, a small framed call on 3.1: 1.3k of 1.6k
/// instructions saved per side come from this path). rb-sys marks its RString deprecated for ruby-head's sake; the
/// struct is the one bindgen read from the very Ruby built against (the length's place differs: `as.heap.len` before
/// 3.3, `len` from 3.3 on), as the ivar slots read RObject (ivars.rs).
///
/// # Safety
/// `s` must be an unfrozen, unlocked, unshared, non-embedded String of a one-byte-terminated encoding, owning its
/// buffer (`as.heap.aux` is its capacity); `src` as for [`appended_in_place`].
#[inline(always)]
#[allow(deprecated)]
unsafe fn appended_to_own_buffer(s: VALUE, src: *const u8, n: usize) -> bool {
    let rstring = s as *mut rb_sys::RString;
    // SAFETY: the caller's promise: `s` is a heap String whose `aux` holds its capacity, `ptr` its buffer of
    // `capa` bytes and a terminator.
    unsafe {
        #[cfg(ruby_gte_3_3)]
        let len_field = std::ptr::addr_of_mut!((*rstring).len);
        #[cfg(not(ruby_gte_3_3))]
        let len_field = std::ptr::addr_of_mut!((*rstring).as_.heap.len);
        let len = *len_field as usize;
        let capacity = (*rstring).as_.heap.aux.capa as usize;
        if capacity.saturating_sub(len) < n {
            return false;
        }
        let ptr = (*rstring).as_.heap.ptr as *mut u8;
        std::ptr::copy(src, ptr.add(len), n);
        // As rb_str_cat: the coderange forgotten, the length set, the one-byte terminator written.
        (*rstring).basic.flags &= !CODERANGE_MASK;
        *len_field = (len + n) as std::os::raw::c_long;
        *ptr.add(len + n) = 0;
    }
    true
}
