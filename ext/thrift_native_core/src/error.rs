//! The one error type of the core; the binding maps each variant to the exact Ruby exception of the contract.

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CoreError {
    /// Fewer bytes remain than a read needs. `available` bytes were there.
    #[error("not enough bytes: needed {needed}, {available} available")]
    Eof { needed: usize, available: usize },
    /// A size read off the wire was negative.
    #[error("Negative size")]
    NegativeSize,
    /// A UUID's text is not `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in hex.
    #[error("Invalid UUID format")]
    InvalidUuid,
}
