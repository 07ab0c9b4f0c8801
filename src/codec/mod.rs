//! Item bytes for Curator-compatible queues.
//!
//! Two layers, as in Curator:
//! - a [`QueueSerializer`] turns one item into bytes and back (Curator's
//!   `QueueSerializer<T>`); [`BytesSerializer`] and [`StringSerializer`] are
//!   ready-made, and [`CodecError`] is what a serializer reports;
//! - the item frame (Curator's `ItemSerializer`) wraps the bytes of one or
//!   more items into the data of one queue node; [`FrameError`] says why a
//!   node's data is not a valid frame.
//!
//! With feature `serde`, `JsonSerializer` and `CompactSerializer` serve any
//! serde type.

mod frame;
#[cfg(feature = "serde")]
mod serde;
mod serializer;
pub(crate) mod trailer;

#[cfg(feature = "serde")]
pub use self::serde::{CompactSerializer, JsonSerializer};
pub use frame::FrameError;
pub(crate) use frame::{decode_frame, encode_frame};
pub use serializer::{BytesSerializer, CodecError, QueueSerializer, StringSerializer};
pub use trailer::{Death, TrailerError};
