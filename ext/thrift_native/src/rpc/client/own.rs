//! Whether the methods the native client methods call on `self` (`write_message`, `next_seqid!`,
//! `send_message_args`, ...: [`super::SelfCall`]) are, for a client's class, Thrift::Client's, that is ours: then
//! they are run without a call, as `direct.rs` runs the protocols' and transports'.
//!
//! Asked per class (`instance_method(name).owner == Thrift::Client` for each), once per count of method changes:
//! lib/thrift_native.rb hooks every class that includes Thrift::Client (directly, through a module, or by
//! inheritance) as it hooks struct classes, so that a method defined, removed, prepended or included later moves
//! the count. Any change to those methods in Thrift::Client itself trips [`GUARD`]. Objects with a singleton class
//! are never answered here (dispatch finds their singleton methods). The answers are kept for at most
//! [`SLOTS`] classes, which are pinned (a pinned class cannot be moved or freed, so its address names it); a client
//! of any further class is dispatched.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::{self, Guard, Watch};
use crate::ruby::names::{INSTANCE_METHOD, OWNER};
use crate::ruby::rb;

const SLOTS: usize = 8;

struct Slot {
    class: AtomicUsize,
    checked_at: AtomicU64,
    own: AtomicBool,
}

static CHECKS: [Slot; SLOTS] = [const {
    Slot {
        class: AtomicUsize::new(0),
        checked_at: AtomicU64::new(u64::MAX),
        own: AtomicBool::new(false),
    }
}; SLOTS];
static GUARD: Guard = Guard::new();
static CLIENT: AtomicUsize = AtomicUsize::new(0);
/// The names asked of each class: those the loaded version's Thrift::Client defines and the native methods call.
static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// True when the methods the native ones call on `this` are ours (see the top of this file).
pub(super) fn own_methods(this: VALUE) -> bool {
    if !GUARD.intact() {
        return false;
    }
    let Some(class) = rb::heap_class(this) else {
        return false;
    };
    // SAFETY: `this` is a live object; rb_obj_class skips singleton classes and included modules.
    if unsafe { rb_sys::rb_obj_class(this) } != class {
        return false; // a singleton class
    }
    let now = guard::method_changes();
    for slot in &CHECKS {
        match slot.class.load(Ordering::Relaxed) as VALUE {
            0 => return check(slot, class, now).unwrap_or(false),
            c if c == class => {
                if slot.checked_at.load(Ordering::Relaxed) == now {
                    return slot.own.load(Ordering::Relaxed);
                }
                return check(slot, class, now).unwrap_or(false);
            }
            _ => {}
        }
    }
    false
}

/// Asks `class` and keeps the answer in `slot` (taking the slot, and pinning the class, if it is free).
#[cold]
fn check(slot: &Slot, class: VALUE, now: u64) -> Result<bool, Error> {
    let client = CLIENT.load(Ordering::Relaxed) as VALUE;
    let names = NAMES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut own = true;
    for name in names {
        let method = rb::funcall(class, INSTANCE_METHOD.get(), &[rb::symbol(name)])?;
        own &= rb::funcall(method, OWNER.get(), &[])? == client;
    }
    if slot.class.load(Ordering::Relaxed) == 0 {
        rb::pin_forever(class);
        slot.class.store(class as usize, Ordering::Relaxed);
    }
    // A change reported while asking leaves `now` behind the count: the next call asks again.
    slot.own.store(own, Ordering::Relaxed);
    slot.checked_at.store(now, Ordering::Relaxed);
    Ok(own)
}

/// `client` is Thrift::Client (pinned), `names` the methods asked of each class, which the guard watches there.
pub(super) fn init(_ruby: &Ruby, client: VALUE, names: Vec<&'static str>) {
    CLIENT.store(client as usize, Ordering::Relaxed);
    let watched: &'static [&'static str] = Box::leak(names.clone().into_boxed_slice());
    GUARD.watch(client, Watch::Methods(watched));
    *NAMES.lock().unwrap_or_else(|e| e.into_inner()) = names;
}
