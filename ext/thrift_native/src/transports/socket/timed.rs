//! thrift 0.24's and master's timed `Thrift::Socket#read` and `#write` (`@timeout` set and not 0), which every
//! socket accepted by their ServerSocket and UNIXServerSocket has (`client_timeout`, 5 s by default): so such a
//! server's every read and write. The library's steps: a deadline of now + `@timeout`; `@handle.read_nonblock(sz)` until it answers, and
//! while it raises IO::WaitReadable (or WaitWritable) `wait_for` the handle with IO.select, raising
//! TransportException::TIMED_OUT ("Socket: Timed out reading N bytes from DESC") once the deadline has passed;
//! `write_nonblock` of what is left of the String the same way ("... writing N bytes to DESC"), answering the bytes
//! written. The rescue clauses are the untimed path's ([`PlainSocket::failed`]).
//!
//! Here `read_nonblock` and `write_nonblock` are called with `exception: false`: their `:wait_readable` and
//! `:wait_writable` answers stand for the exceptions the library rescues, without an exception and its backtrace on
//! every read that has to wait (a server's every request). At end of file, where `exception: false` answers nil, the
//! EOFError IO would raise ("end of file reached") is raised, which the library's rescue turns into NOT_OPEN.
//! The wait is `rb_io_wait` with the time left, which is what IO.select does for one IO whose read buffer is empty (a
//! `read_nonblock` that would block has just found it so).
//!
//! Only where those methods are BasicSocket's own on a handle of exactly ::Socket, ::TCPSocket or ::UNIXSocket (a
//! change to either method on any class between those and IO trips [`GUARD`]), and only for an `@timeout` that is an
//! Integer or a finite Float; other sockets keep the library's Ruby methods. thrift 0.14-0.19 wait first and then
//! `readpartial`; their timed sockets (set only by a caller) keep the library's methods too.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Instant;

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use super::{PlainSocket, MASTER_RESCUE};
use crate::ruby::guard::Guard;
use crate::ruby::names::{
    NEW, RAISE, READ_NONBLOCK, READ_NONBLOCK_INNER, WRITE_NONBLOCK, WRITE_NONBLOCK_INNER,
};
use crate::ruby::rb;

static GUARD: Guard = Guard::new();
/// ::Socket, ::TCPSocket, ::UNIXSocket: the classes of the handles served.
static HANDLE_CLASSES: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];
/// `{exception: false}`, frozen and pinned: the keywords of every call.
static NO_EXCEPTION: AtomicUsize = AtomicUsize::new(0);
/// BasicSocket's `read_nonblock` and `write_nonblock` are socket.rb's, which only pass their arguments on to the
/// private `__read_nonblock(len, str, exception)` and `__write_nonblock(buf, exception)` (Linux): those are called
/// instead, without the keyword Hash the Ruby methods take apart on every call.
static INNER_CALLS: AtomicBool = AtomicBool::new(false);
static TIMED_OUT: AtomicI64 = AtomicI64::new(3);
/// `:wait_readable` and `:wait_writable`, what the calls answer where the library's would raise.
static WAIT_READABLE: AtomicUsize = AtomicUsize::new(0);
static WAIT_WRITABLE: AtomicUsize = AtomicUsize::new(0);
/// `IO::EAGAINWaitReadable` and `IO::EAGAINWaitWritable`: what the library's `rescue` clauses rescue (on Linux).
static EAGAIN_READABLE: AtomicUsize = AtomicUsize::new(0);
static EAGAIN_WRITABLE: AtomicUsize = AtomicUsize::new(0);

fn wait_of(answer: VALUE) -> Option<Wait> {
    if answer == WAIT_READABLE.load(Ordering::Relaxed) as VALUE {
        Some(Wait::Read)
    } else if answer == WAIT_WRITABLE.load(Ordering::Relaxed) as VALUE {
        Some(Wait::Write)
    } else {
        None
    }
}

/// The timeout of a socket this file serves, or None: master's socket.rb, an Integer or a finite Float (0 is untimed
/// and never reaches here).
#[inline]
pub(super) fn seconds(timeout: VALUE) -> Option<f64> {
    if !MASTER_RESCUE.load(Ordering::Relaxed) || !GUARD.intact() {
        return None;
    }
    if let Some(n) = rb::fixnum_value(timeout) {
        return Some(n as f64);
    }
    rb::float_of(timeout).filter(|f| f.is_finite())
}

/// True when `handle`'s `read_nonblock` and `write_nonblock` are BasicSocket's (see the top of this file).
#[inline]
pub(super) fn served_handle(handle: VALUE) -> bool {
    let Some(class) = rb::heap_class(handle) else {
        return false;
    };
    HANDLE_CLASSES
        .iter()
        .any(|c| c.load(Ordering::Relaxed) as VALUE == class)
}

#[derive(Clone, Copy)]
enum Wait {
    Read,
    Write,
}

/// What the timed methods keep for one call: the deadline's start, the timeout and the size named in the
/// timed-out message.
struct Deadline {
    start: Instant,
    timeout: f64,
    size: usize,
}

impl Deadline {
    fn new(timeout: f64, size: usize) -> Self {
        Deadline {
            start: Instant::now(),
            timeout,
            size,
        }
    }

    /// `wait_for(operation, deadline, sz)`: until the handle is ready, or TIMED_OUT once no time is left.
    fn wait_for(&self, socket: PlainSocket, handle: VALUE, wait: Wait) -> Result<(), Error> {
        loop {
            let remaining = self.timeout - self.start.elapsed().as_secs_f64();
            if remaining <= 0.0 {
                return Err(in_rescue(wait, timed_out(socket, wait, self.size)));
            }
            // RUBY_IO_READABLE and RUBY_IO_WRITABLE (poll's POLLIN and POLLOUT): the enum's Rust name differs
            // between Rubies' headers (`rb_io_event_t` on 3.1, `rb_io_event` later), its values do not.
            let events: i64 = match wait {
                Wait::Read => 1,
                Wait::Write => 4,
            };
            let remaining = rb::float(remaining);
            // SAFETY: protected; `handle` and `remaining` are on this stack for the call.
            let ready = magnus::rb_sys::protect(|| unsafe {
                rb_sys::rb_io_wait(handle, rb::integer(events), remaining)
            })
            .map_err(|e| in_rescue(wait, e))?;
            if rb::truthy(ready) {
                return Ok(());
            }
        }
    }
}

/// The read of master's timed `Socket#read(named)` (into `buf`, when given: see [`PlainSocket::read_into`]), asking
/// the handle for up to `sz` bytes (more than `named` only for a frame's first read). Errors are answered unrescued;
/// the caller rescues them as the library does.
pub(super) fn read(
    socket: PlainSocket,
    handle: VALUE,
    sz: usize,
    named: usize,
    buf: Option<VALUE>,
    timeout: f64,
) -> Result<VALUE, Error> {
    let deadline = Deadline::new(timeout, named);
    let size = rb::integer(sz as i64);
    loop {
        let answer = if INNER_CALLS.load(Ordering::Relaxed) {
            // `read_nonblock(len, str, exception: false)` is `__read_nonblock(len, str, false)`.
            rb::funcall(
                handle,
                READ_NONBLOCK_INNER.get(),
                &[size, buf.unwrap_or(rb::QNIL), rb::QFALSE],
            )?
        } else {
            let args = [size, buf.unwrap_or(rb::QNIL), no_exception()];
            funcall_kw(handle, READ_NONBLOCK.get(), &args)?
        };
        if let Some(wait) = wait_of(answer) {
            deadline.wait_for(socket, handle, wait)?;
        } else if rb::is_nil(answer) {
            // End of file, where the library's `read_nonblock(sz)` raises IO's EOFError (its message BINARY).
            // SAFETY: rb_eEOFError is set when Ruby boots and never changes.
            let class = unsafe { rb_sys::rb_eEOFError };
            let message = rb::binary_string(b"end of file reached");
            let eof = rb::funcall(class, NEW.get(), &[message])?;
            return Err(crate::ruby::rescue::raise_value(eof));
        } else {
            return Ok(answer);
        }
    }
}

/// The write of master's timed `Socket#write(str)`, `s` a BINARY String: `write_nonblock` of what is left until all
/// is written; answers the bytes written. Errors are answered unrescued.
pub(super) fn write(
    socket: PlainSocket,
    handle: VALUE,
    s: VALUE,
    timeout: f64,
) -> Result<VALUE, Error> {
    // SAFETY: `s` is a String held by the caller.
    let total = unsafe { rb::str_len(s) };
    let deadline = Deadline::new(timeout, total);
    let mut written = 0usize;
    while written < total {
        // `str[len..-1]`: the String itself while nothing is written (the same bytes).
        let rest = if written == 0 {
            s
        } else {
            rb::str_subseq(s, written, total - written)
        };
        let answer = if INNER_CALLS.load(Ordering::Relaxed) {
            rb::funcall(handle, WRITE_NONBLOCK_INNER.get(), &[rest, rb::QFALSE])?
        } else {
            funcall_kw(handle, WRITE_NONBLOCK.get(), &[rest, no_exception()])?
        };
        if let Some(wait) = wait_of(answer) {
            deadline.wait_for(socket, handle, wait)?;
        } else {
            written += rb::to_i64(answer)? as usize;
        }
    }
    Ok(rb::integer(written as i64))
}

fn no_exception() -> VALUE {
    NO_EXCEPTION.load(Ordering::Relaxed) as VALUE
}

/// `recv.method(*args[..-1], **args[-1])`, protected.
fn funcall_kw(recv: VALUE, method: rb_sys::ID, args: &[VALUE]) -> Result<VALUE, Error> {
    // SAFETY: protected; the arguments are on the caller's stack for the call.
    magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_funcallv_kw(
            recv,
            method,
            args.len() as _,
            args.as_ptr(),
            rb_sys::RB_PASS_KEYWORDS as _,
        )
    })
}

/// `e` raised in the library's `rescue IO::WaitReadable` (or WaitWritable), where `wait_for` runs: raised again with
/// `$!` set to the exception that clause rescued, made now (`IO::EAGAINWaitReadable`, "read would block"), as its
/// cause. Only on the way out: a wait that succeeds makes no exception.
#[cold]
fn in_rescue(wait: Wait, e: Error) -> Error {
    use magnus::rb_sys::AsRawValue;
    let Some(exception) = e.value() else {
        return e;
    };
    let (class, message): (&AtomicUsize, &[u8]) = match wait {
        Wait::Read => (&EAGAIN_READABLE, b"read would block"),
        Wait::Write => (&EAGAIN_WRITABLE, b"write would block"),
    };
    let class = class.load(Ordering::Relaxed) as VALUE;
    let cause = match rb::funcall(class, NEW.get(), &[rb::utf8_string(message)]) {
        Ok(cause) => cause,
        Err(e) => return e,
    };
    // SAFETY: rb_mKernel is set when Ruby boots and never changes.
    let kernel = unsafe { rb_sys::rb_mKernel };
    let raised = crate::ruby::rescue::rescuing(cause, |r| {
        r.call(kernel, RAISE.get(), &[exception.as_raw()])
    });
    match raised {
        Ok(_) => unreachable!("Kernel#raise returned"),
        Err(e) => e,
    }
}

/// `TransportException.new(TIMED_OUT, "Socket: Timed out reading #{sz} bytes from #{@desc}")` (writing: "... to").
#[cold]
fn timed_out(socket: PlainSocket, wait: Wait, size: usize) -> Error {
    let (before, after): (&[u8], &[u8]) = match wait {
        Wait::Read => (b"Socket: Timed out reading ", b" bytes from "),
        Wait::Write => (b"Socket: Timed out writing ", b" bytes to "),
    };
    socket.size_error(TIMED_OUT.load(Ordering::Relaxed), before, size, after)
}

pub(super) fn init(ruby: &Ruby, exception: magnus::RClass) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::value::ReprValue;
    use magnus::Module;
    TIMED_OUT.store(
        exception.const_get::<_, i64>("TIMED_OUT")?,
        Ordering::Relaxed,
    );
    let object = ruby.class_object();
    for (slot, name) in HANDLE_CLASSES
        .iter()
        .zip(["Socket", "TCPSocket", "UNIXSocket"])
    {
        let class: magnus::RClass = object.const_get(name)?;
        rb::pin_forever(class.as_raw());
        slot.store(class.as_raw() as usize, Ordering::Relaxed);
    }
    // Every class from the handles' up to IO, where a `read_nonblock` or `write_nonblock` would come first.
    super::watch_up_to_io(
        ruby,
        &GUARD,
        &[
            "read_nonblock",
            "write_nonblock",
            "__read_nonblock",
            "__write_nonblock",
        ],
    )?;
    let basic_socket: magnus::RClass = object.const_get("BasicSocket")?;
    INNER_CALLS.store(passes_on(basic_socket)?, Ordering::Relaxed);
    let options = ruby.hash_new();
    options.aset(ruby.to_symbol("exception"), false)?;
    options.freeze();
    let options = options.as_value().as_raw();
    rb::pin_forever(options);
    NO_EXCEPTION.store(options as usize, Ordering::Relaxed);
    let io: magnus::RClass = object.const_get("IO")?;
    for (slot, name) in [
        (&EAGAIN_READABLE, "EAGAINWaitReadable"),
        (&EAGAIN_WRITABLE, "EAGAINWaitWritable"),
    ] {
        let class: magnus::RClass = io.const_get(name)?;
        rb::pin_forever(class.as_raw());
        slot.store(class.as_raw() as usize, Ordering::Relaxed);
    }
    // Static Symbols: never collected.
    WAIT_READABLE.store(rb::symbol("wait_readable") as usize, Ordering::Relaxed);
    WAIT_WRITABLE.store(rb::symbol("wait_writable") as usize, Ordering::Relaxed);
    Ok(())
}

/// Whether `BasicSocket#read_nonblock` and `#write_nonblock` are socket.rb's, which only call `__read_nonblock(len,
/// str, exception)` and `__write_nonblock(buf, exception)` (read from their source, as every Ruby from 3.1 to 4.0 has
/// them on Linux).
fn passes_on(basic_socket: magnus::RClass) -> Result<bool, Error> {
    use magnus::value::ReprValue;
    let ruby = Ruby::get().expect("called from a Ruby thread");
    for (name, body) in [
        ("read_nonblock", "__read_nonblock(len, str, exception)"),
        ("write_nonblock", "__write_nonblock(buf, exception)"),
    ] {
        let method: magnus::Value =
            basic_socket.funcall("instance_method", (ruby.to_symbol(name),))?;
        let owner: magnus::Value = method.funcall("owner", ())?;
        let location: Option<(String, usize)> = method.funcall("source_location", ())?;
        let Some((file, line)) = location else {
            return Ok(false);
        };
        let source = std::fs::read_to_string(file).unwrap_or_default();
        let next = source.lines().nth(line).map(str::trim);
        if !owner.equal(basic_socket)? || next != Some(body) {
            return Ok(false);
        }
    }
    Ok(true)
}
