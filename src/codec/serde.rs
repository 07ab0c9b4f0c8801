//! Serializers for any [`serde`](::serde) type (feature `serde`):
//! [`JsonSerializer`] stores JSON text, [`CompactSerializer`] a compact
//! binary form (`postcard`).

use std::fmt;
use std::marker::PhantomData;

use ::serde::de::DeserializeOwned;
use ::serde::Serialize;

use super::{CodecError, QueueSerializer};

/// Stores items as JSON text (UTF-8, no trailing newline), with `serde_json`.
///
/// The bytes are plain JSON, so a Java process sharing the queue can read
/// them with a `String` serializer and any JSON library, and write items the
/// same way.
///
/// # Examples
/// ```
/// use serde::{Deserialize, Serialize};
/// use zk_queue::{JsonSerializer, QueueSerializer};
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize)]
/// struct Job {
///     id: u32,
///     name: String,
/// }
///
/// let serializer = JsonSerializer::<Job>::new();
/// let job = Job { id: 7, name: "resize".into() };
/// let bytes = serializer.serialize(&job)?;
/// assert_eq!(bytes, br#"{"id":7,"name":"resize"}"#);
/// assert_eq!(serializer.deserialize(&bytes)?, job);
/// assert!(serializer.deserialize(b"{not json").is_err());
/// # Ok::<(), zk_queue::CodecError>(())
/// ```
///
/// A queue of such items:
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # #[derive(serde::Serialize, serde::Deserialize)]
/// # struct Job { id: u32 }
/// use zk_queue::{JsonSerializer, QueueBuilder, ZkClient};
///
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", JsonSerializer::<Job>::new()).build_queue()?;
/// queue.put(Job { id: 1 })?;
/// # Ok(())
/// # }
/// ```
pub struct JsonSerializer<T> {
    item: PhantomData<fn() -> T>,
}

/// Stores items in `postcard`'s compact binary form: small and fast, but
/// readable only by serde-based Rust code that uses the same type layout.
///
/// The form has no field names or type tags: changing the item type (adding,
/// removing or reordering fields or variants) makes stored items unreadable
/// or read differently. Prefer [`JsonSerializer`] for queues shared with
/// other languages or kept across type changes.
///
/// # Examples
/// ```
/// use serde::{Deserialize, Serialize};
/// use zk_queue::{CompactSerializer, QueueSerializer};
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize)]
/// enum Event {
///     Started { id: u32 },
///     Stopped,
/// }
///
/// let serializer = CompactSerializer::<Event>::new();
/// let bytes = serializer.serialize(&Event::Started { id: 7 })?;
/// assert_eq!(bytes, [0, 7]);
/// assert_eq!(serializer.deserialize(&bytes)?, Event::Started { id: 7 });
/// assert!(serializer.deserialize(&[9]).is_err());
/// # Ok::<(), zk_queue::CodecError>(())
/// ```
pub struct CompactSerializer<T> {
    item: PhantomData<fn() -> T>,
}

macro_rules! serde_serializer {
    ($name:ident, $label:literal) => {
        impl<T> $name<T> {
            /// A serializer for items of type `T`.
            ///
            /// ```
            /// use zk_queue::{CompactSerializer, JsonSerializer, QueueSerializer};
            /// const JSON: JsonSerializer<Vec<u32>> = JsonSerializer::new();
            /// const COMPACT: CompactSerializer<Vec<u32>> = CompactSerializer::new();
            /// assert_eq!(JSON.serialize(&vec![1, 2])?, b"[1,2]");
            /// assert_eq!(COMPACT.deserialize(&COMPACT.serialize(&vec![1, 2])?)?, [1, 2]);
            /// # Ok::<(), zk_queue::CodecError>(())
            /// ```
            pub const fn new() -> Self {
                $name { item: PhantomData }
            }
        }

        impl<T> Default for $name<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T> Copy for $name<T> {}

        impl<T> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}<{}>", stringify!($name), std::any::type_name::<T>())
            }
        }

        impl<T> QueueSerializer<T> for $name<T>
        where
            T: Serialize + DeserializeOwned + Send + Sync + 'static,
        {
            fn serialize(&self, item: &T) -> Result<Vec<u8>, CodecError> {
                $name::<T>::encode(item)
                    .map_err(|e| CodecError::with_source(concat!("item cannot be written as ", $label), e))
            }

            fn deserialize(&self, bytes: &[u8]) -> Result<T, CodecError> {
                $name::<T>::decode(bytes).map_err(|e| CodecError::with_source(concat!("item is not valid ", $label), e))
            }
        }
    };
}

serde_serializer!(JsonSerializer, "json");
serde_serializer!(CompactSerializer, "compact binary");

impl<T: Serialize + DeserializeOwned> JsonSerializer<T> {
    fn encode(item: &T) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(item)
    }

    fn decode(bytes: &[u8]) -> serde_json::Result<T> {
        serde_json::from_slice(bytes)
    }
}

impl<T: Serialize + DeserializeOwned> CompactSerializer<T> {
    fn encode(item: &T) -> postcard::Result<Vec<u8>> {
        postcard::to_stdvec(item)
    }

    /// The whole input must be one item: trailing bytes are an error.
    fn decode(bytes: &[u8]) -> postcard::Result<T> {
        match postcard::take_from_bytes(bytes)? {
            (item, []) => Ok(item),
            _ => Err(postcard::Error::DeserializeBadEncoding),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::error::Error as _;

    use ::serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Job {
        id: u64,
        name: String,
        tags: Vec<String>,
        retries: Option<u8>,
        meta: BTreeMap<String, i64>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    enum Event {
        Started,
        Progress(u8),
        Moved { from: String, to: String },
        Batch(Vec<Job>),
    }

    fn job() -> Job {
        Job {
            id: u64::MAX,
            name: "grüß \u{1F600} 日本 \0".into(),
            tags: vec!["a".into(), String::new()],
            retries: Some(3),
            meta: [("k".to_owned(), -1)].into_iter().collect(),
        }
    }

    fn events() -> Vec<Event> {
        vec![
            Event::Started,
            Event::Progress(200),
            Event::Moved {
                from: "ä".into(),
                to: "\u{10FFFF}".into(),
            },
            Event::Batch(vec![]),
            Event::Batch(vec![job(), job()]),
        ]
    }

    fn round_trips<T, S>(serializer: &S, items: &[T])
    where
        T: PartialEq + fmt::Debug,
        S: QueueSerializer<T>,
    {
        for item in items {
            let bytes = serializer.serialize(item).unwrap();
            assert_eq!(&serializer.deserialize(&bytes).unwrap(), item);
        }
    }

    fn assert_serializer<S: QueueSerializer<Job> + Default + Clone + fmt::Debug + Send + Sync>() {}

    #[test]
    fn serializers_have_the_usual_traits() {
        assert_serializer::<JsonSerializer<Job>>();
        assert_serializer::<CompactSerializer<Job>>();
        let json = JsonSerializer::<Job>::default();
        assert!(format!("{:?}", json.clone()).starts_with("JsonSerializer<"));
        assert!(format!("{:?}", CompactSerializer::<Job>::new()).contains("Job"));
    }

    #[test]
    fn json_round_trips_structs_enums_strings_and_empty_vecs() {
        round_trips(&JsonSerializer::new(), &[job()]);
        round_trips(&JsonSerializer::new(), &events());
        round_trips(
            &JsonSerializer::new(),
            &["".to_owned(), "grüß \u{1F600} \"quoted\" \n".to_owned()],
        );
        round_trips(&JsonSerializer::<Vec<u32>>::new(), &[vec![], vec![1, 2]]);
    }

    #[test]
    fn compact_round_trips_structs_enums_strings_and_empty_vecs() {
        round_trips(&CompactSerializer::new(), &[job()]);
        round_trips(&CompactSerializer::new(), &events());
        round_trips(
            &CompactSerializer::new(),
            &["".to_owned(), "grüß \u{1F600} \"quoted\" \n".to_owned()],
        );
        round_trips(&CompactSerializer::<Vec<u32>>::new(), &[vec![], vec![1, 2]]);
        assert_eq!(CompactSerializer::<Vec<u32>>::new().serialize(&vec![]).unwrap(), [0]);
    }

    #[test]
    fn compact_is_smaller_than_json() {
        let job = job();
        let json = JsonSerializer::new().serialize(&job).unwrap();
        let compact = CompactSerializer::new().serialize(&job).unwrap();
        assert!(compact.len() < json.len(), "{} vs {}", compact.len(), json.len());
    }

    #[test]
    fn malformed_json_is_a_codec_error_with_its_cause() {
        let serializer = JsonSerializer::<Job>::new();
        let inputs: [&[u8]; 6] = [b"", b"{", b"\xff\xfe", b"[1,2]", br#"{"id":"x"}"#, br#"{"id":1} extra"#];
        for input in inputs {
            let err = serializer.deserialize(input).unwrap_err();
            assert_eq!(err.to_string(), "item is not valid json");
            assert!(err.source().unwrap().downcast_ref::<serde_json::Error>().is_some());
        }
    }

    #[test]
    fn malformed_compact_bytes_are_a_codec_error_with_its_cause() {
        let serializer = CompactSerializer::<Event>::new();
        let valid = serializer.serialize(&Event::Progress(1)).unwrap();
        let mut trailing = valid.clone();
        trailing.push(0);
        let inputs: [&[u8]; 5] = [&[], &[9], &[1], &[2, 0xff], &trailing];
        for input in inputs {
            let err = serializer.deserialize(input).unwrap_err();
            assert_eq!(err.to_string(), "item is not valid compact binary", "{input:?}");
            assert!(err.source().unwrap().downcast_ref::<postcard::Error>().is_some());
        }
        // Arbitrary bytes never panic.
        let strings = CompactSerializer::<Job>::new();
        for len in 0..64u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37).wrapping_add(len)).collect();
            let _ = strings.deserialize(&bytes);
        }
    }

    #[test]
    fn unserializable_items_are_a_codec_error() {
        // JSON object keys must be strings.
        let map: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into_iter().collect();
        let err = JsonSerializer::new().serialize(&map).unwrap_err();
        assert_eq!(err.to_string(), "item cannot be written as json");
        assert!(err.source().is_some());
    }

    #[test]
    fn json_is_plain_text_a_java_string_serializer_reads() {
        let bytes = JsonSerializer::new().serialize(&job()).unwrap();
        // Java's `new String(bytes, UTF_8)`, as Curator's string serializers do.
        let text = String::from_utf8(bytes.clone()).expect("utf-8 text");
        assert!(text.starts_with('{') && text.ends_with('}'), "{text}");
        assert!(!text.contains('\n'));
        assert!(text.contains(r#""name":"grüß 😀 日本 \u0000""#), "{text}");
        // The same text any JSON library reads, and writes back byte for byte.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["id"], u64::MAX);
        assert_eq!(value["tags"], serde_json::json!(["a", ""]));
        let from_java = super::super::StringSerializer.serialize(&text).unwrap();
        assert_eq!(from_java, bytes);
        assert_eq!(JsonSerializer::<Job>::new().deserialize(&from_java).unwrap(), job());
    }
}
