//! Where Ruby 3.2 and later keep a T_OBJECT's shape id (in RBasic's flags, above bit 32 on 64-bit Rubies:
//! shape.h's SHAPE_FLAG_SHIFT), and the flag that says libruby was found to keep it elsewhere. Shared by both shape
//! layouts (`shapes` for 3.2-3.4, `shape_fields` for 4.0) and the stores.

use std::sync::atomic::AtomicBool;

use rb_sys::VALUE;

pub(super) const SHAPE_FLAG_SHIFT: u32 = 32;

/// Set when libruby's shape id is not where SHAPE_FLAG_SHIFT says, or (4.0) its flag bits are not where
/// `shape_fields` expects: from then on no slot learns anything and every access goes through rb_ivar_get.
pub(super) static LAYOUT_DIFFERS: AtomicBool = AtomicBool::new(false);

/// The shape id in a T_OBJECT's flags.
#[inline(always)]
pub(super) fn flags_shape_id(flags: VALUE) -> u32 {
    (flags >> SHAPE_FLAG_SHIFT) as u32
}
