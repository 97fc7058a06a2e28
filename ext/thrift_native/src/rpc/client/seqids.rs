//! The sequence ids of thrift 0.24's and master's client.rb: `next_seqid!` (wrapping from MAX_SEQUENCE_ID to
//! MIN_SEQUENCE_ID) and the queue of ids awaiting a reply, `@pending_seqids` (`<<` after a call is sent,
//! `dequeue_pending_seqid` when its reply is read).

use magnus::rb_sys::AsRawValue;
use magnus::{Error, Value};
use rb_sys::VALUE;

use super::{ivar, K, PENDING_SEQIDS, SEQID};
use crate::rpc::{equal, k, ArrayCall};
use crate::ruby::names::{APPEND, IVAR_PENDING_SEQIDS, IVAR_SEQID, PLUS, SHIFT};
use crate::ruby::rb;

/// `@pending_seqids << seqid`.
pub(super) fn push_pending(this: VALUE, seqid: VALUE) -> Result<VALUE, Error> {
    let pending = ivar(this, &PENDING_SEQIDS, &IVAR_PENDING_SEQIDS);
    if let Some(pushed) = crate::rpc::array_call(pending, ArrayCall::Push(seqid)) {
        return Ok(pushed);
    }
    rb::funcall(pending, APPEND.get(), &[seqid])
}

/// 0.24's and master's `next_seqid!`: `@seqid`, and the next one (after MAX_SEQUENCE_ID, MIN_SEQUENCE_ID) stored.
pub(super) fn next_seqid(rb_self: Value) -> Result<Value, Error> {
    next_seqid_of(rb_self.as_raw()).map(rb::returned)
}

pub(super) fn next_seqid_of(this: VALUE) -> Result<VALUE, Error> {
    let seqid = ivar(this, &SEQID, &IVAR_SEQID);
    let next = if equal(seqid, k(&K.max_seqid))? {
        k(&K.min_seqid)
    } else {
        match rb::fixnum_value(seqid) {
            Some(n) if n < i64::from(i32::MAX) => rb::integer(n + 1),
            _ => rb::funcall(seqid, PLUS.get(), &[rb::integer(1)])?,
        }
    };
    SEQID.set(this, IVAR_SEQID.get(), next)?;
    Ok(seqid)
}

/// 0.24's and master's `dequeue_pending_seqid`: `@pending_seqids.shift`.
pub(super) fn dequeue_pending_seqid(rb_self: Value) -> Result<Value, Error> {
    dequeue_pending_seqid_of(rb_self.as_raw()).map(rb::returned)
}

pub(super) fn dequeue_pending_seqid_of(this: VALUE) -> Result<VALUE, Error> {
    let pending = ivar(this, &PENDING_SEQIDS, &IVAR_PENDING_SEQIDS);
    if let Some(first) = crate::rpc::array_call(pending, ArrayCall::Shift) {
        return Ok(first);
    }
    rb::funcall(pending, SHIFT.get(), &[])
}
