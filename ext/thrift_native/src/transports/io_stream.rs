//! `Thrift::IOStreamTransport` over StringIOs (a Rack or Thin request body; a servlet's answer): an input that is a
//! StringIO is read in place, an output that is one appended to in place, by the protocols and the struct codec,
//! moving each StringIO's position as the library's `read` (`@input.read(sz)`, through BaseTransport's `read_all`,
//! `read_byte`, `read_into_buffer`) and `write` (`@output.write(bytes)`) would. Other inputs and outputs (an IO, a
//! Rack::Response) get those methods' calls, and so does a read the input cannot answer.
//!
//! In place only for an exact instance while neither its class's methods nor the BaseTransport methods it reads
//! with have been redefined.

use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{IVAR_INPUT, IVAR_OUTPUT};
use crate::ruby::rb;
use crate::thrift::thrift;

static GUARD: Guard = Guard::new();

/// True when `trans` is exactly an IOStreamTransport whose methods are the library's.
#[inline(always)]
fn owns(trans: VALUE) -> bool {
    thrift()
        .io_stream_transport
        .is_some_and(|class| rb::is_exact_instance(trans, class))
        && GUARD.intact()
}

/// The input (`@input`), which the caller takes in place only if it is a StringIO.
#[inline(always)]
pub fn read_io(trans: VALUE) -> Option<VALUE> {
    owns(trans).then(|| rb::ivar_get(trans, IVAR_INPUT.get()))
}

/// The output (`@output`), which the caller takes in place only if it is a StringIO.
#[inline(always)]
pub fn write_io(trans: VALUE) -> Option<VALUE> {
    owns(trans).then(|| rb::ivar_get(trans, IVAR_OUTPUT.get()))
}

pub fn init() {
    let t = thrift();
    let Some(class) = t.io_stream_transport else {
        return;
    };
    GUARD.watch(class, Watch::Every);
    GUARD.watch(t.base_transport, Watch::Methods(super::BASE_READS));
}
