//! The fast paths' one guard. A fast path does natively what a class's Ruby methods would do only while those methods
//! are the ones it reproduces; the file that takes the fast path owns its [`Guard`] and registers here the classes it
//! relies on ([`Guard::watch`]). lib/thrift_native.rb asks for those classes ([`watched_classes`]), hooks each one's
//! method changes (`method_added`, `method_removed`, `method_undefined`, a `prepend` or `include`; singleton methods too where
//! asked) and reports every change to [`method_changed`], which trips the guards that watch it: from then on their fast
//! paths call the Ruby methods.
//!
//! [`method_changes`] counts every change reported, so that a check made per class (which of its methods are still the
//! library's) can tell when to look again.
//!
//! [`Originals`] keeps a class's own Ruby methods from before ours replaced them, for the native methods to call
//! where they do not apply (a subclass, a monkey patch, odd state).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use magnus::{Error, RArray, Ruby};
use rb_sys::VALUE;

use super::names::{BIND_CALL, INSTANCE_METHOD, METHOD_DEFINED_P, PRIVATE_METHOD_DEFINED_P};
use super::rb;

/// True while none of the methods a fast path relies on has changed.
pub struct Guard {
    intact: AtomicBool,
}

/// Which changes to a watched class trip its guard.
#[derive(Clone, Copy)]
pub enum Watch {
    /// A change to one of these methods.
    Methods(&'static [&'static str]),
    /// A change to any of its methods.
    Every,
    /// A change to any of its methods or of its singleton methods (a mock of `Zlib::Inflate.new`).
    EveryWithSingleton,
}

struct Watched {
    /// The class, pinned at load time.
    class: usize,
    guard: &'static Guard,
    watch: Watch,
}

/// Filled while the extension loads, read when Ruby code changes a method.
static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

/// How many method changes were reported (of any hooked class, any name).
static CHANGES: AtomicU64 = AtomicU64::new(0);

impl Guard {
    pub const fn new() -> Self {
        Guard {
            intact: AtomicBool::new(true),
        }
    }

    #[inline(always)]
    pub fn intact(&self) -> bool {
        self.intact.load(Ordering::Relaxed)
    }

    /// Trips the guard for good: what its fast path relies on was not found as expected at load time.
    pub fn trip(&self) {
        self.intact.store(false, Ordering::Relaxed);
    }

    /// Registers `class` (a pinned class) as relied on by this guard.
    pub fn watch(&'static self, class: VALUE, watch: Watch) {
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        watched.push(Watched {
            class: class as usize,
            guard: self,
            watch,
        });
    }
}

/// Ruby code defined, removed or prepended over the method `name` of `class` (or a singleton method of it): the
/// guards watching that change are tripped. lib/thrift_native.rb's hooks call it, for every class they watch and
/// the subclasses of those (which no guard watches: the fast paths only take exact instances).
pub fn method_changed(class: VALUE, name: &str) {
    CHANGES.fetch_add(1, Ordering::Relaxed);
    let watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    for w in watched.iter().filter(|w| w.class == class as usize) {
        let trips = match w.watch {
            Watch::Methods(names) => names.contains(&name),
            Watch::Every | Watch::EveryWithSingleton => true,
        };
        if trips {
            w.guard.intact.store(false, Ordering::Relaxed);
        }
    }
}

/// How many method changes lib/thrift_native.rb's hooks have reported so far: a per-class check made at one count
/// holds until the count moves.
#[inline(always)]
pub fn method_changes() -> u64 {
    CHANGES.load(Ordering::Relaxed)
}

/// `[[class, singleton_methods_too], ...]`: the classes lib/thrift_native.rb hooks, each once.
pub fn watched_classes(ruby: &Ruby) -> Result<RArray, Error> {
    // Read under the lock, the Array made after it (an allocation may raise, which must not skip the unlock).
    let mut classes: Vec<(usize, bool)> = Vec::new();
    for w in WATCHED.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let singleton = matches!(w.watch, Watch::EveryWithSingleton);
        match classes.iter_mut().find(|(c, _)| *c == w.class) {
            Some((_, s)) => *s |= singleton,
            None => classes.push((w.class, singleton)),
        }
    }
    let out = ruby.ary_new();
    for (class, singleton) in classes {
        // SAFETY: the class was pinned when it was registered.
        let class = unsafe { rb::value(class as VALUE) };
        out.push((class, singleton))?;
    }
    Ok(out)
}

/// A class's own Ruby methods `names`, as they were before this extension defined its own (UnboundMethods, pinned).
pub struct Originals<const N: usize> {
    names: [&'static str; N],
    methods: [AtomicUsize; N],
}

impl<const N: usize> Originals<N> {
    pub const fn new(names: [&'static str; N]) -> Self {
        Originals {
            names,
            methods: [const { AtomicUsize::new(0) }; N],
        }
    }

    /// Keeps `class`'s methods before ours replace them. Every one of them must exist unless `only_defined`, which
    /// keeps those the class has, public or private (a method a thrift version lacks then gets no native one either).
    pub fn keep(&self, ruby: &Ruby, class: VALUE, only_defined: bool) -> Result<(), Error> {
        for (name, slot) in self.names.iter().zip(&self.methods) {
            let name = magnus::rb_sys::AsRawValue::as_raw(ruby.to_symbol(name));
            if only_defined
                && !rb::truthy(rb::funcall(class, METHOD_DEFINED_P.get(), &[name])?)
                && !rb::truthy(rb::funcall(class, PRIVATE_METHOD_DEFINED_P.get(), &[name])?)
            {
                continue;
            }
            let unbound = rb::funcall(class, INSTANCE_METHOD.get(), &[name])?;
            rb::pin_forever(unbound);
            slot.store(unbound as usize, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether the method `name` was kept.
    pub fn kept(&self, name: &str) -> bool {
        self.position(name)
            .is_some_and(|i| self.methods[i].load(Ordering::Relaxed) != 0)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    /// The kept method `names[i]` called on `this`.
    pub fn call(&self, i: usize, this: VALUE, args: &[VALUE]) -> Result<VALUE, Error> {
        let unbound = self.methods[i].load(Ordering::Relaxed) as VALUE;
        assert!(unbound != 0, "a native method calls only a kept original");
        let mut call = Vec::with_capacity(args.len() + 1);
        call.push(this);
        call.extend_from_slice(args);
        rb::funcall(unbound, BIND_CALL.get(), &call)
    }

    /// The kept method `names[i]` called on `this`, given the block the running native method was called with.
    pub fn call_with_block(&self, i: usize, this: VALUE, args: &[VALUE]) -> Result<VALUE, Error> {
        // SAFETY: rb_block_given_p only reads the running frame.
        if unsafe { rb_sys::rb_block_given_p() } == 0 {
            return self.call(i, this, args);
        }
        let unbound = self.methods[i].load(Ordering::Relaxed) as VALUE;
        assert!(unbound != 0, "a native method calls only a kept original");
        let mut call = Vec::with_capacity(args.len() + 1);
        call.push(this);
        call.extend_from_slice(args);
        // SAFETY: protected; `call`'s VALUEs (the receiver and the arguments of the running native method, which its
        // frame holds) and the block's Proc (on this stack) stay alive for the whole call.
        magnus::rb_sys::protect(|| unsafe {
            let block = rb_sys::rb_block_proc();
            rb_sys::rb_funcall_with_block(
                unbound,
                BIND_CALL.get(),
                call.len() as _,
                call.as_ptr(),
                block,
            )
        })
    }

    /// The kept method `name` called on `this`.
    pub fn call_named(&self, name: &str, this: VALUE, args: &[VALUE]) -> Result<VALUE, Error> {
        let i = self
            .position(name)
            .expect("a native method calls an original of its own name");
        self.call(i, this, args)
    }
}
