//! Field plans: each struct or union class's `FIELDS` compiled once into the core codec's definition (ids, wire
//! types, binary flags, element types) and what the Ruby side keeps with it (ivar IDs, names, defaults), so that
//! reading and writing a struct does no Hash lookups.
//!
//! Plans are built on first use, kept for the life of the process (there is one per class, and a class's FIELDS
//! hardly ever changes), and rebuilt when the class's `FIELDS` constant is no longer the object the plan was built
//! from. Every Ruby value a plan holds is marked (and so pinned) by one registry object.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue};
use magnus::{Error, RHash, Ruby, Value};
use rb_sys::{ID, VALUE};
use rustc_hash::FxHashMap;

use thrift_native_core::codec::{FieldDef, Kind, Scalar, StructDef, TypeDesc};
use thrift_native_core::ttype;

use crate::ruby::ivars::{IvarSlot, IvarStore};
use crate::ruby::names::FIELDS;
use crate::ruby::rb;
use crate::struct_codec::owners::{Found, Owners};
use crate::thrift::thrift;

/// A declared type; `Kind::Struct` holds the struct or union class (its own plan is looked up when used).
pub type TypeInfo = TypeDesc<VALUE>;
pub type FieldPlan = FieldDef<VALUE, RubyField>;
pub type StructPlan = StructDef<VALUE, RubyField>;

/// What the Ruby side keeps with each field, besides its id and type.
#[derive(Debug)]
pub struct RubyField {
    /// The FIELDS key (an Integer), as passed to `write_field_begin` on the dispatch path.
    pub id_value: VALUE,
    /// The `:name` String, as passed to `write_field_begin` on the dispatch path.
    pub name: VALUE,
    /// `@name`.
    pub ivar: ID,
    /// Sets `@name` on instances of the plan's class (a read's fields).
    pub store: IvarStore,
    /// Reads `@name` from instances of the plan's class (a write's fields).
    pub load: IvarSlot,
    /// `:name` as a Symbol (a union's `@setfield`).
    pub symbol: VALUE,
    /// `:default`, or nil.
    pub default: VALUE,
}

/// The keys of a class's defaults Hash (`@fields_with_default_values`, Strings) in the order the native `initialize`
/// last walked them, each with the index of the field it names: a key found at its place costs one comparison
/// instead of a match of its bytes. Marked with the plan (a key the Hash drops stays alive until the next walk
/// replaces the list, so that a new String at a freed key's address cannot pass for it).
#[derive(Debug, Default)]
pub struct DefaultKeys(UnsafeCell<Vec<(VALUE, usize)>>);

// SAFETY: read and replaced only on a Ruby thread holding the GVL, never across a call into Ruby (see `with`).
unsafe impl Sync for DefaultKeys {}

impl DefaultKeys {
    /// Runs `f` on the list.
    ///
    /// # Safety
    /// The GVL must be held and `f` must not call Ruby code or allocate Ruby objects: nothing else (another call, the
    /// GC's marking) may touch the list meanwhile.
    pub unsafe fn with<R>(&self, f: impl FnOnce(&mut Vec<(VALUE, usize)>) -> R) -> R {
        // SAFETY: the caller's promise: no other borrow of the cell exists while `f` runs.
        f(unsafe { &mut *self.0.get() })
    }
}

#[derive(Debug)]
pub struct ClassPlan {
    pub class: VALUE,
    /// The FIELDS Hash this plan was built from.
    pub fields_hash: VALUE,
    /// Which of the class's methods are still the library's (asked again after a method changes).
    pub owners: Owners,
    /// The keys of the defaults Hash as the native `initialize` last walked it.
    pub default_keys: DefaultKeys,
    /// True when some field has a non-nil default.
    pub has_defaults: bool,
    /// The fields (in FIELDS order, the order defaults are applied in) as the core's codec reads them.
    pub def: StructPlan,
    /// The instance the RPC client writes call arguments from (struct_codec/calls.rs, `ReusedArgs`).
    pub args_instance: ArgsInstance,
}

/// An instance of a plan's class that the RPC client fills with a call's arguments, writes and empties again, where
/// a new instance would be made, filled and written the same way without Ruby code seeing it: made at the first
/// such call, held (and marked) by the plan, its fields nil between calls.
#[derive(Debug, Default)]
pub struct ArgsInstance {
    pub obj: AtomicUsize,
    /// Taken by a call in progress (another, reached from Ruby code that call runs, makes a new instance).
    pub busy: AtomicBool,
}

impl ClassPlan {
    /// Which of the class's methods are still the library's.
    #[inline]
    pub fn owners_now(&self) -> Result<Found, Error> {
        let names = || self.def.fields().iter().map(|f| f.extra.name).collect();
        self.owners.of(self.class, self.def.is_union(), names)
    }

    fn mark(&self) {
        let mark = |v: VALUE| {
            if !rb::is_special_const(v) {
                // SAFETY: called from a GC mark function with a live VALUE held by this plan.
                unsafe { rb_sys::rb_gc_mark(v) }
            }
        };
        mark(self.class);
        mark(self.fields_hash);
        mark(self.args_instance.obj.load(Ordering::Relaxed) as VALUE);
        // SAFETY: marking runs with the GVL held, while no native initialize is changing the keys.
        for &(key, _) in unsafe { &*self.default_keys.0.get() }.iter() {
            mark(key);
        }
        for f in self.def.fields() {
            let e = &f.extra;
            for v in [e.id_value, e.name, e.symbol, e.default] {
                mark(v);
            }
            mark_type(&f.ty, &mark);
        }
    }
}

fn mark_type(t: &TypeInfo, mark: &dyn Fn(VALUE)) {
    match &t.kind {
        Kind::Struct(class) => mark(*class),
        Kind::List(element) | Kind::Set(element) => {
            if let Some(e) = element {
                mark_type(e, mark)
            }
        }
        Kind::Map(key, value) => {
            for t in [key, value].into_iter().flatten() {
                mark_type(t, mark)
            }
        }
        Kind::Scalar(_) | Kind::Unknown => {}
    }
}

/// Plans by class. Only touched while holding the GVL, never across a call into Ruby. Looked up several times per
/// RPC call (each struct made, read or written): keyed by the class VALUE, a pointer no one chooses, with a fast
/// non-cryptographic hash.
struct Registry {
    by_class: UnsafeCell<FxHashMap<VALUE, &'static ClassPlan>>,
    all: UnsafeCell<Vec<&'static ClassPlan>>,
}

// SAFETY: every access happens on a Ruby thread holding the GVL, and no reference into the cells is held across
// a call that could run Ruby code (or another thread).
unsafe impl Sync for Registry {}

static REGISTRY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(|| Registry {
    by_class: UnsafeCell::new(FxHashMap::default()),
    all: UnsafeCell::new(Vec::new()),
});

/// Marks every value of every plan; called by the pinned registry object's mark function.
pub fn mark_all() {
    // SAFETY: GC marking runs with the GVL held and no plan is being registered meanwhile (registering does not
    // allocate Ruby objects).
    for plan in unsafe { &*REGISTRY.all.get() }.iter() {
        plan.mark();
    }
}

/// The FIELDS constant of `class` (as `rb_const_get(klass, :FIELDS)`: inherited constants count).
pub fn fields_of(class: VALUE) -> Result<VALUE, Error> {
    let id = FIELDS.get();
    // SAFETY: protected; rb_const_get raises NameError when FIELDS is missing.
    protect(|| unsafe { rb_sys::rb_const_get(class, id) })
}

/// The plan for instances of `class`, built or rebuilt as needed.
pub fn plan_for(ruby: &Ruby, class: VALUE) -> Result<&'static ClassPlan, Error> {
    let fields = fields_of(class)?;
    // SAFETY: GVL held; the map is not borrowed across Ruby calls (the reference is copied out).
    if let Some(plan) = unsafe { &*REGISTRY.by_class.get() }.get(&class).copied() {
        if plan.fields_hash == fields {
            return Ok(plan);
        }
    }
    let plan: &'static ClassPlan = Box::leak(Box::new(build(ruby, class, fields)?));
    // SAFETY: GVL held; building (which calls Ruby) is over, nothing else borrows the cells now.
    unsafe {
        (*REGISTRY.all.get()).push(plan);
        (*REGISTRY.by_class.get()).insert(class, plan);
    }
    Ok(plan)
}

fn sym(ruby: &Ruby, name: &str) -> Value {
    ruby.to_symbol(name).as_value()
}

fn build(ruby: &Ruby, class: VALUE, fields: VALUE) -> Result<ClassPlan, Error> {
    let t = thrift();
    // SAFETY: `fields` is the FIELDS constant's value, held on this stack.
    let hash = RHash::try_convert(unsafe { rb::value(fields) })?;
    let mut plans = Vec::new();
    let mut has_defaults = false;
    hash.foreach(|key: Value, info: Value| {
        let info_hash = RHash::try_convert(info)?;
        let id = i64::try_convert(key)?;
        let name: Value = info_hash.aref(sym(ruby, "name"))?;
        let name_str = magnus::RString::try_convert(name)?.to_string()?;
        let default: Value = info_hash.aref(sym(ruby, "default"))?;
        has_defaults |= !default.is_nil();
        let symbol = ruby.to_symbol(&name_str);
        let ivar = rb::intern(&format!("@{name_str}"));
        let load = IvarSlot::new();
        load.configure(class, ivar);
        plans.push(FieldDef {
            id,
            ty: type_info(ruby, info_hash)?,
            extra: RubyField {
                id_value: key.as_raw(),
                name: name.as_raw(),
                ivar,
                store: IvarStore::new(ivar),
                load,
                symbol: symbol.as_raw(),
                default: default.as_raw(),
            },
        });
        Ok(magnus::r_hash::ForEach::Continue)
    })?;

    // SAFETY: `class` and Thrift::Union are live classes (the caller's argument, a pinned constant).
    let (class_value, union) = unsafe { (rb::value(class), rb::value(t.union)) };
    let is_union: bool = class_value
        .funcall("<=", (union,))
        .map(|v: Option<bool>| v == Some(true))?;
    Ok(ClassPlan {
        class,
        fields_hash: fields,
        owners: Owners::new(),
        default_keys: DefaultKeys::default(),
        has_defaults,
        def: StructDef::new(plans, is_union),
        args_instance: ArgsInstance::default(),
    })
}

fn type_info(ruby: &Ruby, info: RHash) -> Result<TypeInfo, Error> {
    let code: i64 = info.aref(sym(ruby, "type"))?;
    let nested = |key: &str| -> Result<Option<Box<TypeInfo>>, Error> {
        let v: Value = info.aref(sym(ruby, key))?;
        if v.is_nil() {
            return Ok(None);
        }
        Ok(Some(Box::new(type_info(ruby, RHash::try_convert(v)?)?)))
    };
    let kind = match u8::try_from(code).unwrap_or(u8::MAX) {
        ttype::BOOL => Kind::Scalar(Scalar::Bool),
        ttype::BYTE => Kind::Scalar(Scalar::Byte),
        ttype::I16 => Kind::Scalar(Scalar::I16),
        ttype::I32 => Kind::Scalar(Scalar::I32),
        ttype::I64 => Kind::Scalar(Scalar::I64),
        ttype::DOUBLE => Kind::Scalar(Scalar::Double),
        ttype::STRING => {
            let binary: Value = info.aref(sym(ruby, "binary"))?;
            if binary.as_raw() == rb::QTRUE {
                Kind::Scalar(Scalar::Binary)
            } else {
                Kind::Scalar(Scalar::String)
            }
        }
        ttype::STRUCT => {
            let class: Value = info.aref(sym(ruby, "class"))?;
            Kind::Struct(class.as_raw())
        }
        ttype::LIST => Kind::List(nested("element")?),
        ttype::SET => Kind::Set(nested("element")?),
        ttype::MAP => Kind::Map(nested("key")?, nested("value")?),
        _ if code == thrift().uuid_type => Kind::Scalar(Scalar::Uuid),
        _ => Kind::Unknown,
    };
    Ok(TypeDesc { code, kind })
}

/// The object whose mark function keeps every plan's values alive.
#[derive(magnus::TypedData)]
#[magnus(class = "ThriftNative::FieldPlans", free_immediately, mark)]
pub struct PlanMarker;

impl magnus::DataTypeFunctions for PlanMarker {
    fn mark(&self, _marker: &magnus::gc::Marker) {
        mark_all();
    }
}

pub fn init(ruby: &Ruby, namespace: magnus::RModule) -> Result<(), Error> {
    let class = namespace.define_class("FieldPlans", ruby.class_object())?;
    class.undef_default_alloc_func();
    let marker = ruby.obj_wrap(PlanMarker);
    rb::pin_forever(marker.as_raw());
    Ok(())
}
