//! `Thrift::Socket` and `Thrift::UNIXSocket` beneath a FramedTransport, BufferedTransport or HeaderTransport: the
//! calls those make on the socket (`read_all`, `read`, `write`, `flush`) done here, without the Ruby frames of
//! `Socket#read`, `BaseTransport#read_all` and `open?`, and with the same calls on the socket's `@handle` in the
//! same order (`closed?`, `readpartial`, `write`, and on a failure `close`). A frame or a write buffer is written
//! from Rust memory where IO#write would only copy a String's bytes into the handle (`write_bytes`): the same bytes
//! and errors, with no String and no call of `write`.
//!
//! Only for a [`PlainSocket`]: an exact, unfrozen instance of one of the two classes, while none of their methods
//! (nor BaseTransport's `read_all` and `flush`) has changed, with a `@handle` whose `readpartial` and `write` are
//! IO's own, and either no timeout (`@timeout` nil or 0: the library's untimed branch, one `readpartial` or `write`
//! per call) or 0.24's and master's timed branch as [`timed`] serves it (`read_nonblock`/`write_nonblock` and a
//! wait, what master's servers give every accepted socket). Anything else gets the socket's Ruby methods, called as
//! before. A socket that is not open raises the loaded version's error (IOError "closed stream" on 0.14-0.19, a
//! TransportException with that message on 0.24 and master).
//!
//! The versions of socket.rb differ in what a failed `readpartial` or `write` does before it raises
//! `TransportException::NOT_OPEN` with the error's message (as its cause): 0.14-0.19 close `@handle` themselves
//! (`close unless closed?` on a read, `close` on a write) and set it to nil; 0.24 and master close it through the
//! private `close_socket` and set it to nil, as their `close` does ([`MASTER_RESCUE`], probed by `close_socket`).
//! master also closes on a TransportException (a timed read's or write's TIMED_OUT), which 0.24 passes on with the
//! socket open ([`CLOSES_ON_TRANSPORT_ERROR`], probed by what `read` does with a handle that raises one).
//! `read_all`'s versions (master checks for an empty or frozen chunk) agree for a socket: `read` never answers an
//! empty String (it raises) and `readpartial` answers a BINARY one that is not frozen (a new one, or the caller's
//! spent buffer, see `read_into`).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::guard::{Guard, Watch};
use crate::ruby::ivars::IvarSite;
use crate::ruby::names::{
    CLOSE, CLOSED_P, IVAR_DESC, IVAR_HANDLE, IVAR_TIMEOUT, LENGTH, MESSAGE, RAISE, READPARTIAL,
    WRITE,
};
use crate::ruby::{io_write, rb};
use crate::thrift::{bytes, thrift};

mod frame;
mod timed;

pub use frame::FrameRead;

/// The methods whose change (on either class, or BaseTransport's two) sends every socket back to its Ruby methods.
const WATCHED: [&str; 7] = [
    "read",
    "write",
    "read_all",
    "flush",
    "open?",
    "close",
    "close_socket",
];

static GUARD: Guard = Guard::new();
static TIMEOUT: IvarSite = IvarSite::new();
static HANDLE: IvarSite = IvarSite::new();
static SOCKET: AtomicUsize = AtomicUsize::new(0);
static UNIX_SOCKET: AtomicUsize = AtomicUsize::new(0);
/// 0.24's and master's socket.rb: a failed read or write closes the socket as `close` does, "closed stream" is a
/// TransportException, a timed read waits after `read_nonblock`; see the top of this file.
static MASTER_RESCUE: AtomicBool = AtomicBool::new(false);
/// master's socket.rb: a TransportException raised inside `read` or `write` closes the socket too.
static CLOSES_ON_TRANSPORT_ERROR: AtomicBool = AtomicBool::new(false);
static NOT_OPEN: AtomicI64 = AtomicI64::new(1);
static UNKNOWN: AtomicI64 = AtomicI64::new(0);

/// An exact Thrift::Socket or Thrift::UNIXSocket that the calls here may serve (see the top of this file).
#[derive(Clone, Copy)]
pub struct PlainSocket {
    this: VALUE,
    /// `@timeout` of a timed socket that [`timed`] serves; None for an untimed one.
    timeout: Option<f64>,
}

impl PlainSocket {
    #[inline(always)]
    pub fn of(trans: VALUE) -> Option<Self> {
        let class = rb::heap_class(trans)?;
        if class != SOCKET.load(Ordering::Relaxed) as VALUE
            && class != UNIX_SOCKET.load(Ordering::Relaxed) as VALUE
        {
            return None;
        }
        if !GUARD.intact() || rb::is_frozen(trans) {
            return None;
        }
        let timeout = TIMEOUT.get(trans, IVAR_TIMEOUT.get());
        let timeout = if untimed(timeout) {
            None
        } else {
            Some(timed::seconds(timeout)?)
        };
        let handle = HANDLE.get(trans, IVAR_HANDLE.get());
        // A nil handle (not open) is served too: `read`/`write` then raise the version's closed-stream error.
        if !rb::is_nil(handle)
            && (!io_methods(handle) || (timeout.is_some() && !timed::served_handle(handle)))
        {
            return None;
        }
        Some(PlainSocket {
            this: trans,
            timeout,
        })
    }

    fn handle(self) -> VALUE {
        HANDLE.get(self.this, IVAR_HANDLE.get())
    }

    /// `open?`: `!@handle.nil? && !@handle.closed?`. The handle, when open (and still an IO).
    fn open_handle(self) -> Result<Option<VALUE>, Error> {
        let handle = self.handle();
        // `@handle.closed?`: IO's own (`io_methods`), answered without the call.
        if rb::is_nil(handle) || crate::ruby::io_closed::closed(handle)? {
            return Ok(None);
        }
        Ok(Some(handle))
    }

    /// `Socket#read(sz)`, untimed: `@handle.readpartial(sz)`, an error raised as the version raises it, and the
    /// "Could not read" TransportException for an empty answer.
    pub fn read(self, sz: usize) -> Result<VALUE, Error> {
        self.readpartial(sz, sz, None)
    }

    /// `Socket#read(sz)` answered in `buf`, a String the caller owns and reuses (see [`rb::is_refillable_string`]):
    /// `@handle.readpartial(sz, buf)`, which leaves in `buf` the bytes `readpartial(sz)` would have answered (IO's
    /// own method: `io_methods`), and answers `buf`. No String per read.
    pub fn read_into(self, sz: usize, buf: VALUE) -> Result<VALUE, Error> {
        self.readpartial(sz, sz, Some(buf))
    }

    /// `read(named)` as the library makes it, but asking the handle for up to `sz` bytes: `named` is the size its
    /// errors name (see [`frame`]).
    fn readpartial(self, sz: usize, named: usize, buf: Option<VALUE>) -> Result<VALUE, Error> {
        let Some(handle) = self.open_handle()? else {
            return Err(closed_stream());
        };
        self.read_handle(handle, sz, named, buf)
    }

    /// [`Self::readpartial`] on `handle`, open.
    fn read_handle(
        self,
        handle: VALUE,
        sz: usize,
        named: usize,
        buf: Option<VALUE>,
    ) -> Result<VALUE, Error> {
        let with_buf = [rb::integer(sz as i64), buf.unwrap_or(rb::QNIL)];
        let args = if buf.is_some() {
            &with_buf[..]
        } else {
            &with_buf[..1]
        };
        let data = match self.timeout {
            None => rb::funcall(handle, READPARTIAL.get(), args),
            Some(timeout) => timed::read(self, handle, sz, named, buf, timeout),
        }
        .map_err(|e| self.failed(e, Direction::Read))?;
        if rb::is_nil(data) || length(data)? == 0 {
            let code = UNKNOWN.load(Ordering::Relaxed);
            return Err(self.size_error(code, b"Socket: Could not read ", named, b" bytes from "));
        }
        Ok(data)
    }

    /// BaseTransport#read_all(size) over this socket, for `size` > 0: `read(size)`, then `read` of what is missing,
    /// appended, until `size` bytes are there. Each `read` is this file's while the socket is still plain (a
    /// `readpartial` lets other threads run, which may change it), else the socket's own method.
    pub fn read_all(self, size: usize) -> Result<VALUE, Error> {
        self.read_all_into(size, None)
    }

    /// `read_all(size)` whose first read fills `first` (see [`Self::read_into`]); the answer is then `first`.
    pub fn read_all_into(self, size: usize, first: Option<VALUE>) -> Result<VALUE, Error> {
        let buf = self.readpartial(size, size, first)?;
        loop {
            let got = if bytes::is_binary_string(buf) {
                // SAFETY: `buf` is a String held on this stack.
                unsafe { rb::str_len(buf) as i64 }
            } else {
                rb::to_i64(rb::funcall(buf, LENGTH.get(), &[])?)?
            };
            if got >= size as i64 {
                return Ok(buf);
            }
            let rest = size - got as usize;
            let chunk = match PlainSocket::of(self.this) {
                Some(socket) => socket.read(rest)?,
                None => rb::funcall(
                    self.this,
                    crate::ruby::names::READ.get(),
                    &[rb::integer(rest as i64)],
                )?,
            };
            // `buf << chunk`
            rb::funcall(buf, crate::ruby::names::APPEND.get(), &[chunk])?;
        }
    }

    /// `Socket#write(str)` of a BINARY String, untimed: `@handle.write(str)`, an error raised as the version does.
    pub fn write(self, s: VALUE) -> Result<VALUE, Error> {
        debug_assert!(bytes::is_binary_string(s));
        let Some(handle) = self.open_handle()? else {
            return Err(closed_stream());
        };
        self.handle_write(handle, s)
    }

    fn handle_write(self, handle: VALUE, s: VALUE) -> Result<VALUE, Error> {
        match self.timeout {
            None => rb::funcall(handle, WRITE.get(), &[s]),
            Some(timeout) => timed::write(self, handle, s, timeout),
        }
        .map_err(|e| self.failed(e, Direction::Write))
    }

    /// `Socket#write(str)`, untimed, of bytes the caller holds (a frame, a write buffer's copy): what
    /// `@handle.write(str)` does, without `str` (nor the frozen copy IO#write makes of a String that is not frozen)
    /// where IO#write would only copy the bytes into the handle ([`io_write::direct_io`]); else `@handle.write` of a
    /// String of them. Errors are IO#write's, rescued as the version rescues them. The bytes must not be Ruby
    /// memory: the GVL is released while they are written.
    pub fn write_bytes(self, bytes: &[u8]) -> Result<(), Error> {
        let Some(handle) = self.open_handle()? else {
            return Err(closed_stream());
        };
        if self.timeout.is_some() || !io_write::direct_io(handle) {
            return self
                .handle_write(handle, rb::binary_string(bytes))
                .map(drop);
        }
        io_write::write_direct(handle, bytes).map_err(|e| self.failed(e, Direction::Write))
    }

    /// `TransportException.new(code, "#{before}#{size}#{after}#{@desc}")`, raised: socket.rb's messages naming a
    /// size and the socket (its literals BINARY, as the file is `# encoding: ascii-8bit`).
    #[cold]
    fn size_error(self, code: i64, before: &[u8], size: usize, after: &[u8]) -> Error {
        let parts = [
            rb::binary_string(before),
            rb::integer(size as i64),
            rb::binary_string(after),
            rb::ivar_get(self.this, IVAR_DESC.get()),
        ];
        let raised = rb::interpolate(&parts).and_then(|message| {
            rb::funcall(
                thrift().transport_exception,
                crate::ruby::names::NEW.get(),
                &[rb::integer(code), message],
            )
        });
        match raised {
            Ok(exception) => crate::ruby::rescue::raise_value(exception),
            Err(e) => e,
        }
    }

    /// What the version's `rescue` clauses do with `e`, raised by `@handle.readpartial` or `@handle.write`.
    #[cold]
    fn failed(self, e: Error, direction: Direction) -> Error {
        let ruby = Ruby::get().expect("called from a Ruby thread");
        let Some(exception) = e.value() else {
            return e; // a throw or a break: not rescued
        };
        let master = MASTER_RESCUE.load(Ordering::Relaxed);
        if e.is_kind_of(transport_exception()) {
            if CLOSES_ON_TRANSPORT_ERROR.load(Ordering::Relaxed) {
                use magnus::rb_sys::AsRawValue;
                let closed = crate::ruby::rescue::rescuing(exception.as_raw(), |r| {
                    r.call(self.this, CLOSE.get(), &[])
                });
                if let Err(close_error) = closed {
                    return close_error;
                }
            }
            return e;
        }
        if !e.is_kind_of(ruby.exception_standard_error()) {
            return e;
        }
        use magnus::rb_sys::AsRawValue;
        let exception = exception.as_raw();
        // The rescue clause's body, with `$!` set: an error raised in it has the IO error as its cause.
        let raised = crate::ruby::rescue::rescuing(exception, |r| {
            self.clean_up(r, master, direction)?;
            let message = r.call(exception, MESSAGE.get(), &[])?;
            Ok(raise_not_open(message, exception))
        });
        match raised {
            Ok(e) | Err(e) => e,
        }
    }

    /// 0.24 and master: `close` (0.24 spells it out: `close_socket(@handle)`, `@handle = nil`). 0.14-0.19:
    /// `@handle.close` (`unless @handle.closed?` on a read), `@handle = nil`.
    fn clean_up(
        self,
        r: &crate::ruby::rescue::Rescue,
        master: bool,
        direction: Direction,
    ) -> Result<(), Error> {
        if master {
            return r.call(self.this, CLOSE.get(), &[]).map(|_| ());
        }
        let handle = self.handle();
        let closed = match direction {
            Direction::Read => rb::truthy(r.call(handle, CLOSED_P.get(), &[])?),
            Direction::Write => false,
        };
        if !closed {
            r.call(handle, CLOSE.get(), &[])?;
        }
        rb::ivar_set(self.this, IVAR_HANDLE.get(), rb::QNIL)
    }
}

/// `raise IOError, "closed stream" unless open?` (0.24 and master: a TransportException::NOT_OPEN of that message).
#[cold]
fn closed_stream() -> Error {
    if MASTER_RESCUE.load(Ordering::Relaxed) {
        return crate::thrift::errors::transport(NOT_OPEN.load(Ordering::Relaxed), "closed stream");
    }
    let ruby = Ruby::get().expect("called from a Ruby thread");
    crate::thrift::errors::exception(ruby.exception_io_error(), "closed stream")
}

/// The socket beneath a layered transport, when `flush` on it is BaseTransport's, which does nothing.
pub fn flush_does_nothing(trans: VALUE) -> bool {
    PlainSocket::of(trans).is_some()
}

#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}

/// `@timeout.nil? || @timeout == 0`, for the values that answer it without Ruby code (an Integer or a Float).
#[inline(always)]
fn untimed(timeout: VALUE) -> bool {
    rb::is_nil(timeout)
        || rb::fixnum_value(timeout) == Some(0)
        || rb::float_of(timeout) == Some(0.0)
}

/// True when `handle`'s `readpartial`, `write` and `closed?` are IO's own (a ::Socket, ::UNIXSocket, ::TCPSocket),
/// so that they answer as IO does: a new BINARY String per read, never an empty one. For exactly one of those three
/// classes, [`HANDLE_METHODS`] answers (no method lookup per call); any other class is asked.
#[inline(always)]
fn io_methods(handle: VALUE) -> bool {
    let Some(class) = rb::heap_class(handle) else {
        return false;
    };
    if HANDLE_METHODS.intact()
        && HANDLE_CLASSES
            .iter()
            .any(|c| c.load(Ordering::Relaxed) as VALUE == class)
    {
        return true;
    }
    [READPARTIAL.get(), WRITE.get(), CLOSED_P.get()]
        .into_iter()
        .all(|id| {
            // SAFETY: `class` is a live class; rb_method_basic_definition_p only looks its method up.
            unsafe { rb_sys::rb_method_basic_definition_p(class, id) != 0 }
        })
}

/// ::Socket, ::TCPSocket and ::UNIXSocket, pinned: the handles whose IO methods [`HANDLE_METHODS`] vouches for.
static HANDLE_CLASSES: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];
/// Intact while `readpartial`, `write` and `closed?` of the three handle classes are IO's own: they were at load
/// time, and no change to them (or to the classes between those and IO) has been reported since.
static HANDLE_METHODS: Guard = Guard::new();

/// `guard` watches `methods` in every class from the handles' (::Socket, ::TCPSocket, ::UNIXSocket) up to IO, where
/// a definition would come before IO's own; the classes are pinned.
fn watch_up_to_io(
    ruby: &Ruby,
    guard: &'static Guard,
    methods: &'static [&'static str],
) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::Module;
    let object = ruby.class_object();
    for name in [
        "Socket",
        "TCPSocket",
        "UNIXSocket",
        "IPSocket",
        "BasicSocket",
        "IO",
    ] {
        let class: magnus::RClass = object.const_get(name)?;
        rb::pin_forever(class.as_raw());
        guard.watch(class.as_raw(), Watch::Methods(methods));
    }
    Ok(())
}

/// The handle classes and the guard of their IO methods (see [`io_methods`]).
fn watch_handle_classes(ruby: &Ruby) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::Module;
    let object = ruby.class_object();
    watch_up_to_io(ruby, &HANDLE_METHODS, &["readpartial", "write", "closed?"])?;
    for (slot, name) in HANDLE_CLASSES
        .iter()
        .zip(["Socket", "TCPSocket", "UNIXSocket"])
    {
        let class: magnus::RClass = object.const_get(name)?;
        let ours = [READPARTIAL.get(), WRITE.get(), CLOSED_P.get()]
            .into_iter()
            .all(|id| {
                // SAFETY: a live class; rb_method_basic_definition_p only looks its method up.
                unsafe { rb_sys::rb_method_basic_definition_p(class.as_raw(), id) != 0 }
            });
        if !ours {
            HANDLE_METHODS.trip();
        }
        slot.store(class.as_raw() as usize, Ordering::Relaxed);
    }
    Ok(())
}

fn length(data: VALUE) -> Result<i64, Error> {
    if rb::is_string(data) {
        // SAFETY: `data` is a String.
        return Ok(unsafe { rb::str_len(data) } as i64);
    }
    rb::to_i64(rb::funcall(data, LENGTH.get(), &[])?)
}

fn transport_exception() -> magnus::ExceptionClass {
    // SAFETY: the class is pinned at load time.
    let class = unsafe { rb::value(thrift().transport_exception) };
    magnus::ExceptionClass::from_value(class).expect("TransportException is an exception class")
}

/// `raise TransportException.new(NOT_OPEN, message)` inside the rescue of `cause`: its cause is `cause`.
#[cold]
fn raise_not_open(message: VALUE, cause: VALUE) -> Error {
    let code = rb::integer(NOT_OPEN.load(Ordering::Relaxed));
    let exception = match rb::funcall(
        thrift().transport_exception,
        crate::ruby::names::NEW.get(),
        &[code, message],
    ) {
        Ok(exception) => exception,
        Err(e) => return e,
    };
    // SAFETY: protected; the Hash and the exceptions are on this stack for the call. Kernel.raise always raises.
    let raised = magnus::rb_sys::protect(|| unsafe {
        let options = rb_sys::rb_hash_new();
        rb_sys::rb_hash_aset(options, rb::symbol("cause"), cause);
        let args = [exception, options];
        rb_sys::rb_funcallv_kw(
            thrift().kernel,
            RAISE.get(),
            2,
            args.as_ptr(),
            rb_sys::RB_PASS_KEYWORDS as _,
        )
    });
    match raised {
        Err(e) => e,
        Ok(_) => unreachable!("Kernel.raise returned"),
    }
}

/// Whether the loaded `Thrift::Socket#read` closes the socket when a TransportException is raised inside it: asked
/// of the library's method with a stand-in handle whose `readpartial` raises one (no IO is made).
fn closes_on_transport_error(ruby: &Ruby) -> bool {
    const PROBE: &str = r#"
        begin
          closed = false
          handle = Object.new
          handle.define_singleton_method(:closed?) { closed }
          handle.define_singleton_method(:close) { closed = true }
          handle.define_singleton_method(:readpartial) { |*| raise Thrift::TransportException.new(Thrift::TransportException::TIMED_OUT, "probe") }
          socket = Thrift::Socket.allocate
          socket.instance_variable_set(:@handle, handle)
          socket.instance_variable_set(:@timeout, nil)
          begin
            socket.read(1)
          rescue Thrift::TransportException
          end
          closed
        rescue StandardError
          false
        end
    "#;
    ruby.eval::<bool>(PROBE).unwrap_or(false)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    use magnus::rb_sys::AsRawValue;
    use magnus::value::ReprValue;
    use magnus::Module;
    let module = magnus::RModule::from_value(
        // SAFETY: the module is pinned at load time.
        unsafe { rb::value(thrift().module) },
    )
    .expect("Thrift is a module");
    let socket: magnus::RClass = module.const_get("Socket")?;
    let unix_socket: magnus::RClass = module.const_get("UNIXSocket")?;
    let base: magnus::RClass = module.const_get("BaseTransport")?;
    let exception: magnus::RClass = module.const_get("TransportException")?;
    NOT_OPEN.store(
        exception.const_get::<_, i64>("NOT_OPEN")?,
        Ordering::Relaxed,
    );
    UNKNOWN.store(exception.const_get::<_, i64>("UNKNOWN")?, Ordering::Relaxed);
    let master: bool =
        socket.funcall("private_method_defined?", (ruby.to_symbol("close_socket"),))?;
    MASTER_RESCUE.store(master, Ordering::Relaxed);
    CLOSES_ON_TRANSPORT_ERROR.store(master && closes_on_transport_error(ruby), Ordering::Relaxed);
    timed::init(ruby, exception)?;
    watch_handle_classes(ruby)?;
    for class in [socket, unix_socket, base] {
        rb::pin_forever(class.as_raw());
        GUARD.watch(class.as_raw(), Watch::Methods(&WATCHED));
    }
    SOCKET.store(socket.as_raw() as usize, Ordering::Relaxed);
    UNIX_SOCKET.store(unix_socket.as_raw() as usize, Ordering::Relaxed);
    Ok(())
}
