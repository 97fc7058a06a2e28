//! Ruby values a native object holds in `Cell`s (the gzip classes' io, header Strings, buffers): marked movable, and
//! updated when compaction moves them. Cells, not a RefCell, so that marking never needs a borrow.

use std::cell::Cell;

use magnus::gc::{Compactor, Marker};
use magnus::rb_sys::AsRawValue;
use rb_sys::VALUE;

use super::rb;

/// Marks each held value (nil and other immediates included: marking them is a no-op).
pub fn mark(cells: &[&Cell<VALUE>], marker: &Marker) {
    for cell in cells {
        // SAFETY: the cell holds a live VALUE (or an immediate), kept alive by this very mark.
        marker.mark_movable(unsafe { rb::value(cell.get()) });
    }
}

/// Points each held value at where compaction moved it.
pub fn compact(cells: &[&Cell<VALUE>], compactor: &Compactor) {
    for cell in cells {
        // SAFETY: as in mark; rb_gc_location answers the object's new address.
        let moved = compactor.location(unsafe { rb::value(cell.get()) });
        cell.set(moved.as_raw());
    }
}
