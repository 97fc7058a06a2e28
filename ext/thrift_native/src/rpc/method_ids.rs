//! A method's ID looked up from its name's bytes without making a String or a Symbol (`process_<name>` per call on
//! the server, `<key>=` per argument on the client), remembered once found.
//!
//! A name found whose Symbol is static (every method name Ruby defines, and any Symbol since turned into an ID) keeps
//! that ID for the life of the process, so it is kept here and the next lookup of the same bytes is a hash lookup,
//! without the protected rb_check_id_cstr and its hashing of a fake String in Ruby's symbol table. A name not found,
//! or found as a dynamic Symbol (which the GC may collect, and whose ID a later Symbol of the same name does not
//! reuse), is looked up every time.

use std::cell::UnsafeCell;

use magnus::Error;
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::{ID, VALUE};
use rustc_hash::FxHashMap;

/// How many names are kept per encoding: a service's method and field names; more (names made up by a peer only
/// match Symbols that exist, but those may be many) are looked up every time.
const KEPT_PER_ENCODING: usize = 1024;

/// Found names of one encoding, to their static IDs.
type FoundNames = FxHashMap<Box<[u8]>, ID>;

/// Found names, per encoding (ASCII-8BIT, UTF-8, US-ASCII).
struct Found(UnsafeCell<[Option<FoundNames>; 3]>);

// SAFETY: used only by Ruby threads holding the GVL, and no reference into the cell is held across a call into
// Ruby (the lookups below copy the ID out before rb_check_id_cstr runs).
unsafe impl Sync for Found {}

static FOUND: Found = Found(UnsafeCell::new([None, None, None]));

/// The ID of the method name `bytes` in encoding `enc`, if its Symbol exists; 0 if not, and also for a name this
/// cannot tell is validly encoded (only UTF-8, US-ASCII and ASCII-8BIT names are looked up): Ruby's
/// rb_check_id_cstr raises EncodingError for a broken name by inspecting a fake String that lives in its own C frame
/// and has no class, which crashed the VM under GC.stress; the caller's library path raises it from a real String.
pub(crate) fn existing_method_id(bytes: &[u8], enc: *mut rb_sys::rb_encoding) -> Result<ID, Error> {
    // SAFETY: `enc` is one of Ruby's loaded encodings; the index functions only read Ruby's encoding table.
    let (index, utf8, us_ascii, binary) = unsafe {
        (
            rb_sys::rb_enc_to_index(enc),
            rb_sys::rb_utf8_encindex(),
            rb_sys::rb_usascii_encindex(),
            rb_sys::rb_ascii8bit_encindex(),
        )
    };
    let slot = if index == binary {
        0
    } else if index == utf8 && std::str::from_utf8(bytes).is_ok() {
        1
    } else if index == us_ascii && bytes.is_ascii() {
        2
    } else {
        return Ok(0);
    };
    // SAFETY: GVL held (see `Found`); the ID is copied out.
    if let Some(&id) = unsafe { &*FOUND.0.get() }[slot]
        .as_ref()
        .and_then(|m| m.get(bytes))
    {
        return Ok(id);
    }
    // SAFETY: protected; `bytes` stays valid for the call; a validly encoded name makes rb_check_id_cstr only look
    // the name up (no Symbol is made, nothing raised but NoMemoryError).
    let id = magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_check_id_cstr(bytes.as_ptr() as *const _, bytes.len() as _, enc) as VALUE
    })? as ID;
    if id != 0 && static_id(id) {
        // SAFETY: GVL held, and nothing else borrows the cell now (the lookup above has ended).
        let maps = unsafe { &mut *FOUND.0.get() };
        let map = maps[slot].get_or_insert_with(FxHashMap::default);
        if map.len() < KEPT_PER_ENCODING {
            map.insert(bytes.into(), id);
        }
    }
    Ok(id)
}

/// Whether `id`'s Symbol is static (an immediate, never collected): `rb_id2sym` answers the Symbol an ID has.
fn static_id(id: ID) -> bool {
    // SAFETY: `id` was just answered by rb_check_id_cstr, so its Symbol exists; rb_id2sym only looks it up.
    let symbol = unsafe { rb_sys::rb_id2sym(id) };
    get_default().static_sym_p(symbol)
}
