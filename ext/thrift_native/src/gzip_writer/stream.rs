//! A GzipWriter's stream operations, as Zlib's `gzfile_*` functions do them: the header before the first output,
//! writes (large ones deflated with the GVL released, other threads waiting on the writer's Mutex meanwhile), and
//! the end of the member.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use magnus::rb_sys::protect;
use magnus::Error;
use rb_sys::VALUE;
use thrift_native_core::gzip::deflate::{Z_NO_FLUSH, Z_SYNC_FLUSH};
use thrift_native_core::gzip::Header;

use super::sink::{self, Pending};
use super::{closed_error, globals, raise, zlib_error, GzipWriter, Input, State, NOGVL_THRESHOLD};
use crate::ruby::nogvl;
use crate::ruby::rb::{self, QNIL};

fn now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

impl GzipWriter {
    pub(super) fn header_into(&self, st: &mut State) {
        if st.header_done {
            return;
        }
        if !st.mtime_set {
            st.mtime = now();
        }
        let (name, comment) = (self.orig_name.get(), self.comment.get());
        // SAFETY: name and comment are nil or Strings owned (and marked) by this writer; the slices die at the end
        // of this block, before anything can run Ruby code.
        let field = |v: VALUE| (!rb::is_nil(v)).then(|| unsafe { rb::str_bytes(v) });
        let header = Header {
            mtime: st.mtime,
            level: st.level,
            orig_name: field(name),
            comment: field(comment),
            os_code: globals().os_code,
        };
        header.write_to(&mut st.out);
        st.header_done = true;
    }

    /// Waits (GVL released) while another thread deflates a large input through this writer.
    pub(super) fn wait_idle(&self) -> Result<(), Error> {
        while self.state.borrow().busy {
            let m = self.lock.get();
            // SAFETY: `m` is this writer's Mutex (made before `busy` was set); protect catches an interrupt raised
            // while waiting, and the unlock cannot fail once the lock is ours.
            protect(|| unsafe {
                rb_sys::rb_mutex_lock(m);
                rb_sys::rb_mutex_unlock(m)
            })?;
        }
        Ok(())
    }

    fn lock(&self) -> Result<VALUE, Error> {
        if rb::is_nil(self.lock.get()) {
            // SAFETY: rb_mutex_new only allocates; protect catches a NoMemoryError.
            let m = protect(|| unsafe { rb_sys::rb_mutex_new() })?;
            self.lock.set(m);
        }
        Ok(self.lock.get())
    }

    /// Zlib's `gzfile_write`: header if missing, deflate (sync flush in sync mode), one io.write of all the output.
    pub(super) fn write_input(&self, input: Input) -> Result<(), Error> {
        self.wait_idle()?;
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            st.stream()?;
            self.header_into(&mut st);
            let len = match input {
                // SAFETY: `s` is a String on the caller's stack.
                Input::Ruby(s) => unsafe { rb::str_len(s) },
                Input::Bytes(b) => b.len(),
            };
            if len > 0 || st.sync {
                let mode = if st.sync { Z_SYNC_FLUSH } else { Z_NO_FLUSH };
                match input {
                    Input::Ruby(s)
                        if len >= NOGVL_THRESHOLD.load(Ordering::Relaxed)
                            && !st.stream()?.finished() =>
                    {
                        // SAFETY: as above; the copy is made before the GVL is released.
                        let copy = unsafe { rb::str_bytes(s) }.to_vec();
                        drop(st);
                        return self.write_without_gvl(copy, mode);
                    }
                    Input::Ruby(s) => {
                        // SAFETY: `s` is a String kept alive by the caller; the slice is used only by the CRC and
                        // deflate below, which run no Ruby code, allocate no Ruby object and cannot raise.
                        let bytes = unsafe { rb::str_bytes(s) };
                        st.deflate(bytes, mode)?;
                    }
                    Input::Bytes(bytes) => st.deflate(bytes, mode)?,
                }
            }
            (sink::take(&mut st.out, self.io.get())?, st.sync)
        };
        self.emit(pending, sync)
    }

    fn write_without_gvl(&self, input: Vec<u8>, mode: i32) -> Result<(), Error> {
        let m = self.lock()?;
        // SAFETY: the Mutex is unlocked (the writer was idle and no Ruby code ran since), so this cannot block;
        // protect catches anything raised anyway.
        protect(|| unsafe { rb_sys::rb_mutex_lock(m) })?;
        let (mut stream, mut out) = {
            let mut st = self.state.borrow_mut();
            let stream = st.stream.take().ok_or_else(closed_error)?;
            st.busy = true;
            (stream, std::mem::take(&mut st.out))
        };
        let outcome = nogvl::without_gvl(|| stream.get_mut().write(&input, mode, &mut out));
        {
            let mut st = self.state.borrow_mut();
            st.busy = false;
            st.total_in = stream.get().total_in();
            st.crc = stream.get().crc();
            st.stream = Some(stream);
            st.out = out;
        }
        // SAFETY: this thread locked the Mutex above, so unlocking cannot raise; protect is belt and braces.
        protect(|| unsafe { rb_sys::rb_mutex_unlock(m) })?;
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            match outcome.result {
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(z))) => return Err(zlib_error(z)),
                Some(Err(_panic)) => {
                    st.stream = None;
                    return Err(raise(globals().stream_error, "stream error"));
                }
                None => {}
            }
            if let Some(e) = outcome.raised {
                return Err(e);
            }
            (sink::take(&mut st.out, self.io.get())?, st.sync)
        };
        self.emit(pending, sync)
    }

    /// One io.write of the pending output; a direct write's buffer comes back for reuse, unless another thread
    /// started a new one meanwhile (the GVL may be released inside the write).
    pub(super) fn emit(&self, pending: Pending, sync: bool) -> Result<(), Error> {
        sink::emit(self.io.get(), pending, sync, |bytes| {
            if let Ok(mut st) = self.state.try_borrow_mut() {
                if st.out.capacity() == 0 {
                    st.out = bytes;
                }
            }
        })
    }

    /// close/finish: header if missing, FINISH, footer, one io.write. The stream ends whatever happens.
    pub(super) fn end(&self) -> Result<VALUE, Error> {
        self.wait_idle()?;
        let io = self.io.get();
        let (pending, sync) = {
            let mut st = self.state.borrow_mut();
            st.stream()?;
            self.header_into(&mut st);
            let State { stream, out, .. } = &mut *st;
            let mut stream = stream.take().ok_or_else(closed_error)?;
            let result = stream.get_mut().finish(out);
            st.total_in = stream.get().total_in();
            st.crc = stream.get().crc();
            drop(stream);
            if let Err(z) = result {
                st.out.clear();
                return Err(zlib_error(z));
            }
            (sink::take(&mut st.out, io)?, st.sync)
        };
        self.emit(pending, sync)?;
        self.io.set(QNIL);
        self.orig_name.set(QNIL);
        self.comment.set(QNIL);
        Ok(io)
    }
}
