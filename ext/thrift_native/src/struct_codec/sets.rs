//! Sets as the struct codec fills and walks them without Set's Ruby methods, where that gives what those methods
//! would: Ruby 4.0's core Set through its C API (`rb_set_add`, `rb_set_foreach`), an earlier Ruby's set.rb Set
//! through the Hash it keeps in `@hash`. Anything else (a subclass or a singleton, a changed `each` or `entries` on
//! 4.0, an object of another kind than the Ruby's Set) is left to `add` and `entries`, which the C accelerator calls.

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::codec::Ran;

use crate::ruby::names::ADD;
#[cfg(ruby_lt_4_0)]
use crate::ruby::names::IVAR_HASH;
#[cfg(ruby_gte_4_0)]
use crate::ruby::names::{EACH, ENTRIES};
use crate::ruby::rb;
use crate::thrift::thrift;

/// Ruby 4.0: the rb_data_type_t of core Sets, read at load time from a Set made by `rb_set_new` (libruby keeps the
/// type itself private). An object of that type is a core Set whatever its class.
#[cfg(ruby_gte_4_0)]
static SET_TYPE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn init() {
    #[cfg(ruby_gte_4_0)]
    {
        use rb_sys::stable_api::{get_default, StableApiDefinition};
        // SAFETY: rb_set_new only allocates; the new Set is a typed T_DATA (set.c's TypedData_Make_Struct), so its
        // type can be read.
        let set = unsafe { rb_sys::rb_set_new() };
        // SAFETY: as above.
        let data_type = unsafe { get_default().rtypeddata_type(set) };
        SET_TYPE.store(data_type as usize, std::sync::atomic::Ordering::Relaxed);
    }
}

/// True for a Ruby 4.0 core Set (any class).
#[cfg(ruby_gte_4_0)]
fn is_core_set(v: VALUE) -> bool {
    use rb_sys::stable_api::{get_default, StableApiDefinition};
    if rb::builtin_type(v) != Some(rb_sys::ruby_value_type::RUBY_T_DATA) {
        return false;
    }
    let api = get_default();
    // SAFETY: `v` is a T_DATA: rtypeddata_p reads its flags, rtypeddata_type its type field when it is typed.
    unsafe {
        api.rtypeddata_p(v)
            && api.rtypeddata_type(v) as usize
                == SET_TYPE.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Adds a decoded element to a Set the builder made (`Set.new`). A String the source made (`fresh`) is frozen first,
/// so that the Set keeps it instead of a frozen copy, as [`hash_store`] does for Hash keys; hashing anything but a
/// String, an immediate or a Float runs its Ruby `#hash` and `#eql?`.
pub fn insert(set: VALUE, item: VALUE, fresh: bool) -> Result<Ran, Error> {
    #[cfg(ruby_gte_4_0)]
    if is_core_set(set) {
        let simple = prepare_key(item, fresh);
        // SAFETY: protected: rb_set_add raises FrozenError for a frozen Set and hashing may run Ruby code. `set` is a
        // core Set.
        protect(|| unsafe {
            rb_sys::rb_set_add(set, item);
            rb::QNIL
        })?;
        return Ok(if simple { Ran::OnlyRust } else { Ran::HostCode });
    }
    #[cfg(ruby_lt_4_0)]
    {
        let hash = rb::ivar_get(set, IVAR_HASH.get());
        if rb::builtin_type(hash) == Some(rb_sys::ruby_value_type::RUBY_T_HASH) {
            return hash_store(hash, item, rb::QTRUE, fresh);
        }
    }
    rb::funcall(set, ADD.get(), &[item])?;
    Ok(Ran::HostCode)
}

/// Freezes a String key the source made; tells whether storing `key` runs no Ruby code.
pub fn prepare_key(key: VALUE, fresh: bool) -> bool {
    if rb::is_string(key) {
        if fresh {
            // SAFETY: `key` is a String the source just made; nothing else refers to it yet.
            unsafe { rb_sys::rb_obj_freeze(key) };
        }
        true
    } else {
        rb::is_special_const(key)
            || rb::builtin_type(key) == Some(rb_sys::ruby_value_type::RUBY_T_FLOAT)
    }
}

/// A Set to write whose elements can be walked natively, and their count: an instance of exactly `::Set` (no
/// subclass, no singleton class) that is the Ruby's own kind of Set, with `each` and `entries` as Ruby defines them
/// on 4.0 (the C accelerator calls `entries`; set.rb's are Ruby methods that the Hash walk stands for).
pub fn walkable(v: VALUE) -> Option<(VALUE, usize)> {
    let set_class = thrift().set_class;
    if !rb::is_exact_instance(v, set_class) {
        return None;
    }
    #[cfg(ruby_gte_4_0)]
    {
        // SAFETY: rb_method_basic_definition_p only looks the methods up; it cannot raise.
        let unchanged = unsafe {
            rb_sys::rb_method_basic_definition_p(set_class, EACH.get()) != 0
                && rb_sys::rb_method_basic_definition_p(set_class, ENTRIES.get()) != 0
        };
        // SAFETY: rb_set_size reads a core Set's table size.
        (unchanged && is_core_set(v)).then(|| (v, unsafe { rb_sys::rb_set_size(v) } as usize))
    }
    #[cfg(ruby_lt_4_0)]
    {
        let hash = rb::ivar_get(v, IVAR_HASH.get());
        if rb::builtin_type(hash) != Some(rb_sys::ruby_value_type::RUBY_T_HASH) {
            return None;
        }
        // SAFETY: `hash` is a Hash.
        Some((hash, unsafe { rb_sys::rb_hash_size_num(hash) as usize }))
    }
}

/// Calls `f` with every element held by what [`walkable`] gave.
pub fn each_element<F>(elements: VALUE, mut f: F) -> Result<(), Error>
where
    F: FnMut(VALUE) -> Result<(), Error>,
{
    #[cfg(ruby_gte_4_0)]
    // SAFETY: `walkable` gave `elements` only for a core Set.
    return unsafe { rb::set_foreach(elements, &mut f) };
    #[cfg(ruby_lt_4_0)]
    rb::hash_foreach(elements, |key, _| f(key))
}

/// `hash[key] = value`. A String key the source made (`fresh`) is frozen first, so that Hash keeps it instead of
/// making a frozen copy; a String from a protocol method is left as it is, as `Hash#[]=` leaves it. Hashing a key
/// other than a String, an immediate or a Float runs its Ruby `#hash` and `#eql?`.
pub(super) fn hash_store(hash: VALUE, key: VALUE, value: VALUE, fresh: bool) -> Result<Ran, Error> {
    let simple = prepare_key(key, fresh);
    // SAFETY: protected; hashing a struct key calls its Ruby #hash and #eql?.
    protect(|| unsafe { rb_sys::rb_hash_aset(hash, key, value) })?;
    Ok(if simple { Ran::OnlyRust } else { Ran::HostCode })
}
