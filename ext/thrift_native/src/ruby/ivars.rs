//! Instance-variable access for the hot paths.
//!
//! `rb_ivar_get` is most of a primitive read: on Ruby 3.1 it takes the VM lock and does a hash lookup (about 17 ns
//! here); from 3.2 on it looks the ivar up through the object's shape (about 60 instructions and three calls). An
//! `IvarSlot` learns where its ivar lives once and then reads or writes the object's ivar array directly, as YJIT's
//! inline caches do. What "where" is depends on the Ruby's object layout (`ivar_layout`, set by build.rs):
//!
//! - `class_index` (3.1, [`class_index`]): an index per exact class (the class's iv_index_tbl only grows).
//! - `shapes` (3.2-3.4, [`shapes`]): an index per object shape, whose id sits in the object's flags.
//! - `shape_fields` (4.0, [`shape_fields`]): the same in the object's fields, with flag bits in the shape id.
//!
//! An object of another class or shape, and every Ruby whose layout is not known here, goes through
//! `rb_ivar_get`/`rb_ivar_set`. An [`IvarStore`] sets a struct field's ivar: from 3.2 on by a shape transition it
//! learned ([`stores`]), on 3.1 at the class's index, which is how a read struct gets its fields. An [`IvarSite`]
//! is a slot for a call site whose receivers' class is not fixed (a client, a socket), re-aimed when it changes.
//! After touching these files run the suite on every Ruby of the matrix (`bin/matrix`).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(ivar_slots)]
use rb_sys::stable_api::{get_default, StableApiDefinition};
use rb_sys::{ID, VALUE};

use crate::ruby::rb;

#[cfg(ivar_layout = "class_index")]
mod class_index;
#[cfg(ivar_layout = "shape_fields")]
mod shape_fields;
#[cfg(any(ivar_layout = "shapes", ivar_layout = "shape_fields"))]
mod shape_id;
#[cfg(any(ivar_layout = "shapes", ivar_layout = "shape_fields"))]
mod shapes;
#[cfg(any(ivar_layout = "shapes", ivar_layout = "shape_fields"))]
mod stores;

#[cfg(ivar_layout = "shape_fields")]
pub use shape_fields::verify_layout;

/// No layout to verify at load time: `shapes` checks the shape id's place the first time it learns.
#[cfg(not(ivar_layout = "shape_fields"))]
pub fn verify_layout(_ruby: &magnus::Ruby) {}

/// How the hot paths reach ivars on this Ruby, for the specs and the benchmarks' notes (`ThriftNative.ivar_access`,
/// private): the layout's name, or "rb_ivar_get" where none is known or libruby's was found to differ from it.
pub fn access() -> &'static str {
    #[cfg(ivar_layout = "class_index")]
    return "class_index";
    #[cfg(any(ivar_layout = "shapes", ivar_layout = "shape_fields"))]
    return shapes::access();
    #[cfg(not(ivar_slots))]
    "rb_ivar_get"
}

const UNKNOWN: u32 = u32::MAX;
/// `shaped` before anything is learned: no shape id is u32::MAX (Ruby's INVALID_SHAPE_ID).
const UNLEARNED: u64 = u64::MAX;
/// `shaped`'s lower half for a shape that has no such ivar.
#[cfg_attr(
    not(any(ivar_layout = "shapes", ivar_layout = "shape_fields")),
    allow(dead_code)
)]
const ABSENT: u64 = 0xffff_ffff;

#[derive(Debug)]
pub struct IvarSlot {
    class: AtomicUsize,
    id: AtomicUsize,
    /// `class_index`: the ivar's index in instances of `class`, or UNKNOWN.
    #[cfg_attr(not(ivar_layout = "class_index"), allow(dead_code))]
    index: AtomicU32,
    /// `shapes`, `shape_fields`: the shape id last learned (upper 32 bits) and the ivar's index in it (ABSENT: the
    /// shape has no such ivar), or UNLEARNED.
    #[cfg_attr(ivar_layout = "class_index", allow(dead_code))]
    shaped: AtomicU64,
    /// `class_index`: how often a nil taught nothing (an unset ivar reads as nil); it stops trying after a few.
    #[cfg_attr(not(ivar_layout = "class_index"), allow(dead_code))]
    nil_misses: AtomicU32,
}

impl IvarSlot {
    pub const fn new() -> Self {
        IvarSlot {
            class: AtomicUsize::new(0),
            id: AtomicUsize::new(0),
            index: AtomicU32::new(UNKNOWN),
            shaped: AtomicU64::new(UNLEARNED),
            nil_misses: AtomicU32::new(0),
        }
    }

    /// Binds the slot to `@name` of instances of exactly `class` (a pinned class).
    pub fn configure(&self, class: VALUE, id: ID) {
        self.class.store(class as usize, Ordering::Relaxed);
        self.id.store(id as usize, Ordering::Relaxed);
        self.index.store(UNKNOWN, Ordering::Relaxed);
        self.shaped.store(UNLEARNED, Ordering::Relaxed);
        self.nil_misses.store(0, Ordering::Relaxed);
    }

    #[inline(always)]
    fn id(&self) -> ID {
        self.id.load(Ordering::Relaxed) as ID
    }

    /// The ivar's value (nil when unset), as `rb_ivar_get`.
    #[inline(always)]
    pub fn get(&self, obj: VALUE) -> VALUE {
        #[cfg(ivar_slots)]
        if let Some(v) = self.read_slot(obj) {
            return v;
        }
        let v = rb::ivar_get(obj, self.id());
        #[cfg(ivar_slots)]
        self.learn(obj, v);
        v
    }

    /// Stores an immediate value (a Fixnum) into an object known not to be frozen.
    #[inline(always)]
    pub fn set_immediate_unfrozen(&self, obj: VALUE, v: VALUE) {
        debug_assert!(rb::is_special_const(v));
        #[cfg(ivar_slots)]
        if self.write_slot(obj, v) {
            return;
        }
        rb::ivar_set_unfrozen(obj, self.id(), v);
    }

    /// Sets the ivar: through the slot on an unfrozen object (with the value's write barrier, as RB_OBJ_WRITE),
    /// else as Ruby does (FrozenError for a frozen object).
    #[inline(always)]
    pub fn set(&self, obj: VALUE, v: VALUE) -> Result<(), magnus::Error> {
        if rb::is_frozen(obj) {
            return rb::ivar_set(obj, self.id(), v);
        }
        self.set_unfrozen(obj, v);
        Ok(())
    }

    /// Sets the ivar of an object known not to be frozen, through the slot where it can.
    #[inline(always)]
    pub fn set_unfrozen(&self, obj: VALUE, v: VALUE) {
        debug_assert!(!rb::is_frozen(obj));
        #[cfg(ivar_slots)]
        if self.write_slot(obj, v) {
            return;
        }
        rb::ivar_set_unfrozen(obj, self.id(), v);
        // 3.1 learns from any value it sees; a shape learned here would be the one the set may just have left.
        #[cfg(ivar_layout = "class_index")]
        self.learn(obj, v);
    }
}

/// An ivar read or written at one call site whose receivers are of whatever class the caller has (a generated
/// client, either socket class): an [`IvarSlot`] aimed at the class (3.1) or the ivar (3.2 on) of the receiver last
/// seen, and re-aimed when that changes. On 3.1 the class it is aimed at is kept alive (a GC root) while aimed: a
/// class freed and another made at its address must not inherit the index. Sites are statics.
#[derive(Debug)]
pub struct IvarSite {
    slot: IvarSlot,
    #[cfg_attr(not(ivar_layout = "class_index"), allow(dead_code))]
    rooted: std::sync::atomic::AtomicBool,
}

impl IvarSite {
    pub const fn new() -> Self {
        IvarSite {
            slot: IvarSlot::new(),
            rooted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `obj.@id` (nil when unset), as `rb_ivar_get`.
    #[inline(always)]
    pub fn get(&'static self, obj: VALUE, id: ID) -> VALUE {
        self.aim(obj, id);
        self.slot.get(obj)
    }

    /// `obj.@id = v`, as `rb_ivar_set` (FrozenError for a frozen object).
    #[inline(always)]
    pub fn set(&'static self, obj: VALUE, id: ID, v: VALUE) -> Result<(), magnus::Error> {
        self.aim(obj, id);
        self.slot.set(obj, v)
    }

    #[inline(always)]
    fn aim(&'static self, obj: VALUE, id: ID) {
        #[cfg(ivar_layout = "class_index")]
        if self.slot.id() != id
            || rb::heap_class(obj)
                .is_some_and(|c| c != self.slot.class.load(Ordering::Relaxed) as VALUE)
        {
            self.re_aim(obj, id);
        }
        #[cfg(any(ivar_layout = "shapes", ivar_layout = "shape_fields"))]
        if self.slot.id() != id {
            let _ = obj;
            self.slot.configure(0, id);
        }
        #[cfg(not(ivar_slots))]
        let _ = (obj, id);
    }
}

/// Sets `@name` on instances of one class, as `rb_ivar_set`, where `rb_ivar_set` is most of the cost of filling a
/// struct just read (300 instructions an ivar on 4.0, 500 on 3.1 with its VM lock): from Ruby 3.2 on by a learned
/// shape transition ([`stores`]), on 3.1 at the class's index ([`class_index`]). Other layouts, and objects the
/// store has not learned, go through `rb_ivar_set`.
#[derive(Debug)]
#[cfg_attr(not(ivar_slots), allow(dead_code))]
pub struct IvarStore {
    id: ID,
    /// The class the transition or index was learned on (RBasic's klass).
    class: AtomicUsize,
    /// The shape before (upper 32 bits) and after, or UNLEARNED.
    #[cfg_attr(ivar_layout = "class_index", allow(dead_code))]
    shapes: AtomicU64,
    /// The ivar's index in the shape after, or in the class.
    index: AtomicU32,
}

impl IvarStore {
    pub fn new(id: ID) -> Self {
        IvarStore {
            id,
            class: AtomicUsize::new(0),
            shapes: AtomicU64::new(UNLEARNED),
            index: AtomicU32::new(UNKNOWN),
        }
    }

    /// `obj.@name = v`, raising FrozenError for a frozen object.
    #[inline(always)]
    pub fn set(&self, obj: VALUE, v: VALUE) -> Result<(), magnus::Error> {
        #[cfg(ivar_slots)]
        {
            if self.store(obj, v) {
                return Ok(());
            }
            if !rb::is_frozen(obj) {
                self.set_and_learn(obj, v);
                return Ok(());
            }
        }
        rb::ivar_set(obj, self.id, v)
    }
}

/// Where a layout finds the ivar in an object.
#[cfg(ivar_slots)]
enum Place {
    /// In the object's array, here.
    Slot(*mut VALUE),
    /// Nowhere: the object's shape has no such ivar (rb_ivar_get answers nil). Not on 3.1.
    #[cfg_attr(ivar_layout = "class_index", allow(dead_code))]
    Absent,
    /// Not known for this object: ask rb_ivar_get.
    Unknown,
}

/// The direct accesses, where a layout-specific `place` (where the ivar is in this object, if known) exists.
#[cfg(ivar_slots)]
impl IvarSlot {
    #[inline(always)]
    fn read_slot(&self, obj: VALUE) -> Option<VALUE> {
        match self.place(obj) {
            // SAFETY: `place` gives a pointer into obj's live ivar array.
            Place::Slot(p) => Some(unsafe { *p }),
            Place::Absent => Some(rb::QNIL),
            Place::Unknown => None,
        }
    }

    /// The value written with its write barrier, as RB_OBJ_WRITE (none for an immediate: it is no heap reference
    /// the GC must learn about). An absent ivar is added by rb_ivar_set (a new shape).
    #[inline(always)]
    fn write_slot(&self, obj: VALUE, v: VALUE) -> bool {
        match self.place_to_write(obj) {
            Place::Slot(p) => {
                // SAFETY: `p` points into obj's ivar array and obj is not frozen (both callers checked).
                unsafe { get_default().rb_obj_write(obj, p, v) };
                true
            }
            Place::Absent | Place::Unknown => false,
        }
    }
}

/// The one slot among `len` ivars at `ptr` holding exactly `v`, if exactly one does: ambiguous values teach nothing.
///
/// # Safety
/// `ptr` must point to at least `len` readable VALUEs.
#[cfg(ivar_layout = "class_index")]
unsafe fn unique_slot(ptr: *const VALUE, len: usize, v: VALUE) -> Option<usize> {
    let mut found = None;
    for i in 0..len {
        // SAFETY: `i` is below `len`.
        if unsafe { *ptr.add(i) } == v {
            if found.is_some() {
                return None;
            }
            found = Some(i);
        }
    }
    found
}
