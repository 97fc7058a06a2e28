//! Field plans: each struct or union class's `FIELDS` compiled once into what the struct codec needs (ivar IDs,
//! wire types, binary flags, element types, defaults), so that reading and writing a struct does no Hash lookups.
//!
//! Plans are built on first use, kept for the life of the process (there is one per class, and a class's FIELDS
//! hardly ever changes), and rebuilt when the class's `FIELDS` constant is no longer the object the plan was built
//! from. Every Ruby value a plan holds is marked (and so pinned) by one registry object.

use std::cell::UnsafeCell;
use std::collections::HashMap;

use magnus::prelude::*;
use magnus::rb_sys::{protect, AsRawValue, FromRawValue};
use magnus::{Error, RHash, Ruby, Value};
use rb_sys::{ID, VALUE};

use thrift_native_core::ttype;

use crate::rb;
use crate::thrift::thrift;

/// What a field (or container element) holds, from its field info Hash.
#[derive(Debug)]
pub enum TypePlan {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    /// STRING without `binary: true`: UTF-8 text.
    String,
    /// STRING with `binary: true`.
    Binary,
    Uuid,
    /// A struct or union class (from `:class`); its own plan is looked up when used.
    Struct {
        class: VALUE,
    },
    /// `element` is None when the info lacks `:element` (every element is then skipped, as the C accelerator does).
    List {
        element: Option<Box<TypeInfo>>,
    },
    Set {
        element: Option<Box<TypeInfo>>,
    },
    Map {
        key: Option<Box<TypeInfo>>,
        value: Option<Box<TypeInfo>>,
    },
    /// A type code the codec does not know; raises as the C accelerator does when reached.
    Unknown,
}

/// A type and its wire code (`:type`), for comparing with what the wire says.
#[derive(Debug)]
pub struct TypeInfo {
    pub code: i64,
    pub plan: TypePlan,
}

#[derive(Debug)]
pub struct FieldPlan {
    pub id: i64,
    /// The FIELDS key (an Integer), as passed to `write_field_begin` on the dispatch path.
    pub id_value: VALUE,
    /// The `:name` String, as passed to `write_field_begin` on the dispatch path.
    pub name: VALUE,
    /// `@name`.
    pub ivar: ID,
    /// `:name` as a Symbol (a union's `@setfield`).
    pub symbol: VALUE,
    pub info: TypeInfo,
    /// `:default`, or nil.
    pub default: VALUE,
}

#[derive(Debug)]
pub struct ClassPlan {
    pub class: VALUE,
    /// The FIELDS Hash this plan was built from.
    pub fields_hash: VALUE,
    pub is_union: bool,
    /// The class still uses Thrift::Struct's (or Thrift::Union's) own `initialize`, so a nested instance can be
    /// allocated and given its defaults without running Ruby code.
    pub plain_initialize: bool,
    /// In FIELDS order (the order defaults are applied in).
    pub fields: Vec<FieldPlan>,
    /// Indices into `fields`, by ascending field id (the order fields are written in).
    pub sorted: Vec<usize>,
    /// True when some field has a non-nil default.
    pub has_defaults: bool,
}

impl ClassPlan {
    /// The field with wire id `id`.
    #[inline]
    pub fn field(&self, id: i64) -> Option<&FieldPlan> {
        self.sorted
            .binary_search_by(|&i| self.fields[i].id.cmp(&id))
            .ok()
            .map(|pos| &self.fields[self.sorted[pos]])
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
        for f in &self.fields {
            for v in [f.id_value, f.name, f.symbol, f.default] {
                mark(v);
            }
            f.info.mark_with(&mark);
        }
    }
}

impl TypeInfo {
    fn mark_with(&self, mark: &dyn Fn(VALUE)) {
        match &self.plan {
            TypePlan::Struct { class } => mark(*class),
            TypePlan::List { element } | TypePlan::Set { element } => {
                if let Some(e) = element {
                    e.mark_with(mark)
                }
            }
            TypePlan::Map { key, value } => {
                for t in [key, value].into_iter().flatten() {
                    t.mark_with(mark)
                }
            }
            _ => {}
        }
    }
}

/// Plans by class. Only touched while holding the GVL, never across a call into Ruby.
struct Registry {
    by_class: UnsafeCell<HashMap<VALUE, &'static ClassPlan>>,
    all: UnsafeCell<Vec<&'static ClassPlan>>,
}

// SAFETY: every access happens on a Ruby thread holding the GVL, and no reference into the cells is held across
// a call that could run Ruby code (or another thread).
unsafe impl Sync for Registry {}

static REGISTRY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(|| Registry {
    by_class: UnsafeCell::new(HashMap::new()),
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

fn value(v: VALUE) -> Value {
    // SAFETY: the VALUE is live (held by a plan, a constant or the stack).
    unsafe { Value::from_raw(v) }
}

/// The FIELDS constant of `class` (as `rb_const_get(klass, :FIELDS)`: inherited constants count).
pub fn fields_of(class: VALUE) -> Result<VALUE, Error> {
    let id = thrift().fields_id;
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
    let hash = RHash::try_convert(value(fields))?;
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
        plans.push(FieldPlan {
            id,
            id_value: key.as_raw(),
            name: name.as_raw(),
            ivar: rb::intern(&format!("@{name_str}")),
            symbol: symbol.as_raw(),
            info: type_info(ruby, info_hash)?,
            default: default.as_raw(),
        });
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    let mut sorted: Vec<usize> = (0..plans.len()).collect();
    sorted.sort_by_key(|&i| plans[i].id);

    let class_value = value(class);
    let is_union: bool = class_value
        .funcall("<=", (value(t.union),))
        .map(|v: Option<bool>| v == Some(true))?;
    let initialize: Value = class_value.funcall("instance_method", (sym(ruby, "initialize"),))?;
    let owner: Value = initialize.funcall("owner", ())?;
    let plain_owner = if is_union { t.union } else { t.struct_module };
    Ok(ClassPlan {
        class,
        fields_hash: fields,
        is_union,
        plain_initialize: owner.as_raw() == plain_owner,
        fields: plans,
        sorted,
        has_defaults,
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
    let plan = match u8::try_from(code).unwrap_or(u8::MAX) {
        ttype::BOOL => TypePlan::Bool,
        ttype::BYTE => TypePlan::Byte,
        ttype::I16 => TypePlan::I16,
        ttype::I32 => TypePlan::I32,
        ttype::I64 => TypePlan::I64,
        ttype::DOUBLE => TypePlan::Double,
        ttype::STRING => {
            let binary: Value = info.aref(sym(ruby, "binary"))?;
            if binary.as_raw() == rb::QTRUE {
                TypePlan::Binary
            } else {
                TypePlan::String
            }
        }
        ttype::STRUCT => {
            let class: Value = info.aref(sym(ruby, "class"))?;
            TypePlan::Struct {
                class: class.as_raw(),
            }
        }
        ttype::LIST => TypePlan::List {
            element: nested("element")?,
        },
        ttype::SET => TypePlan::Set {
            element: nested("element")?,
        },
        ttype::MAP => TypePlan::Map {
            key: nested("key")?,
            value: nested("value")?,
        },
        _ if code == thrift().uuid_type => TypePlan::Uuid,
        _ => TypePlan::Unknown,
    };
    Ok(TypeInfo { code, plan })
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
