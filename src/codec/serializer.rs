//! [`QueueSerializer`]: how one item becomes bytes and back, as Curator's
//! `QueueSerializer<T>` does, plus ready serializers for bytes and text.

use std::error::Error as StdError;
use std::fmt;

/// Turns items of type `T` into bytes and back (Curator's
/// `QueueSerializer<T>`).
///
/// A queue calls [`serialize`](QueueSerializer::serialize) once per item it
/// puts and [`deserialize`](QueueSerializer::deserialize) once per item it
/// delivers. The bytes are one record of the item frame Curator's queues
/// store; to share a queue with Java processes, the Java side's
/// `QueueSerializer` must produce and accept the same bytes.
///
/// Serializers are shared between threads, hence the `Send + Sync + 'static`
/// bounds; a stateless unit struct is the usual shape.
///
/// # Writing a serializer
/// Report failures with [`CodecError`], passing the underlying error, if any,
/// as its source. A `u64` stored as decimal text, the way Curator's own tests
/// store their numbers:
/// ```
/// use zk_queue::{CodecError, QueueSerializer};
///
/// struct DecimalSerializer;
///
/// impl QueueSerializer<u64> for DecimalSerializer {
///     fn serialize(&self, item: &u64) -> Result<Vec<u8>, CodecError> {
///         Ok(item.to_string().into_bytes())
///     }
///
///     fn deserialize(&self, bytes: &[u8]) -> Result<u64, CodecError> {
///         let text = std::str::from_utf8(bytes).map_err(|e| CodecError::with_source("item is not utf-8 text", e))?;
///         text.parse().map_err(|e| CodecError::with_source("item is not a decimal number", e))
///     }
/// }
///
/// let bytes = DecimalSerializer.serialize(&42)?;
/// assert_eq!(bytes, b"42");
/// assert_eq!(DecimalSerializer.deserialize(&bytes)?, 42);
///
/// let err = DecimalSerializer.deserialize(b"forty-two").unwrap_err();
/// assert_eq!(err.to_string(), "item is not a decimal number");
/// assert!(std::error::Error::source(&err).is_some());
/// # Ok::<(), CodecError>(())
/// ```
pub trait QueueSerializer<T>: Send + Sync + 'static {
    /// Bytes of one item (Curator's `QueueSerializer.serialize`).
    ///
    /// # Errors
    /// A [`CodecError`] if the item cannot be represented; the queue then
    /// stores nothing.
    ///
    /// # Examples
    /// ```
    /// use zk_queue::{QueueSerializer, StringSerializer};
    ///
    /// assert_eq!(StringSerializer.serialize(&"x".to_owned())?, b"x");
    /// # Ok::<(), zk_queue::CodecError>(())
    /// ```
    fn serialize(&self, item: &T) -> Result<Vec<u8>, CodecError>;

    /// The item back from its bytes (Curator's
    /// `QueueSerializer.deserialize`).
    ///
    /// `bytes` come from ZooKeeper and may have been written by any process,
    /// so this must not panic on arbitrary input.
    ///
    /// # Errors
    /// A [`CodecError`] if the bytes are not a valid item.
    ///
    /// # Examples
    /// ```
    /// use zk_queue::{QueueSerializer, StringSerializer};
    ///
    /// assert_eq!(StringSerializer.deserialize(b"x")?, "x");
    /// assert!(StringSerializer.deserialize(&[0xff]).is_err());
    /// # Ok::<(), zk_queue::CodecError>(())
    /// ```
    fn deserialize(&self, bytes: &[u8]) -> Result<T, CodecError>;
}

/// Stores `Vec<u8>` items as they are.
///
/// # Examples
/// ```
/// use zk_queue::{BytesSerializer, QueueSerializer};
///
/// let bytes = BytesSerializer.serialize(&vec![0, 1, 0xff])?;
/// assert_eq!(bytes, [0, 1, 0xff]);
/// assert_eq!(BytesSerializer.deserialize(&bytes)?, [0, 1, 0xff]);
/// # Ok::<(), zk_queue::CodecError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct BytesSerializer;

impl QueueSerializer<Vec<u8>> for BytesSerializer {
    fn serialize(&self, item: &Vec<u8>) -> Result<Vec<u8>, CodecError> {
        Ok(item.clone())
    }

    fn deserialize(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(bytes.to_vec())
    }
}

/// Stores `String` items as UTF-8, like Java's `s.getBytes(UTF_8)` and
/// `new String(bytes, UTF_8)`.
///
/// Bytes that are not valid UTF-8 are an error (Java would substitute
/// U+FFFD instead); valid UTF-8 reads the same on both sides.
///
/// # Examples
/// ```
/// use zk_queue::{QueueSerializer, StringSerializer};
///
/// let bytes = StringSerializer.serialize(&"grüß".to_owned())?;
/// assert_eq!(bytes, "grüß".as_bytes());
/// assert_eq!(StringSerializer.deserialize(&bytes)?, "grüß");
///
/// let err = StringSerializer.deserialize(b"\xc3").unwrap_err();
/// assert_eq!(err.to_string(), "item is not valid utf-8");
/// # Ok::<(), zk_queue::CodecError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StringSerializer;

impl QueueSerializer<String> for StringSerializer {
    fn serialize(&self, item: &String) -> Result<Vec<u8>, CodecError> {
        Ok(item.as_bytes().to_vec())
    }

    fn deserialize(&self, bytes: &[u8]) -> Result<String, CodecError> {
        String::from_utf8(bytes.to_vec()).map_err(|e| CodecError::with_source("item is not valid utf-8", e))
    }
}

/// A [`QueueSerializer`] failed to turn an item into bytes or back.
///
/// Carries a short lowercase message and, optionally, the underlying error,
/// available through [`std::error::Error::source`] and not repeated in the
/// message.
///
/// # Examples
/// ```
/// use std::error::Error as _;
/// use zk_queue::CodecError;
///
/// let plain = CodecError::new("item is empty");
/// assert_eq!(plain.to_string(), "item is empty");
/// assert!(plain.source().is_none());
///
/// let cause = "x".parse::<u8>().unwrap_err();
/// let wrapped = CodecError::with_source("item is not a number", cause);
/// assert_eq!(wrapped.message(), "item is not a number");
/// assert_eq!(wrapped.source().unwrap().to_string(), "invalid digit found in string");
/// ```
#[derive(Debug)]
pub struct CodecError {
    message: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl CodecError {
    /// An error with a message and no underlying cause.
    ///
    /// By convention the message is lowercase without trailing punctuation.
    ///
    /// # Examples
    /// ```
    /// let err = zk_queue::CodecError::new("item is empty");
    /// assert_eq!(err.to_string(), "item is empty");
    /// ```
    pub fn new(message: impl Into<String>) -> CodecError {
        CodecError {
            message: message.into(),
            source: None,
        }
    }

    /// An error with a message and the error that caused it.
    ///
    /// # Examples
    /// ```
    /// use std::error::Error as _;
    ///
    /// let cause = std::str::from_utf8(b"\xff").unwrap_err();
    /// let err = zk_queue::CodecError::with_source("item is not utf-8 text", cause);
    /// assert_eq!(err.to_string(), "item is not utf-8 text");
    /// assert!(err.source().is_some());
    /// ```
    pub fn with_source(message: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> CodecError {
        CodecError {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// The message, without the source.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(zk_queue::CodecError::new("item is empty").message(), "item is empty");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for CodecError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn bytes_serializer_is_the_identity() {
        for item in [vec![], vec![0u8], (0..=255).collect::<Vec<u8>>()] {
            let bytes = BytesSerializer.serialize(&item).unwrap();
            assert_eq!(bytes, item);
            assert_eq!(BytesSerializer.deserialize(&bytes).unwrap(), item);
        }
    }

    #[test]
    fn string_serializer_writes_utf8_like_java() {
        assert_eq!(StringSerializer.serialize(&String::new()).unwrap(), b"");
        assert_eq!(StringSerializer.serialize(&"hello".to_owned()).unwrap(), b"hello");
        // U+1F600 is four bytes in UTF-8 (Java's UTF_8 charset writes the same).
        assert_eq!(
            StringSerializer.serialize(&"\u{1F600}".to_owned()).unwrap(),
            [0xf0, 0x9f, 0x98, 0x80]
        );
        for text in ["", "x", "grüß", "\u{1F600} and \0"] {
            let bytes = StringSerializer.serialize(&text.to_owned()).unwrap();
            assert_eq!(StringSerializer.deserialize(&bytes).unwrap(), text);
        }
    }

    #[test]
    fn string_serializer_rejects_invalid_utf8_with_the_cause() {
        let err = StringSerializer.deserialize(&[b'a', 0xff]).unwrap_err();
        assert_eq!(err.to_string(), "item is not valid utf-8");
        let source = err.source().expect("a source");
        assert!(source.downcast_ref::<std::string::FromUtf8Error>().is_some());
    }

    #[test]
    fn codec_error_carries_message_and_optional_source() {
        assert_send_sync::<CodecError>();
        let plain = CodecError::new("bad item");
        assert_eq!(plain.message(), "bad item");
        assert!(plain.source().is_none());
        let from_text = CodecError::with_source("bad item", "a textual cause");
        assert_eq!(from_text.to_string(), "bad item");
        assert_eq!(from_text.source().unwrap().to_string(), "a textual cause");
    }

    #[test]
    fn serializers_are_usable_as_trait_objects() {
        let serializers: Vec<Box<dyn QueueSerializer<String>>> = vec![Box::new(StringSerializer)];
        assert_eq!(serializers[0].serialize(&"a".to_owned()).unwrap(), b"a");
    }
}
