//! `Thrift::HTTPClientTransport`: the response it holds after `flush` (`@inbuf`, a StringIO) read in place, and its
//! request buffer (`@outbuf`, a BINARY String) appended to in place, by the protocols and the struct codec. Its
//! methods stay the library's: `read` (`@inbuf.read`, with master's END_OF_FILE naming the HTTP status), `write`
//! (`@outbuf << bytes`), `flush` (the POST). A read the response cannot answer calls them, so every error is
//! theirs.
//!
//! In place only for an exact instance while neither its class's methods nor the BaseTransport methods it reads
//! with (`read_all`, `read_byte`, `read_into_buffer`) have been redefined.

use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::names::{IVAR_INBUF, IVAR_OUTBUF};
use crate::ruby::rb;
use crate::thrift::{bytes, thrift};

static GUARD: Guard = Guard::new();

/// True when `trans` is exactly an HTTPClientTransport whose methods are the library's.
#[inline(always)]
fn owns(trans: VALUE) -> bool {
    thrift()
        .http_client_transport
        .is_some_and(|class| rb::is_exact_instance(trans, class))
        && GUARD.intact()
}

/// The response's StringIO (`@inbuf`; nil before the first `flush`), for reading in place.
#[inline(always)]
pub fn read_io(trans: VALUE) -> Option<VALUE> {
    owns(trans).then(|| rb::ivar_get(trans, IVAR_INBUF.get()))
}

/// The request buffer (`@outbuf`), when `write` would append to it as it is: a BINARY String, not frozen.
#[inline(always)]
pub fn write_buffer(trans: VALUE) -> Option<VALUE> {
    if !owns(trans) {
        return None;
    }
    let out = rb::ivar_get(trans, IVAR_OUTBUF.get());
    (bytes::is_binary_string(out) && !rb::is_frozen(out)).then_some(out)
}

pub fn init() {
    let t = thrift();
    let Some(class) = t.http_client_transport else {
        return;
    };
    GUARD.watch(class, Watch::Every);
    GUARD.watch(t.base_transport, Watch::Methods(super::BASE_READS));
}
