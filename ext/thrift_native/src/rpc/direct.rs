//! The calls the RPC code makes on a call's protocol and transport, made without Ruby's dispatch where the method
//! dispatch would run is one of ours: its Rust function is called at once with what dispatch would pass. A call
//! through `rb_funcallv` (a method lookup, a protected frame, the cfunc's frame) costs more than what most of these
//! methods do (`write_message_end` does nothing, `trans` reads an ivar).
//!
//! Only on exact instances (no subclass, no singleton class) of BinaryProtocolAccelerated and CompactProtocol while
//! no method of theirs has changed, nor `trans` in BinaryProtocol or BaseProtocol ([`BINARY`], [`COMPACT`]); and of
//! FramedTransport and BufferedTransport while their native methods are theirs (`layered::flush_owned`). Any other
//! receiver gets the call dispatched, as before. What differs is only what a frame shows: a backtrace raised inside
//! lacks the native method's line, and TracePoint sees no `c_call` for it.

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use super::decorated::Forwarded;
use crate::protocols;
use crate::protocols::shared::JoinedHeader;
use crate::ruby::guard::{Guard, Watch};
use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{FLUSH, IVAR_TRANS, TRANS, WRITE_MESSAGE_BEGIN};
use crate::ruby::rb;
use crate::thrift::thrift;

static BINARY: Guard = Guard::new();
/// `@trans` of one of our protocols.
static TRANS_IVAR: IvarSite = IvarSite::new();
static COMPACT: Guard = Guard::new();

/// The protocol classes whose methods are called here.
#[derive(Clone, Copy)]
enum Ours {
    Binary,
    Compact,
}

#[inline(always)]
fn ours(prot: VALUE) -> Option<Ours> {
    let class = rb::heap_class(prot)?;
    if class == protocols::binary::class() && BINARY.intact() {
        Some(Ours::Binary)
    } else if class == thrift().compact_protocol && COMPACT.intact() {
        Some(Ours::Compact)
    } else {
        None
    }
}

/// `prot.write_message_begin(name, kind, seqid)`.
pub(crate) fn write_message_begin(
    prot: VALUE,
    name: VALUE,
    kind: VALUE,
    seqid: VALUE,
) -> Result<VALUE, Error> {
    let Some(which) = ours(prot) else {
        return rb::funcall(prot, WRITE_MESSAGE_BEGIN.get(), &[name, kind, seqid]);
    };
    let ruby = Ruby::get().expect("called from a Ruby thread");
    // SAFETY: the four are live VALUEs of the caller's frame.
    let [prot, name, kind, seqid] = [prot, name, kind, seqid].map(|v| unsafe { rb::value(v) });
    match which {
        Ours::Binary => protocols::binary::write_message_begin(&ruby, prot, name, kind, seqid),
        Ours::Compact => protocols::compact::write_message_begin(&ruby, prot, name, kind, seqid),
    }?;
    Ok(rb::QNIL)
}

/// `prot.write_message_begin(name, kind, seqid)` for a name given as UTF-8 pieces (MultiplexedProtocol's
/// `"#{service}:#{name}"`), where `prot` is one of ours writing to a plain buffer and `kind` and `seqid` are in
/// range: the header appended without the joined String. None, with nothing written, otherwise.
pub(crate) fn write_joined_message_begin(
    prot: VALUE,
    name: [&[u8]; 3],
    kind: i64,
    seqid: i64,
) -> Option<Result<VALUE, Error>> {
    let which = ours(prot)?;
    let header = JoinedHeader {
        name,
        mtype: u8::try_from(kind).ok()?,
        seqid: i32::try_from(seqid).ok()?,
    };
    let written = match which {
        Ours::Binary => protocols::binary::write_joined_message_begin(prot, &header),
        Ours::Compact => protocols::compact::write_joined_message_begin(prot, &header),
    };
    written.map(|r| r.map(|()| rb::QNIL))
}

/// `prot.write_message_end`, `prot.read_message_end` (ours do nothing and answer nil) or `prot.trans` (the
/// library's reader of `@trans`) without a call, where `prot` is one of ours. None for any other protocol.
#[inline]
pub(crate) fn forwarded(prot: VALUE, method: Forwarded) -> Option<VALUE> {
    ours(prot)?;
    Some(match method {
        Forwarded::WriteMessageEnd | Forwarded::ReadMessageEnd => rb::QNIL,
        Forwarded::Trans => TRANS_IVAR.get(prot, IVAR_TRANS.get()),
    })
}

/// `trans.flush`.
pub(crate) fn flush(trans: VALUE) -> Result<VALUE, Error> {
    match crate::transports::layered::flush_owned(trans) {
        Some(flushed) => flushed,
        None => rb::funcall(trans, FLUSH.get(), &[]),
    }
}

/// Registers the guards; BaseProtocol's `trans` must answer `@trans` (an `attr_reader`, in every supported thrift),
/// else neither protocol is served.
pub(crate) fn init() -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::{Module, RClass, RModule};
    let t = thrift();
    // SAFETY: the Thrift module is pinned at load time.
    let module = RModule::from_value(unsafe { rb::value(t.module) }).expect("Thrift is a module");
    let base: RClass = module.const_get("BaseProtocol")?;
    let base = base.as_raw();
    // `BaseProtocol.allocate` with `@trans` set to a marker: its `trans` must answer the marker.
    // SAFETY: BaseProtocol is a plain Ruby class (its instances are T_OBJECTs); the object lives on this stack.
    let probe = unsafe { rb_sys::rb_obj_alloc(base) };
    let marker = rb::binary_string(b"trans");
    rb::ivar_set(probe, IVAR_TRANS.get(), marker)?;
    if rb::funcall(probe, TRANS.get(), &[])? != marker {
        BINARY.trip();
        COMPACT.trip();
        return Ok(());
    }
    rb::pin_forever(base);
    for (guard, class) in [
        (&BINARY, protocols::binary::class()),
        (&COMPACT, t.compact_protocol),
    ] {
        guard.watch(class, Watch::Every);
        guard.watch(t.binary_protocol, Watch::Methods(&["trans"]));
        guard.watch(base, Watch::Methods(&["trans"]));
    }
    Ok(())
}
