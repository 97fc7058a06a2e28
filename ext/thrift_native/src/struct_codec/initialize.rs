//! `Thrift::Struct#initialize(d = {}, &block)` and `Thrift::Union#initialize(name = nil, value = nil)`, natively.
//!
//! The library's `initialize` (the same in every supported thrift) costs a Hash copy, a String per key (`to_s`,
//! twice more for `name_to_id`) and per ivar (`"@#{name}"`), and a dozen method calls. This one sets the same
//! ivars in the same order (the same object shape), with the same `default.dup rescue default` copies, and yields
//! the same way; it makes no object but those copies.
//!
//! It handles the calls it can decide without running Ruby code, before it changes anything: a Hash (or nothing)
//! whose keys are static Symbols or ASCII Strings naming fields, `Thrift.type_checking` off, a class whose
//! collaborators are the library's (`owners.rs`). Every other call (an unknown key, which raises; another kind of
//! key, whose `to_s` is Ruby code; type checking; a frozen or stubbed receiver; a changed class) is the library's
//! own `initialize`, called with the same arguments and block, so its results and exceptions are the library's.

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Ruby, Value};
use rb_sys::{ruby_value_type, VALUE};

use crate::ruby::guard::{Guard, Originals, Watch};
use crate::ruby::names::{
    FIELDS_WITH_DEFAULT_VALUES, IVAR_FIELDS_WITH_DEFAULT_VALUES, IVAR_NAMES_TO_IDS, IVAR_SETFIELD,
    IVAR_TYPE_CHECKING, IVAR_VALUE, NAME_TO_ID, NEW, TYPE_CHECKING,
};
use crate::ruby::rb;
use crate::struct_codec::defaults::dup_default;
use crate::struct_codec::field_plan::{plan_for, ClassPlan};
use crate::struct_codec::owners::Found;
use crate::thrift::thrift;

/// Tripped when Ruby code changes what the native methods reproduce in the library's modules themselves.
static STRUCT: Guard = Guard::new();
static UNION: Guard = Guard::new();

/// Tripped when Ruby code changes a method of the Thrift module or one of its singleton methods: until then
/// `Thrift.type_checking` is the library's `attr_accessor`, which reads `@type_checking` of the module.
static TYPE_CHECKING_READER: Guard = Guard::new();

static STRUCT_ORIGINAL: Originals<1> = Originals::new(["initialize"]);
static UNION_ORIGINAL: Originals<1> = Originals::new(["initialize"]);

/// The most keys and defaults a call decides natively (a struct with more defaults, or a call with more keys, gets
/// the library's method): their pairs are copied to buffers on the stack, which the GC scans.
pub(super) const MAX_KEYS: usize = 32;
const MAX_DEFAULTS: usize = 64;

/// The index of the field `key` names, when that is decided without Ruby code: a static Symbol, or a String of the
/// String class whose bytes are ASCII (another key's `to_s` or Hash equality is the library's to work out).
pub(super) fn field_of(plan: &ClassPlan, key: VALUE) -> Option<usize> {
    let fields = plan.def.fields();
    if rb::is_special_const(key) {
        // A static Symbol is unique by name, and each field's `symbol` is static.
        return fields.iter().position(|f| f.extra.symbol == key);
    }
    let bytes = ascii_string(key)?;
    fields.iter().position(|f| {
        // A `:name` that only converts to a String (`to_str`) is never matched.
        rb::is_string(f.extra.name) && {
            // SAFETY: a field's `name`, a String held (and marked) by the plan.
            let name = unsafe { rb::str_bytes(f.extra.name) };
            name == bytes
        }
    })
}

/// The bytes of `s` if it is an instance of String (no subclass) in an ASCII-compatible encoding with only ASCII
/// bytes: equal bytes then mean equal Hash keys.
fn ascii_string<'a>(s: VALUE) -> Option<&'a [u8]> {
    if !rb::is_exact_instance(s, rb::string_class()) {
        return None;
    }
    // SAFETY: `s` is a String; rb_enc_str_asciionly_p reads its encoding and bytes.
    if unsafe { rb_sys::rb_enc_str_asciionly_p(s) } == 0 {
        return None;
    }
    // SAFETY: a String the caller holds (a key of a Hash on its stack), not changed while the bytes are compared.
    Some(unsafe { rb::str_bytes(s) })
}

/// The library's defaults Hash (`fields_with_default_values`: the class ivar, made by the library's method on
/// first use), if it is a Hash (no subclass, whose `delete` and `each` are Ruby's to decide).
fn defaults_hash(this: VALUE, class: VALUE) -> Result<Option<VALUE>, Error> {
    let mut hash = rb::ivar_get(class, IVAR_FIELDS_WITH_DEFAULT_VALUES.get());
    if !rb::truthy(hash) {
        hash = rb::funcall(this, FIELDS_WITH_DEFAULT_VALUES.get(), &[])?;
    }
    Ok(rb::is_exact_instance(hash, rb::hash_class()).then_some(hash))
}

/// `Thrift.type_checking`.
pub(super) fn type_checking() -> Result<bool, Error> {
    let module = thrift().module;
    if TYPE_CHECKING_READER.intact() {
        return Ok(rb::truthy(rb::ivar_get(module, IVAR_TYPE_CHECKING.get())));
    }
    Ok(rb::truthy(rb::funcall(module, TYPE_CHECKING.get(), &[])?))
}

/// Whether `class.new` (no arguments, no block) would make an instance with no field set and run no Ruby code: the
/// native `initialize` of a struct class (`found`: its owners now) whose defaults Hash is made already and empty.
pub(crate) fn new_sets_nothing(class: VALUE, plan: &ClassPlan, found: Found) -> bool {
    STRUCT.intact()
        && !plan.def.is_union()
        && found.plain_initialize()
        && found.plain_collaborators()
        && {
            let defaults = rb::ivar_get(class, IVAR_FIELDS_WITH_DEFAULT_VALUES.get());
            rb::is_exact_instance(defaults, rb::hash_class()) && hash_size(defaults) == 0
        }
}

/// `Thrift.type_checking` is off, known without a call (the module's reader is the library's).
pub(crate) fn type_checking_off() -> bool {
    TYPE_CHECKING_READER.intact()
        && !rb::truthy(rb::ivar_get(thrift().module, IVAR_TYPE_CHECKING.get()))
}

pub fn struct_initialize(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    if let Some(done) = struct_fast(ruby, this, args)? {
        return Ok(done);
    }
    let args: Vec<VALUE> = args.iter().map(|a| a.as_raw()).collect();
    STRUCT_ORIGINAL
        .call_with_block(0, this, &args)
        .map(rb::returned)
}

/// The native `Thrift::Struct#initialize`, or None where the library's must run (before anything was changed).
fn struct_fast(ruby: &Ruby, this: VALUE, args: &[Value]) -> Result<Option<Value>, Error> {
    if !STRUCT.intact() || args.len() > 1 {
        return Ok(None);
    }
    let given = args.first().map(|d| d.as_raw());
    if let Some(d) = given {
        if !rb::is_exact_instance(d, rb::hash_class()) {
            return Ok(None);
        }
    }
    // SAFETY: `this` is the receiver, a heap object.
    let class = unsafe { rb_sys::rb_obj_class(this) };
    if rb::heap_class(this) != Some(class) {
        return Ok(None); // a singleton class
    }
    // A FIELDS the plan cannot take is the library's to fail on (or not); a throw or a kill goes on up.
    let plan = match plan_for(ruby, class) {
        Ok(plan) => plan,
        Err(e) if e.is_kind_of(ruby.exception_standard_error()) => return Ok(None),
        Err(e) => return Err(e),
    };
    // SAFETY: rb_block_given_p reads the running frame, this method's.
    let block = unsafe { rb_sys::rb_block_given_p() } != 0;
    struct_planned(this, class, plan, given, block)
}

/// [`struct_fast`] for an instance of `class`, whose plan is `plan`, given the defaults Hash `given` (or none),
/// yielding to the running method's block when `block`.
fn struct_planned(
    this: VALUE,
    class: VALUE,
    plan: &ClassPlan,
    given: Option<VALUE>,
    block: bool,
) -> Result<Option<Value>, Error> {
    if plan.def.is_union() || !plan.owners_now()?.plain_collaborators() {
        return Ok(None);
    }
    let Some(defaults) = defaults_hash(this, class)? else {
        return Ok(None);
    };

    // Decide before changing anything: every key names a field (then type checking must be off), every default's
    // name too. The library copies the defaults Hash before it walks it; the copy here is `defaulted`.
    let fields = plan.def.fields();
    let mut keys = [(rb::QNIL, rb::QNIL); MAX_KEYS];
    let mut named = [0usize; MAX_KEYS];
    // SAFETY: `given` is a Hash (checked above).
    let Some(n_keys) = given.map_or(Some(0), |d| unsafe { rb::hash_pairs(d, &mut keys) }) else {
        return Ok(None);
    };
    for (slot, &(key, _)) in named.iter_mut().zip(&keys[..n_keys]) {
        let Some(i) = field_of(plan, key) else {
            return Ok(None);
        };
        *slot = i;
    }
    if n_keys > 0 {
        if type_checking()? {
            return Ok(None);
        }
        // The library's lookup of the keys leaves its cache on the class (`@names_to_ids`): made the same way, once.
        if !rb::truthy(rb::ivar_get(class, IVAR_NAMES_TO_IDS.get())) {
            let name = fields[named[0]].extra.name;
            rb::funcall(this, NAME_TO_ID.get(), &[name])?;
        }
    }
    let mut defaulted = [(rb::QNIL, rb::QNIL); MAX_DEFAULTS];
    let mut default_fields = [0usize; MAX_DEFAULTS];
    // SAFETY: `defaults` is a Hash (checked by defaults_hash).
    let Some(n_defaults) = (unsafe { rb::hash_pairs(defaults, &mut defaulted) }) else {
        return Ok(None);
    };
    let defaulted = &defaulted[..n_defaults];
    if !default_fields_of(plan, defaulted, &mut default_fields) {
        return Ok(None);
    }

    // Checked after the last Ruby call above (`struct_fields`, `type_checking` may be anyone's code).
    if rb::is_frozen(this) {
        return Ok(None);
    }
    for (&(_, value), &i) in keys[..n_keys].iter().zip(&named) {
        rb::ivar_set_unfrozen(this, fields[i].extra.ivar, value);
    }
    let named = &named[..n_keys];
    for (&(_, default), &i) in defaulted.iter().zip(&default_fields) {
        if !named.contains(&i) {
            let copy = dup_default(default)?;
            rb::ivar_set(this, fields[i].extra.ivar, copy)?;
        }
    }
    // `yield self if block`: the block's result is the method's.
    if block {
        // SAFETY: protected; rb_yield calls the block given to the running native method.
        let result = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_yield(this) })?;
        return Ok(Some(rb::returned(result)));
    }
    Ok(Some(rb::returned(rb::QNIL)))
}

/// The field each default's name names, into `out`; false if one names none. A name found where the last walk
/// found it costs a comparison; otherwise the list is made again.
fn default_fields_of(plan: &ClassPlan, defaulted: &[(VALUE, VALUE)], out: &mut [usize]) -> bool {
    // SAFETY: the closure compares VALUEs and bytes and reads encodings: no Ruby code, no allocation of Ruby objects.
    unsafe {
        plan.default_keys.with(|known| {
            let same = known.len() == defaulted.len()
                && known
                    .iter()
                    .zip(defaulted)
                    .all(|(&(k, _), &(name, _))| k == name);
            if !same {
                known.clear();
                for &(name, _) in defaulted {
                    if ascii_string(name).is_none() {
                        known.clear();
                        return false;
                    }
                    let Some(i) = field_of(plan, name) else {
                        known.clear();
                        return false;
                    };
                    known.push((name, i));
                }
            }
            for (slot, &(_, i)) in out.iter_mut().zip(known.iter()) {
                *slot = i;
            }
            true
        })
    }
}

fn hash_size(hash: VALUE) -> usize {
    // SAFETY: `hash` is a Hash; rb_hash_size_num reads its count.
    unsafe { rb_sys::rb_hash_size_num(hash) as usize }
}

/// `class.new` with no arguments and no block (what the RPC code's `args_class.new` and `result_klass.new` are),
/// without Ruby's dispatch where `Class#new` would run our `initialize`: `class` (a class with a plan) has no `new`
/// of its own or its ancestors' (its singleton's `new` is Class#new) and keeps the library's `initialize`. The new
/// object, or None (nothing done) where `new` must be called.
pub(crate) fn new_plain(
    ruby: &Ruby,
    class: VALUE,
) -> Result<Option<(VALUE, &'static ClassPlan)>, Error> {
    if rb::builtin_type(class) != Some(ruby_value_type::RUBY_T_CLASS) {
        return Ok(None);
    }
    let Some(meta) = rb::heap_class(class) else {
        return Ok(None);
    };
    // SAFETY: `meta`, the class's singleton, is a live class; rb_method_basic_definition_p only looks `new` up.
    if unsafe { rb_sys::rb_method_basic_definition_p(meta, NEW.get()) } == 0 {
        return Ok(None);
    }
    let plan = match plan_for(ruby, class) {
        Ok(plan) => plan,
        Err(e) if e.is_kind_of(ruby.exception_standard_error()) => return Ok(None),
        Err(e) => return Err(e),
    };
    let union = plan.def.is_union();
    if !(if union {
        UNION.intact()
    } else {
        STRUCT.intact()
    }) || !plan.owners_now()?.plain_initialize()
    {
        return Ok(None);
    }
    // SAFETY: protected; rb_obj_alloc runs the class's allocator (a T_OBJECT's, for a class with a plan).
    let this = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_alloc(class) })?;
    let done = if union {
        union_fast(this, &[])?
    } else {
        struct_planned(this, class, plan, None, false)?
    };
    if done.is_none() {
        let original = if union {
            &UNION_ORIGINAL
        } else {
            &STRUCT_ORIGINAL
        };
        original.call(0, this, &[])?;
    }
    Ok(Some((this, plan)))
}

pub fn union_initialize(rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let this = rb_self.as_raw();
    if let Some(done) = union_fast(this, args)? {
        return Ok(done);
    }
    let args: Vec<VALUE> = args.iter().map(|a| a.as_raw()).collect();
    UNION_ORIGINAL
        .call_with_block(0, this, &args)
        .map(rb::returned)
}

/// The native `Thrift::Union#initialize`: `@setfield`, then `@value`, where the library's checks all pass (it raises
/// for every other case, and type checking calls Ruby code).
fn union_fast(this: VALUE, args: &[Value]) -> Result<Option<Value>, Error> {
    if !UNION.intact() || args.len() > 2 {
        return Ok(None);
    }
    let mut name = args.first().map_or(rb::QNIL, |v| v.as_raw());
    let mut value = args.get(1).map_or(rb::QNIL, |v| v.as_raw());
    // `if name`: false counts as no name.
    if !rb::truthy(name) {
        if !rb::is_nil(value) {
            return Ok(None);
        }
    } else {
        if rb::builtin_type(name) == Some(ruby_value_type::RUBY_T_HASH) {
            if !rb::is_exact_instance(name, rb::hash_class()) || hash_size(name) != 1 {
                return Ok(None);
            }
            // `name.keys.first, name.values.first`
            let mut pair = [(rb::QNIL, rb::QNIL); 1];
            // SAFETY: `name` is a Hash (of one pair).
            if unsafe { rb::hash_pairs(name, &mut pair) } != Some(1) {
                return Ok(None);
            }
            (name, value) = pair[0];
        }
        if rb::is_nil(value) || type_checking()? {
            return Ok(None);
        }
    }
    if rb::is_frozen(this) {
        return Ok(None);
    }
    rb::ivar_set_unfrozen(this, IVAR_SETFIELD.get(), name);
    rb::ivar_set_unfrozen(this, IVAR_VALUE.get(), value);
    // What `@value = value`, the library's last expression, answers.
    Ok(Some(rb::returned(value)))
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let t = thrift();
    STRUCT.watch(
        t.struct_module,
        Watch::Methods(&["initialize", "fields_with_default_values"]),
    );
    STRUCT.watch(t.struct_union, Watch::Methods(&["name_to_id"]));
    UNION.watch(t.union, Watch::Methods(&["initialize"]));
    TYPE_CHECKING_READER.watch(t.module, Watch::EveryWithSingleton);
    STRUCT_ORIGINAL.keep(ruby, t.struct_module, false)?;
    UNION_ORIGINAL.keep(ruby, t.union, false)?;
    Ok(())
}
