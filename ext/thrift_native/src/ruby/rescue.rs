//! Raising and rescuing as Ruby code does, from native code: `raise x` of any object ([`raise_value`]), and the body
//! of a `rescue` clause ([`rescuing`]), whose calls run with `$!` set so that what they raise gets the cause Ruby gives.

use magnus::Error;
use rb_sys::{ID, VALUE};

use super::rb::{funcall, value};

/// The body of a `rescue` of `exception`, run natively: each call made through [`Rescue::call`] runs with `$!` set
/// to the exception (Ruby code in between, a `rescue` of its own, may reset it), so that an exception raised in it
/// gets the rescued one as its cause, as in Ruby.
pub struct Rescue {
    exception: VALUE,
}

impl Rescue {
    /// `recv.method(*args)` inside the rescue clause.
    pub fn call(&self, recv: VALUE, method: ID, args: &[VALUE]) -> Result<VALUE, Error> {
        // SAFETY: rb_set_errinfo sets the running thread's `$!` to an exception object held by the caller.
        unsafe { rb_sys::rb_set_errinfo(self.exception) };
        funcall(recv, method, args)
    }
}

/// Runs `body` as the body of a `rescue` of `exception`; `$!` is what it was before afterwards.
pub fn rescuing<T>(
    exception: VALUE,
    body: impl FnOnce(&Rescue) -> Result<T, Error>,
) -> Result<T, Error> {
    // SAFETY: rb_errinfo reads the running thread's `$!` (an exception or nil).
    let outer = unsafe { rb_sys::rb_errinfo() };
    let result = body(&Rescue { exception });
    // SAFETY: rb_set_errinfo restores `$!` to what it was (an exception or nil), held on this stack.
    unsafe { rb_sys::rb_set_errinfo(outer) };
    result
}

/// `raise x`, as Ruby raises it: an exception object is raised itself; anything else as Kernel#raise answers it
/// (its `exception`, or a TypeError).
pub fn raise_value(x: VALUE) -> Error {
    if let Some(exception) = magnus::Exception::from_value(
        // SAFETY: `x` is a live VALUE on the caller's stack.
        unsafe { value(x) },
    ) {
        return Error::from(exception);
    }
    // SAFETY: rb_mKernel is set when Ruby boots, before any extension loads, and never changes.
    let kernel = unsafe { rb_sys::rb_mKernel };
    match funcall(kernel, crate::ruby::names::RAISE.get(), &[x]) {
        Err(e) => e,
        Ok(_) => unreachable!("Kernel.raise returned"),
    }
}
