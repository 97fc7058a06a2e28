//! Running a Rust closure with the GVL released, so that other Ruby threads run meanwhile.
//!
//! The closure must not touch any Ruby object: it gets only Rust data. A panic inside it is caught on the far side
//! of the C frame and handed back, never unwound through Ruby. `rb_thread_call_without_gvl` checks pending interrupts
//! (Thread#raise, Thread#kill) before and after running the function, and those raise: the call is therefore made
//! inside `protect`, and the caller gets both what the closure returned (if it ran) and the exception (if any), so it
//! can put its state back before letting the exception go on.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::null_mut;
use std::thread;

use magnus::Error;

struct Call<F, R> {
    func: Option<F>,
    result: Option<thread::Result<R>>,
}

unsafe extern "C" fn trampoline<F, R>(arg: *mut c_void) -> *mut c_void
where
    F: FnOnce() -> R,
{
    // SAFETY: `arg` is the `&mut Call<F, R>` that `without_gvl` passed; it outlives this call and nothing else
    // touches it until rb_thread_call_without_gvl returns.
    let call = unsafe { &mut *(arg as *mut Call<F, R>) };
    if let Some(func) = call.func.take() {
        call.result = Some(panic::catch_unwind(AssertUnwindSafe(func)));
    }
    null_mut()
}

/// What happened to a closure run without the GVL.
pub struct Outcome<R> {
    /// `None` when an interrupt raised before the closure could run; `Some(Err)` when it panicked.
    pub result: Option<thread::Result<R>>,
    /// The exception raised by an interrupt check before or after the closure, to re-raise once state is restored.
    pub raised: Option<Error>,
}

/// Runs `func` without the GVL. Interrupts (Thread#kill, Ctrl-C) wait until it returns: use it for bounded CPU work.
pub fn without_gvl<F, R>(func: F) -> Outcome<R>
where
    F: FnOnce() -> R,
{
    let mut call = Call {
        func: Some(func),
        result: None,
    };
    let arg = &mut call as *mut Call<F, R> as *mut c_void;
    // SAFETY: the trampoline matches the callback signature and gets a pointer to `call`, which lives until after
    // the call; it catches every panic and runs no Ruby API. No unblocking function is given, so Ruby waits for it.
    // `protect` catches an exception raised by the interrupt checks around it, so nothing longjmps over this frame.
    let raised = magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_thread_call_without_gvl(Some(trampoline::<F, R>), arg, None, null_mut());
        rb_sys::special_consts::Qnil as rb_sys::VALUE
    })
    .err();
    Outcome {
        result: call.result,
        raised,
    }
}
