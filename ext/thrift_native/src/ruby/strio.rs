//! A StringIO's String, position and open sides read (and its position set) in its C struct, without a method call:
//! each of `string`, `pos`, `pos=`, `closed_read?`, `closed_write?` is a protected call otherwise, and a protocol
//! method over an IOStreamTransport or HTTPClientTransport needs four of them.
//!
//! stringio.c's `struct StringIO` is `{ VALUE string; rb_encoding *enc; long pos; long lineno; int flags; int count; }`
//! in every Ruby of the matrix (stringio 3.0.1 with Ruby 3.1 to 3.2.0 with Ruby 4.0, whose `rb_io_mode_t` flags is an
//! int-sized enum), a typed data object of the type named "strio"; a side is open when the object's flag
//! (`STRIO_READABLE` FL_USER4, `STRIO_WRITABLE` FL_USER5) and the struct's (`FMODE_READABLE` 1, `FMODE_WRITABLE` 2)
//! are both set. [`verify`] checks all of it at load time on StringIOs made to have each state, against their own
//! methods; until it has (or where it found otherwise), [`fields`] answers None and the callers make the calls.
//!
//! Every StringIO method refuses a frozen StringIO (`rb_io_taint_check`), so a frozen one is never read here.

use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::VALUE;

use super::names::{CLOSED_READ_P, CLOSED_WRITE_P, NEW, POS, READ, SET_POS, STRING};
use super::rb;

#[repr(C)]
struct StringIo {
    string: VALUE,
    enc: *const c_void,
    pos: c_long,
    lineno: c_long,
    flags: c_int,
    count: c_int,
}

const STRIO_READABLE: VALUE = rb_sys::ruby_fl_type::RUBY_FL_USER4 as VALUE;
const STRIO_WRITABLE: VALUE = rb_sys::ruby_fl_type::RUBY_FL_USER5 as VALUE;
const FMODE_READABLE: c_int = 1;
const FMODE_WRITABLE: c_int = 2;

/// The "strio" data type, once [`verify`] found the layout as this file says.
static TYPE: AtomicPtr<rb_sys::rb_data_type_t> = AtomicPtr::new(std::ptr::null_mut());

/// What a StringIO holds: its String (which may be nil), its position, and which sides are open.
#[derive(Clone, Copy)]
pub struct Fields {
    pub string: VALUE,
    pub pos: usize,
    pub readable: bool,
    pub writable: bool,
}

/// "struct" once [`verify`] found the layout (StringIOs read in place), else "methods": for the specs.
pub fn access() -> &'static str {
    if TYPE.load(Ordering::Relaxed).is_null() {
        "methods"
    } else {
        "struct"
    }
}

/// The struct of `io`, when it is an unfrozen StringIO of the verified type.
#[inline(always)]
fn strio(io: VALUE) -> Option<*mut StringIo> {
    let verified = TYPE.load(Ordering::Relaxed);
    if verified.is_null() || rb::is_special_const(io) || rb::is_frozen(io) {
        return None;
    }
    let api = get_default();
    // SAFETY: `io` is a live heap object; the typed-data checks read its header, and the data pointer only when it is
    // typed data of the verified type.
    unsafe {
        if !api.rtypeddata_p(io) || api.rtypeddata_type(io) != verified.cast_const() {
            return None;
        }
        let data = api.rtypeddata_get_data(io) as *mut StringIo;
        (!data.is_null()).then_some(data)
    }
}

/// `io`'s String, position and open sides, read in its struct; None where that is not known to be safe (the caller
/// asks its methods).
#[inline(always)]
pub fn fields(io: VALUE) -> Option<Fields> {
    let data = strio(io)?;
    // SAFETY: `data` is the live struct of `io` (see `strio`); RBasic's flags of a heap object are readable.
    unsafe {
        let s = &*data;
        let flags = (*(io as *const rb_sys::RBasic)).flags;
        Some(Fields {
            string: s.string,
            pos: usize::try_from(s.pos).ok()?,
            readable: flags & STRIO_READABLE != 0 && s.flags & FMODE_READABLE != 0,
            writable: flags & STRIO_WRITABLE != 0 && s.flags & FMODE_WRITABLE != 0,
        })
    }
}

/// `io.pos = pos` in its struct, as `StringIO#pos=` does it for a position it takes; false where the caller must call
/// it instead.
#[inline(always)]
pub fn set_pos(io: VALUE, pos: usize) -> bool {
    let (Some(data), Ok(pos)) = (strio(io), c_long::try_from(pos)) else {
        return false;
    };
    // SAFETY: `data` is the live struct of `io`; `pos=` stores a non-negative long there and nothing else.
    unsafe { (*data).pos = pos };
    true
}

/// Checks the layout on StringIOs made here against their own methods (`string`, `pos`, `pos=`, `read`,
/// `closed_read?`, `closed_write?`, for a read-write, a read-only and a write-only one) and, if everything agrees,
/// reads StringIOs in place from then on. Nothing raises from here: a failure leaves the method calls.
pub fn verify(string_io: VALUE) {
    let Some(data_type) = layout_agrees(string_io) else {
        return;
    };
    TYPE.store(data_type, Ordering::Relaxed);
}

fn layout_agrees(class: VALUE) -> Option<*mut rb_sys::rb_data_type_t> {
    let call = |io: VALUE, id: &rb::StaticId, args: &[VALUE]| rb::funcall(io, id.get(), args).ok();
    let text = rb::binary_string(b"abcdefgh");
    let io = call(class, &NEW, &[text])?;
    let api = get_default();
    // SAFETY: `io` is a live object just made; the checks read its header.
    let data_type = unsafe {
        if rb::is_special_const(io) || !api.rtypeddata_p(io) {
            return None;
        }
        let t = api.rtypeddata_type(io);
        let name = std::ffi::CStr::from_ptr((*t).wrap_struct_name);
        if name.to_bytes() != b"strio" {
            return None;
        }
        t as *mut rb_sys::rb_data_type_t
    };
    // Verified against this type from here on, provisionally: undone below unless every check agrees.
    TYPE.store(data_type, Ordering::Relaxed);
    let agrees = (|| {
        let f = fields(io)?;
        let pos_ok = |io: VALUE| -> Option<bool> {
            let by_method = rb::fixnum_value(call(io, &POS, &[])?)?;
            Some(fields(io)?.pos as i64 == by_method)
        };
        let same = f.string == call(io, &STRING, &[])? && f.pos == 0 && pos_ok(io)?;
        call(io, &SET_POS, &[rb::integer(3)])?;
        call(io, &READ, &[rb::integer(2)])?; // now at 5
        let moved = pos_ok(io)? && fields(io)?.pos == 5;
        let set_here = set_pos(io, 6) && rb::fixnum_value(call(io, &POS, &[])?)? == 6;
        let sides = |io: VALUE| -> Option<bool> {
            let f = fields(io)?;
            Some(
                f.readable != rb::truthy(call(io, &CLOSED_READ_P, &[])?)
                    && f.writable != rb::truthy(call(io, &CLOSED_WRITE_P, &[])?),
            )
        };
        let read_only = call(
            class,
            &NEW,
            &[rb::binary_string(b"x"), rb::utf8_string(b"r")],
        )?;
        let write_only = call(
            class,
            &NEW,
            &[rb::binary_string(b"x"), rb::utf8_string(b"w")],
        )?;
        let all_sides = sides(io)?
            && sides(read_only)?
            && sides(write_only)?
            && fields(io)?.readable
            && fields(io)?.writable
            && !fields(read_only)?.writable
            && !fields(write_only)?.readable;
        Some(same && moved && set_here && all_sides)
    })()
    .unwrap_or(false);
    TYPE.store(std::ptr::null_mut(), Ordering::Relaxed);
    agrees.then_some(data_type)
}
