//! Thin wrappers over the Ruby C API: the one way a raw `VALUE` becomes a magnus `Value`, the one method-call helper,
//! the integer conversions, interned names, and allocation-free helpers for the hot paths.
//!
//! Only functions that cannot raise are called raw here; anything that can raise goes through `magnus::rb_sys::protect`
//! so that no Ruby exception jumps over Rust frames.

use std::os::raw::c_int;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

use magnus::rb_sys::{protect, FromRawValue};
use magnus::{Error, Value};
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::{ruby_value_type, ID, VALUE};

pub use super::str_cat::{str_cat, str_cat_prefix, str_cat_str};

pub const QNIL: VALUE = rb_sys::special_consts::Qnil as VALUE;
pub const QTRUE: VALUE = rb_sys::special_consts::Qtrue as VALUE;
pub const QFALSE: VALUE = rb_sys::special_consts::Qfalse as VALUE;

/// A raw `VALUE` as magnus's `Value`: the only place the conversion happens.
///
/// # Safety
/// `v` must be an immediate or a live Ruby object that stays reachable while the `Value` is used: held on the
/// stack (which the GC scans and pins), in an ivar of such an object, or by something marked.
#[inline(always)]
pub unsafe fn value(v: VALUE) -> Value {
    Value::from_raw(v)
}

/// A VALUE a native method returns to Ruby, as magnus's `Value`: the one safe conversion, for results only (a value
/// just made, returned by a call, or read from an object the method holds), handed straight back.
#[inline(always)]
pub fn returned(v: VALUE) -> Value {
    // SAFETY: every caller returns the Value from its native method at once, while `v` is on that method's stack
    // frame (which the GC scans) or held by the receiver; an immediate needs nothing.
    unsafe { value(v) }
}

/// `recv.method(*args)`, visibility ignored (as the C accelerator's `rb_funcall`); whatever it raises comes back
/// as the `Err`.
#[inline]
pub fn funcall(recv: VALUE, method: ID, args: &[VALUE]) -> Result<VALUE, Error> {
    // SAFETY: protected; `args` is a live slice of VALUEs on the caller's stack for the whole call.
    protect(|| unsafe { rb_sys::rb_funcallv(recv, method, args.len() as _, args.as_ptr()) })
}

/// A Symbol that is an immediate (a static Symbol, unique by name).
#[inline(always)]
pub fn is_static_symbol(v: VALUE) -> bool {
    get_default().static_sym_p(v)
}

/// `::String`.
#[inline(always)]
pub fn string_class() -> VALUE {
    // SAFETY: rb_cString is set when Ruby boots, before any extension loads, and never changes.
    unsafe { rb_sys::rb_cString }
}

/// What string interpolation makes of `v`: `v` itself for a String, else its `to_s` (Ruby's `#<Class:0x...>` form when
/// `to_s` answers no String).
pub fn as_string(v: VALUE) -> Result<VALUE, Error> {
    if is_string(v) {
        return Ok(v);
    }
    // SAFETY: protected; rb_obj_as_string calls `to_s`.
    protect(|| unsafe { rb_sys::rb_obj_as_string(v) })
}

/// `"#{a}#{b}..."` of `parts`: each made a String as interpolation makes it, joined as Ruby joins an interpolated
/// string's parts (rb_str_concat_literals: the first part's encoding, a non-ASCII part's where the result is still
/// US-ASCII, Encoding::CompatibilityError where two clash).
pub fn interpolate(parts: &[VALUE]) -> Result<VALUE, Error> {
    let mut strings = [QNIL; 8];
    assert!(parts.len() <= strings.len(), "at most 8 parts");
    for (slot, &part) in strings.iter_mut().zip(parts) {
        *slot = as_string(part)?;
    }
    let strings = &strings[..parts.len()];
    let out = utf8_string(&[]);
    // SAFETY: protected; `out` and the parts are Strings on this stack; rb_str_buf_append checks their encodings.
    protect(|| unsafe {
        if let Some(&first) = strings.first() {
            rb_sys::rb_enc_copy(out, first);
        }
        let us_ascii = rb_sys::rb_usascii_encindex();
        for &part in strings {
            let index = rb_sys::rb_enc_get_index(part);
            rb_sys::rb_str_buf_append(out, part);
            if index != us_ascii && rb_sys::rb_enc_get_index(out) == us_ascii {
                rb_sys::rb_enc_set_index(out, index);
            }
        }
        out
    })
}

/// `::Symbol`.
#[inline(always)]
pub fn symbol_class() -> VALUE {
    // SAFETY: rb_cSymbol is set when Ruby boots, before any extension loads, and never changes.
    unsafe { rb_sys::rb_cSymbol }
}

/// `::Hash`.
#[inline(always)]
pub fn hash_class() -> VALUE {
    // SAFETY: rb_cHash is set when Ruby boots, before any extension loads, and never changes.
    unsafe { rb_sys::rb_cHash }
}

/// `:name`, a static Symbol.
pub fn symbol(name: &str) -> VALUE {
    // SAFETY: rb_id2sym of an interned ID never raises.
    unsafe { rb_sys::rb_id2sym(intern(name)) }
}

/// A method or ivar name, interned on first use (idempotent, so racing threads agree).
pub struct StaticId {
    name: &'static str,
    id: AtomicUsize,
}

impl StaticId {
    pub const fn new(name: &'static str) -> Self {
        StaticId {
            name,
            id: AtomicUsize::new(0),
        }
    }

    #[inline(always)]
    pub fn get(&self) -> ID {
        match self.id.load(Ordering::Relaxed) {
            0 => self.intern(),
            id => id as ID,
        }
    }

    #[cold]
    fn intern(&self) -> ID {
        let id = intern(self.name);
        self.id.store(id as usize, Ordering::Relaxed);
        id
    }
}

/// Declares interned names once: `define_rb_intern!(VALIDATE => "validate", IVAR_BUF => "@buf");` then
/// `VALIDATE.get()` is the ID.
macro_rules! define_rb_intern {
    ($($name:ident => $text:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $text, "`")]
            pub static $name: $crate::ruby::rb::StaticId = $crate::ruby::rb::StaticId::new($text);
        )*
    };
}
pub(crate) use define_rb_intern;

/// An Integer's value: a Fixnum as it is; anything else through `to_int` (`rb_to_int`: TypeError "no implicit
/// conversion of nil into Integer", RangeError beyond 64 bits).
#[inline(always)]
pub fn to_i64(v: VALUE) -> Result<i64, Error> {
    match fixnum_value(v) {
        Some(n) => Ok(n),
        // SAFETY: `v` is the caller's live value, on its stack.
        None => <i64 as magnus::TryConvert>::try_convert(unsafe { value(v) }),
    }
}

/// `NUM2INT` (and `FIX2INT`, the same for Integers): `rb_num2int`'s conversion (TypeError "no implicit conversion
/// from nil to integer"), then RangeError outside `int`.
#[inline(always)]
pub fn num2int(v: VALUE) -> Result<i32, Error> {
    if let Some(n) = fixnum_value(v).and_then(|n| i32::try_from(n).ok()) {
        return Ok(n);
    }
    let mut n = 0;
    // SAFETY: protected; rb_num2int raises TypeError or RangeError ("integer 2147483648 too big to convert to
    // `int'") for what it cannot convert.
    protect(|| unsafe {
        n = rb_sys::rb_num2int(v) as i64;
        QNIL
    })?;
    Ok(n as i32)
}

/// `NUM2LL`: `rb_num2ll`'s conversion (a Float truncated; TypeError for what is not numeric; RangeError beyond 64
/// bits).
#[inline(always)]
pub fn num2ll(v: VALUE) -> Result<i64, Error> {
    if let Some(n) = fixnum_value(v) {
        return Ok(n);
    }
    let mut n = 0;
    // SAFETY: protected; rb_num2ll raises TypeError or RangeError for what it cannot convert.
    protect(|| unsafe {
        n = rb_sys::rb_num2ll(v);
        QNIL
    })?;
    Ok(n)
}

/// An Integer for `n` as a `Value` (see [`integer`]).
#[inline(always)]
pub fn int(n: i64) -> Value {
    // SAFETY: a Fixnum, or a Bignum just made and held on this stack.
    unsafe { value(integer(n)) }
}

/// A Float for `f` as a `Value` (see [`float`]).
#[inline(always)]
pub fn float_value(f: f64) -> Value {
    // SAFETY: a flonum, or a Float just made and held on this stack.
    unsafe { value(float(f)) }
}

#[inline(always)]
pub fn ivar_get(obj: VALUE, id: ID) -> VALUE {
    // SAFETY: rb_ivar_get never raises; on an object without the ivar (or an immediate) it returns nil.
    unsafe { rb_sys::rb_ivar_get(obj, id) }
}

/// Sets an ivar on an object already known not to be frozen (the only way `rb_ivar_set` raises).
#[inline(always)]
pub fn ivar_set_unfrozen(obj: VALUE, id: ID, value: VALUE) {
    debug_assert!(!is_frozen(obj));
    // SAFETY: the caller checked that `obj` is a heap object that is not frozen, so rb_ivar_set cannot raise.
    unsafe {
        rb_sys::rb_ivar_set(obj, id, value);
    }
}

/// Sets an ivar, raising FrozenError as Ruby would for a frozen object (only that case pays for `protect`).
#[inline(always)]
pub fn ivar_set(obj: VALUE, id: ID, value: VALUE) -> Result<(), Error> {
    if !is_frozen(obj) {
        ivar_set_unfrozen(obj, id, value);
        return Ok(());
    }
    // SAFETY: protect catches the FrozenError that rb_ivar_set may raise.
    protect(|| unsafe { rb_sys::rb_ivar_set(obj, id, value) }).map(|_| ())
}

#[inline(always)]
pub fn is_special_const(v: VALUE) -> bool {
    get_default().special_const_p(v)
}

#[inline(always)]
pub fn is_nil(v: VALUE) -> bool {
    v == QNIL
}

/// RTEST: anything but nil and false.
#[inline(always)]
pub fn truthy(v: VALUE) -> bool {
    get_default().rb_test(v)
}

#[inline(always)]
pub fn builtin_type(v: VALUE) -> Option<ruby_value_type> {
    if is_special_const(v) {
        None
    } else {
        // SAFETY: `v` is a heap object, so its RBasic header can be read.
        Some(unsafe { get_default().builtin_type(v) })
    }
}

#[inline(always)]
pub fn is_string(v: VALUE) -> bool {
    builtin_type(v) == Some(ruby_value_type::RUBY_T_STRING)
}

#[inline(always)]
pub fn is_array(v: VALUE) -> bool {
    builtin_type(v) == Some(ruby_value_type::RUBY_T_ARRAY)
}

/// `ary.push(v)`: FrozenError for a frozen Array, as Ruby raises it. No object is allocated (the Array's buffer
/// may grow).
///
/// # Safety
/// `ary` must be an Array.
#[inline(always)]
pub unsafe fn ary_push(ary: VALUE, v: VALUE) -> Result<(), Error> {
    if is_frozen(ary) {
        // SAFETY: protected: rb_ary_push raises FrozenError.
        return protect(|| rb_sys::rb_ary_push(ary, v)).map(|_| ());
    }
    // SAFETY: an unfrozen Array: rb_ary_push only grows (or unshares) its buffer.
    rb_sys::rb_ary_push(ary, v);
    Ok(())
}

/// `ary.pop`: nil for an empty Array; FrozenError for a frozen one.
///
/// # Safety
/// `ary` must be an Array.
#[inline(always)]
pub unsafe fn ary_pop(ary: VALUE) -> Result<VALUE, Error> {
    if is_frozen(ary) {
        // SAFETY: protected: rb_ary_pop raises FrozenError.
        return protect(|| rb_sys::rb_ary_pop(ary));
    }
    // SAFETY: an unfrozen Array: rb_ary_pop only shrinks it.
    Ok(rb_sys::rb_ary_pop(ary))
}

/// The object's class, without skipping a singleton class: a stubbed object answers its singleton class.
#[inline(always)]
pub fn heap_class(v: VALUE) -> Option<VALUE> {
    if is_special_const(v) {
        return None;
    }
    // SAFETY: `v` is a heap object; RBasic.klass is its (possibly singleton) class, or null for hidden objects.
    // rbasic_class hands the klass VALUE back disguised as a pointer.
    unsafe { get_default().rbasic_class(v) }.map(|k| k.as_ptr() as VALUE)
}

/// True when `v` is an instance of exactly `klass`: not a subclass, no singleton class.
#[inline(always)]
pub fn is_exact_instance(v: VALUE, klass: VALUE) -> bool {
    heap_class(v) == Some(klass)
}

#[inline(always)]
pub fn is_frozen(v: VALUE) -> bool {
    // SAFETY: frozen_p reads the flags of heap objects and answers true for immediates.
    unsafe { get_default().frozen_p(v) }
}

#[inline(always)]
pub fn fixnum_value(v: VALUE) -> Option<i64> {
    let api = get_default();
    if api.fixnum_p(v) {
        Some(api.fix2long(v) as i64)
    } else {
        None
    }
}

#[inline(always)]
pub fn is_integer(v: VALUE) -> bool {
    // SAFETY: integer_type_p checks the immediate tag before reading a heap header.
    unsafe { get_default().integer_type_p(v) }
}

/// An Integer for `n`: a Fixnum (no allocation) when it fits, else a Bignum.
#[inline(always)]
pub fn integer(n: i64) -> VALUE {
    let api = get_default();
    if api.fixable(n as _) {
        api.long2fix(n as _)
    } else {
        // SAFETY: rb_ll2inum only allocates; it does not raise.
        unsafe { rb_sys::rb_ll2inum(n) }
    }
}

/// A Float's value; None for anything else.
#[inline(always)]
pub fn float_of(v: VALUE) -> Option<f64> {
    let api = rb_sys::stable_api::get_default();
    // SAFETY: float_type_p checks the tag first; num2dbl of a Float cannot raise.
    unsafe {
        if rb_sys::stable_api::StableApiDefinition::float_type_p(api, v) {
            return Some(rb_sys::stable_api::StableApiDefinition::num2dbl(api, v));
        }
    }
    None
}

/// A Float: a flonum (no allocation) when the value allows, as the C accelerator's DBL2NUM.
#[inline(always)]
pub fn float(f: f64) -> VALUE {
    get_default().dbl2num(f)
}

/// The bytes of a String.
///
/// The slice must be dropped before anything can run Ruby code or raise: Ruby code could change or free the bytes.
/// An allocation in between is allowed (the memory buffer hands such a slice to `rb_str_new`) as long as the String
/// itself is held on the stack meanwhile: a heap buffer does not move in a GC, and an embedded one moves only with
/// its object, which compaction does not move while the stack refers to it (Ruby pins what the stack holds).
/// Allocation runs no Ruby code (finalizers are deferred).
///
/// # Safety
/// `s` must be a String (T_STRING), kept on the stack while the slice lives.
#[inline(always)]
pub unsafe fn str_bytes<'a>(s: VALUE) -> &'a [u8] {
    let api = get_default();
    let len = api.rstring_len(s) as usize;
    if len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(api.rstring_ptr(s) as *const u8, len)
}

/// # Safety
/// `s` must be a String (T_STRING).
#[inline(always)]
pub unsafe fn str_len(s: VALUE) -> usize {
    get_default().rstring_len(s) as usize
}

/// True for a String that `IO#readpartial(n, s)` may fill without raising (not frozen, not locked by a read or write
/// in progress, which sets `STR_TMPLOCK`, `FL_USER7` on every Ruby of the matrix) and whose buffer holds at most
/// `max_capacity` bytes, so that reusing it keeps no large buffer alive.
#[inline(always)]
pub fn is_refillable_string(s: VALUE, max_capacity: usize) -> bool {
    if !is_string(s) || is_frozen(s) {
        return false;
    }
    // SAFETY: `s` is a String (a heap object): its RBasic flags are readable; rb_str_capacity only reads it.
    unsafe {
        let flags = (*(s as *const rb_sys::RBasic)).flags;
        flags & rb_sys::ruby_fl_type::RUBY_FL_USER7 as VALUE == 0
            && rb_sys::rb_str_capacity(s) <= max_capacity as _
    }
}

/// Empties a String readpartial may fill (see [`is_refillable_string`]); any other object is left as it is.
pub fn empty_refillable_string(s: VALUE) {
    if is_refillable_string(s, usize::MAX) {
        // SAFETY: protected (rb_str_resize makes a shared String independent first, which allocates; it raises
        // nothing for an unfrozen, unlocked String, but nothing may jump over these frames if it did). What it
        // would raise is dropped: emptying is a courtesy to later reads, the caller is raising already.
        let _ = protect(|| unsafe { rb_sys::rb_str_resize(s, 0) });
    }
}

/// A new ASCII-8BIT String holding a copy of `bytes`.
#[inline(always)]
pub fn binary_string(bytes: &[u8]) -> VALUE {
    // SAFETY: rb_str_new copies `bytes`; it allocates but does not raise for lengths that fit in memory.
    unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const _, bytes.len() as _) }
}

/// A new UTF-8 String holding a copy of `bytes` (not validated, as Thrift's `convert_to_string`).
#[inline(always)]
pub fn utf8_string(bytes: &[u8]) -> VALUE {
    // SAFETY: as binary_string; rb_utf8_str_new only tags the copy with UTF-8.
    unsafe { rb_sys::rb_utf8_str_new(bytes.as_ptr() as *const _, bytes.len() as _) }
}

/// `str[start, len]` as a shared substring (no copy of the bytes), as `rb_str_subseq`.
pub fn str_subseq(s: VALUE, start: usize, len: usize) -> VALUE {
    // SAFETY: rb_str_subseq allocates, it does not raise; start + len is within the String (callers check).
    unsafe { rb_sys::rb_str_subseq(s, start as _, len as _) }
}

pub fn intern(name: &str) -> ID {
    // SAFETY: rb_intern2 interns a static symbol for the given bytes; it does not raise for valid lengths.
    unsafe { rb_sys::rb_intern2(name.as_ptr() as *const _, name.len() as _) }
}

/// Keeps `v` alive and unmoved for the life of the process (for cached classes and constants).
pub fn pin_forever(v: VALUE) {
    // SAFETY: rb_gc_register_mark_object only records `v` in a GC root list.
    unsafe { rb_sys::rb_gc_register_mark_object(v) }
}

/// The length of an Array.
///
/// # Safety
/// `ary` must be an Array (T_ARRAY).
#[inline(always)]
pub unsafe fn array_len(ary: VALUE) -> usize {
    get_default().rarray_len(ary) as usize
}

/// Element `i` of an Array (nil past its end).
///
/// # Safety
/// `ary` must be an Array (T_ARRAY).
#[inline(always)]
pub unsafe fn array_entry(ary: VALUE, i: usize) -> VALUE {
    // SAFETY: the caller guarantees an Array; rb_ary_entry does not raise.
    unsafe { rb_sys::rb_ary_entry(ary, i as _) }
}

/// What `hash_foreach` hands its callback.
struct EachPair<F> {
    f: F,
    error: Option<Error>,
}

/// `rb_hash_foreach`'s callback: one pair to `f`.
///
/// # Safety
/// `arg` must be the address of a live `EachPair<F>` (as `hash_foreach` passes it).
unsafe extern "C" fn each_pair_callback<F>(key: VALUE, value: VALUE, arg: VALUE) -> c_int
where
    F: FnMut(VALUE, VALUE) -> Result<(), Error>,
{
    const ST_CONTINUE: c_int = 0;
    const ST_STOP: c_int = 1;
    // SAFETY: `arg` is the address of the EachPair that `hash_foreach` keeps alive across rb_hash_foreach.
    let ctx = unsafe { &mut *(arg as *mut EachPair<F>) };
    // A panic becomes a Ruby fatal error here instead of unwinding into rb_hash_foreach's C frames.
    let outcome =
        magnus::rb_sys::catch_unwind(AssertUnwindSafe(|| (ctx.f)(key, value))).and_then(|r| r);
    match outcome {
        Ok(()) => ST_CONTINUE,
        Err(e) => {
            ctx.error = Some(e);
            ST_STOP
        }
    }
}

/// Calls `f` with every pair of `hash`, without making an Array of its keys. `f`'s first error stops the walk.
pub fn hash_foreach<F>(hash: VALUE, f: F) -> Result<(), Error>
where
    F: FnMut(VALUE, VALUE) -> Result<(), Error>,
{
    let mut ctx = EachPair { f, error: None };
    let arg = &mut ctx as *mut EachPair<F> as VALUE;
    // SAFETY: protected, because rb_hash_foreach raises if the Hash is changed during the walk; the callback never
    // lets a Ruby exception or a panic escape (it records them in `ctx`), and `ctx` outlives the call.
    let walked = protect(|| unsafe {
        rb_sys::rb_hash_foreach(hash, Some(each_pair_callback::<F>), arg);
        QNIL
    });
    if let Some(e) = ctx.error.take() {
        return Err(e);
    }
    walked.map(drop)
}

/// Where `hash_pairs` copies to, and how far it got.
struct PairsOut {
    out: *mut (VALUE, VALUE),
    room: usize,
    len: usize,
}

/// `hash_pairs`' callback: one pair copied; or the walk stopped when there is no room (`len` then exceeds `room`), or
/// at a key that is neither a static Symbol nor an instance of String (`len` set past `room` too): for a small Hash
/// Ruby compares each key walked with the earlier ones, and only those two kinds compare without Ruby code (`eql?`).
///
/// # Safety
/// `arg` must be the address of a live `PairsOut` whose `out` has `room` slots.
unsafe extern "C" fn copy_pair_callback(key: VALUE, value: VALUE, arg: VALUE) -> c_int {
    const ST_CONTINUE: c_int = 0;
    const ST_STOP: c_int = 1;
    // SAFETY: the caller's promise: `arg` is the PairsOut that `hash_pairs` keeps alive across rb_hash_foreach.
    let ctx = unsafe { &mut *(arg as *mut PairsOut) };
    if ctx.len == ctx.room || !(is_static_symbol(key) || is_exact_instance(key, string_class())) {
        ctx.len = ctx.room + 1;
        ctx.len += 1;
        return ST_STOP;
    }
    // SAFETY: `len < room`, a slot of `out`.
    unsafe { ctx.out.add(ctx.len).write((key, value)) };
    ctx.len += 1;
    ST_CONTINUE
}

/// Copies `hash`'s pairs, in order, into `out` (a buffer on the caller's stack, which the GC scans): their count, or
/// None when `out` has too little room or a key is neither a static Symbol nor a String. Runs no Ruby code and
/// needs no `protect`.
///
/// # Safety
/// `hash` must be a Hash.
pub unsafe fn hash_pairs(hash: VALUE, out: &mut [(VALUE, VALUE)]) -> Option<usize> {
    let mut ctx = PairsOut {
        out: out.as_mut_ptr(),
        room: out.len(),
        len: 0,
    };
    // SAFETY: rb_hash_foreach raises only when the Hash is changed during the walk or a key comparison runs Ruby
    // code: the callback runs none, cannot panic, and stops before a key whose comparison could (a static Symbol or
    // a String compares in C); `ctx` outlives the call.
    unsafe {
        rb_sys::rb_hash_foreach(
            hash,
            Some(copy_pair_callback),
            &mut ctx as *mut PairsOut as VALUE,
        )
    };
    (ctx.len <= ctx.room).then_some(ctx.len)
}

/// `rb_set_foreach`'s callback: one element to `f`.
///
/// # Safety
/// `arg` must be the address of a live `EachPair<F>` (as `set_foreach` passes it).
#[cfg(ruby_gte_4_0)]
unsafe extern "C" fn each_element_callback<F>(element: VALUE, arg: VALUE) -> c_int
where
    F: FnMut(VALUE, VALUE) -> Result<(), Error>,
{
    // SAFETY: the caller's promise, passed on.
    unsafe { each_pair_callback::<F>(element, QNIL, arg) }
}

/// Calls `f` with every element of Ruby 4.0's core Set `set`, without making an Array of them. `f`'s first error
/// stops the walk.
///
/// # Safety
/// `set` must be a core Set object (`rb_set_foreach` reads its table without checking its type).
#[cfg(ruby_gte_4_0)]
pub unsafe fn set_foreach<F>(set: VALUE, mut f: F) -> Result<(), Error>
where
    F: FnMut(VALUE) -> Result<(), Error>,
{
    let mut ctx = EachPair {
        f: |element, _| f(element),
        error: None,
    };
    let arg = &mut ctx as *mut EachPair<_> as VALUE;
    fn callback_for<G: FnMut(VALUE, VALUE) -> Result<(), Error>>(
        _: &EachPair<G>,
    ) -> unsafe extern "C" fn(VALUE, VALUE) -> c_int {
        each_element_callback::<G>
    }
    let callback = callback_for(&ctx);
    // SAFETY: protected, because the walk raises if the Set is changed during it; the callback never lets a Ruby
    // exception or a panic escape (it records them in `ctx`), and `ctx` outlives the call. `set` is a core Set (the
    // caller's promise).
    let walked = protect(|| unsafe {
        rb_sys::rb_set_foreach(set, Some(callback), arg);
        QNIL
    });
    if let Some(e) = ctx.error.take() {
        return Err(e);
    }
    walked.map(drop)
}

/// FrozenError, with Ruby's own message, when `obj` is frozen.
pub fn check_frozen(obj: VALUE) -> Result<(), Error> {
    if is_frozen(obj) {
        // SAFETY: protected; rb_check_frozen raises FrozenError for a frozen object.
        protect(|| unsafe {
            rb_sys::rb_check_frozen(obj);
            QNIL
        })?;
    }
    Ok(())
}

/// How many ivars `obj` has.
pub fn ivar_count(obj: VALUE) -> usize {
    // SAFETY: rb_ivar_count only reads the object's ivar table.
    unsafe { rb_sys::rb_ivar_count(obj) as usize }
}

/// TypeError "wrong argument type X (expected Y)" unless `v` is of builtin type `t`.
pub fn check_type(v: VALUE, t: ruby_value_type) -> Result<(), Error> {
    if builtin_type(v) == Some(t) {
        return Ok(());
    }
    // SAFETY: protected; rb_check_type raises the TypeError.
    protect(|| unsafe {
        rb_sys::rb_check_type(v, t as _);
        QNIL
    })
    .map(drop)
}
