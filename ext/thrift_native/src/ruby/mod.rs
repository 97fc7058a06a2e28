//! The C-API plumbing every other layer stands on: calls into libruby (`rb`), the ivar slots that know Ruby's object
//! layout per version (`ivars`), the fast paths' guard against changed Ruby methods (`guard`), interned method and
//! ivar names (`names`), bytes written into a plain IO without a String (`io_write`) and its `closed?` answered
//! without a call (`io_closed`), native methods recorded for `ThriftNative.active?` (`registry`), running without the
//! GVL (`nogvl`), raising and rescuing as Ruby code does (`rescue`), the values native objects hold in Cells,
//! marked and compacted (`held`), bytes appended to a String in place where they fit (`str_cat`), a StringIO's
//! String and position read in its struct (`strio`), and the gzip
//! classes' shared conversions (`gzip_values`). Nothing here reads the thrift library (`names` only spells its ivars
//! and methods).

pub mod guard;
pub mod gzip_values;
pub mod held;
pub mod io_closed;
pub mod io_write;
pub mod ivars;
pub mod names;
pub mod nogvl;
pub mod rb;
pub mod registry;
pub mod rescue;
pub mod str_cat;
pub mod strio;
