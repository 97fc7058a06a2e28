//! A message header's name as the RPC code needs it, which is often not as a String: 0.14's `Thrift::Client` drops
//! it, and `Thrift::Processor#process` only looks `process_<name>` up, needing the String on its error paths alone.
//! `read_message_begin`'s readers (binary.rs, compact.rs) take a [`NameRead`] and read the name accordingly.

use magnus::{Error, Ruby};
use rb_sys::VALUE;

use crate::ruby::rb;
use crate::transports::io::Input;

/// How a message header's name is read.
pub enum NameRead<'a> {
    /// As `read_message_begin` answers it: a String.
    String,
    /// Passed over, without a String where its bytes are in the transport's buffer.
    Skip,
    /// Copied into a [`MessageName`] where its bytes are in the transport's buffer and fit; else a String, which the
    /// [`MessageName`] then holds.
    InPlace(&'a mut MessageName),
}

/// The longest name a [`MessageName`] holds as bytes (a longer one it holds as a String).
const CAPACITY: usize = 248;

/// A message name read by [`NameRead::InPlace`]: its bytes, or the String it was read as.
pub struct MessageName {
    bytes: [u8; CAPACITY],
    len: usize,
    utf8: bool,
    /// The name as a Ruby object, once there is one (read as a String, answered by a protocol's own method, or
    /// made by [`MessageName::value`]). On the stack, which the GC scans.
    held: Option<VALUE>,
}

impl MessageName {
    pub fn new() -> Self {
        MessageName {
            bytes: [0; CAPACITY],
            len: 0,
            utf8: true,
            held: None,
        }
    }

    /// The name as the String `read_message_begin` would have answered (UTF-8, or BINARY for an old-style binary
    /// header), made at the first call.
    pub fn value(&mut self) -> VALUE {
        *self.held.get_or_insert_with(|| {
            let b = &self.bytes[..self.len];
            if self.utf8 {
                rb::utf8_string(b)
            } else {
                rb::binary_string(b)
            }
        })
    }

    /// The name's bytes and whether they are UTF-8, while it is no Ruby object yet.
    pub fn bytes(&self) -> Option<(&[u8], bool)> {
        self.held
            .is_none()
            .then(|| (&self.bytes[..self.len], self.utf8))
    }

    /// The name as a Ruby object, if it is one yet.
    pub fn object(&self) -> Option<VALUE> {
        self.held
    }

    /// Holds `name`, the name as a Ruby object already (whatever object a protocol's method answered).
    pub fn hold(&mut self, name: VALUE) {
        self.held = Some(name);
    }
}

/// Reads a name of `len` bytes as `read_utf8` (`utf8`) or `read_all` reads it, into `how`: the String for
/// [`NameRead::String`] (else nil).
pub fn read_name(
    ruby: &Ruby,
    input: &mut Input,
    len: usize,
    utf8: bool,
    how: &mut NameRead,
) -> Result<VALUE, Error> {
    match how {
        NameRead::Skip => {
            if let Some(read) = input.read_in_buffer(ruby, len, |_| ()) {
                return read.map(|()| rb::QNIL);
            }
        }
        NameRead::InPlace(name) if len <= CAPACITY => {
            let copy = |b: &[u8]| {
                name.bytes[..b.len()].copy_from_slice(b);
                name.len = b.len();
                name.utf8 = utf8;
            };
            if let Some(read) = input.read_in_buffer(ruby, len, copy) {
                return read.map(|()| rb::QNIL);
            }
        }
        NameRead::InPlace(_) | NameRead::String => {}
    }
    let s = if utf8 {
        input.read_utf8(ruby, len)?
    } else {
        input.read_all(ruby, len)?
    };
    match how {
        NameRead::String => Ok(s),
        NameRead::Skip => Ok(rb::QNIL),
        NameRead::InPlace(name) => {
            name.hold(s);
            Ok(rb::QNIL)
        }
    }
}
