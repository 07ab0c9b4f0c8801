//! Read-only inspection of queue nodes: which recipe wrote a queue's
//! children, what their names say, the order consumers take them in, and what
//! an item node holds; and coordination-recipe paths (locks, semaphores,
//! latches, barriers): who holds, leads or waits, and whether their
//! sessions still exist.
//!
//! Everything here is a pure function of names and bytes read elsewhere (for
//! example with [`ZkClient::get_children`](crate::ZkClient::get_children) and
//! [`ZkClient::get_data`](crate::ZkClient::get_data)); nothing sends a
//! request (the session survey reads replies of four-letter words sent
//! elsewhere). The `zkq` command-line tool is built on it.
//!
//! ```
//! use zk_queue::inspect::{order, Kind, Layout};
//!
//! let children = ["queue-0000000001", "lock", "queue-0000000000"];
//! let layout = Layout::detect(&children).unwrap();
//! let kind = Kind::detect(&children);
//! let items = order(&children, layout, kind);
//! let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
//! assert_eq!((layout, kind), (Layout::Curator, Kind::Plain));
//! assert_eq!(names, ["queue-0000000000", "queue-0000000001"]); // "lock" is foreign
//! ```

use std::time::SystemTime;

use crate::codec::decode_frame;
use crate::codec::trailer;
pub use crate::codec::{Death, FrameError, TrailerError};
pub use crate::naming::Kind;
use crate::naming::{
    delay_epoch, is_item, parse_id, parse_priority, parse_sequence, split_item, SequenceKey, PRIORITY_PREFIX_LEN,
    QUEUE_PREFIX,
};
pub use listing::Listing;
pub use recipe::{arrange, ChildNode, Placed, RecipeKind, Role, READY, SEMAPHORE_LEASES, SEMAPHORE_LOCKS};
pub use sessions::{learners, server_mode, sessions_in_cons, sessions_in_dump, SessionState, SessionSurvey};

mod listing;
mod recipe;
mod sessions;

/// The child of a kazoo `LockingQueue`'s node that holds its entries
/// (beside [`KAZOO_TAKEN`], its locks).
///
/// ```
/// assert_eq!(zk_queue::inspect::KAZOO_ENTRIES, "entries");
/// ```
pub const KAZOO_ENTRIES: &str = crate::naming::ENTRIES_DIR;

/// The child of a kazoo `LockingQueue`'s node that holds the locks of the
/// entries being consumed, one ephemeral node named after each entry.
///
/// ```
/// assert_eq!(zk_queue::inspect::KAZOO_TAKEN, "taken");
/// ```
pub const KAZOO_TAKEN: &str = crate::naming::TAKEN_DIR;

/// Whether `name` is an entry of one of kazoo's queues as its producers
/// name them, `entry-<ppp>-<sequence>` (the children of a `Queue`'s node, or
/// of a `LockingQueue`'s [`KAZOO_ENTRIES`]).
///
/// ```
/// use zk_queue::inspect::is_kazoo_entry;
/// assert!(is_kazoo_entry("entry-100-0000000003"));
/// assert!(!is_kazoo_entry("queue-0000000003"));
/// ```
pub fn is_kazoo_entry(name: &str) -> bool {
    crate::naming::is_kazoo_entry(name)
}

/// Prefix of the classic recipe's items.
const CLASSIC_PREFIX: &str = "qn-";

/// The layout of a queue node's children: which family of recipes wrote them.
///
/// ```
/// use zk_queue::inspect::Layout;
///
/// assert_eq!(Layout::of_name("qn-0000000004"), Some(Layout::Classic));
/// assert_eq!(Layout::of_name("queue-0000000004"), Some(Layout::Curator));
/// assert_eq!(Layout::of_name("lock"), None);
/// assert_eq!(Layout::Curator.prefix(), "queue-");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The classic ZooKeeper recipe (and Curator's `SimpleDistributedQueue`,
    /// [`SimpleQueue`](crate::SimpleQueue)): `qn-<seq>` nodes of raw bytes.
    Classic,
    /// Apache Curator's queues ([`QueueBuilder`](crate::QueueBuilder)):
    /// `queue-…` nodes holding an item frame.
    Curator,
}

impl Layout {
    /// The prefix of every item name of this layout: `qn-` or `queue-`.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::Layout::Classic.prefix(), "qn-");
    /// ```
    pub fn prefix(self) -> &'static str {
        match self {
            Layout::Classic => CLASSIC_PREFIX,
            Layout::Curator => QUEUE_PREFIX,
        }
    }

    /// The layout a child name is an item of, or `None` for a foreign name.
    ///
    /// A classic item needs a sequence the server can produce after `qn-`
    /// (the classic consumers skip other names); every `queue-` name is a
    /// Curator item, as Curator's consumers see it.
    ///
    /// ```
    /// use zk_queue::inspect::Layout;
    /// assert_eq!(Layout::of_name("queue-|job_1|0000000000"), Some(Layout::Curator));
    /// assert_eq!(Layout::of_name("qn-abc"), None);
    /// ```
    pub fn of_name(name: &str) -> Option<Layout> {
        if is_item(name) {
            Some(Layout::Curator)
        } else if classic_sequence(name).is_some() {
            Some(Layout::Classic)
        } else {
            None
        }
    }

    /// The layout of most item names among `names` (foreign names are
    /// ignored; a tie goes to [`Layout::Curator`]), or `None` if no name is an
    /// item.
    ///
    /// ```
    /// use zk_queue::inspect::Layout;
    /// assert_eq!(Layout::detect(&["qn-0000000000", "qn-0000000001", "queue-0000000000"]), Some(Layout::Classic));
    /// assert_eq!(Layout::detect(&["lock", "config"]), None);
    /// assert_eq!(Layout::detect::<&str>(&[]), None);
    /// ```
    pub fn detect<S: AsRef<str>>(names: &[S]) -> Option<Layout> {
        let (mut classic, mut curator) = (0usize, 0usize);
        for name in names {
            match Layout::of_name(name.as_ref()) {
                Some(Layout::Classic) => classic += 1,
                Some(Layout::Curator) => curator += 1,
                None => {}
            }
        }
        match (classic, curator) {
            (0, 0) => None,
            (classic, curator) if classic > curator => Some(Layout::Classic),
            _ => Some(Layout::Curator),
        }
    }
}

impl std::fmt::Display for Layout {
    /// The layout's name in lowercase: `classic` or `curator`.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::Layout::Classic.to_string(), "classic");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Classic => "classic",
            Layout::Curator => "curator",
        })
    }
}

/// What an item's node name says about it.
///
/// ```
/// use zk_queue::inspect::{ItemName, Kind, Layout};
///
/// let item = ItemName::parse("queue-0FFFFFFFF0000000001", None).unwrap();
/// assert_eq!((item.layout, item.kind), (Layout::Curator, Kind::Priority));
/// assert_eq!((item.priority, item.sequence), (Some(-1), Some(1)));
///
/// let item = ItemName::parse("queue-|18BCFE56800|0000000000", Some(Layout::Curator)).unwrap();
/// assert_eq!(item.due, Some(1_700_000_000_000));
///
/// let item = ItemName::parse("queue-|job_1_x|0000000007", None).unwrap();
/// assert_eq!(item.id.as_deref(), Some("job_1_x"));
///
/// assert_eq!(ItemName::parse("qn-0000000003", None).unwrap().sequence, Some(3));
/// assert!(ItemName::parse("qn-0000000003", Some(Layout::Curator)).is_none());
/// assert!(ItemName::parse("lock", None).is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemName {
    /// The node name.
    pub name: String,
    /// The layout the name belongs to.
    pub layout: Layout,
    /// The kind of the name ([`Kind::of_name`]); [`Kind::Plain`] for classic
    /// items.
    pub kind: Kind,
    /// The sequence the server appended, if it parses (always for classic
    /// items).
    pub sequence: Option<i64>,
    /// The priority of a priority name.
    pub priority: Option<i32>,
    /// The due time of a delay name, in epoch milliseconds (0 if the text
    /// does not parse, as in Curator).
    pub due: Option<i64>,
    /// The id of an id name, as stored (with `/` and `|` replaced by `_`).
    pub id: Option<String>,
}

impl ItemName {
    /// Parses a child name as an item of `layout` (of either layout if
    /// `None`); `None` for a name that is not such an item.
    ///
    /// ```
    /// use zk_queue::inspect::{ItemName, Kind, Layout};
    /// let item = ItemName::parse("queue-0000000042", Some(Layout::Curator)).unwrap();
    /// assert_eq!((item.kind, item.sequence), (Kind::Plain, Some(42)));
    /// assert!(ItemName::parse("queue-0000000042", Some(Layout::Classic)).is_none());
    /// ```
    pub fn parse(name: &str, layout: Option<Layout>) -> Option<ItemName> {
        let found = Layout::of_name(name)?;
        if layout.is_some_and(|wanted| wanted != found) {
            return None;
        }
        let mut item = ItemName {
            name: name.to_owned(),
            layout: found,
            kind: Kind::Plain,
            sequence: None,
            priority: None,
            due: None,
            id: None,
        };
        match found {
            Layout::Classic => item.sequence = classic_sequence(name),
            Layout::Curator => {
                item.kind = Kind::of_name(name);
                item.sequence = split_item(name).map(|(_, sequence)| sequence);
                match item.kind {
                    Kind::Plain => {}
                    Kind::Priority => {
                        item.priority = name
                            .get(QUEUE_PREFIX.len()..PRIORITY_PREFIX_LEN)
                            .and_then(parse_priority)
                    }
                    Kind::Delay => item.due = Some(delay_epoch(name)),
                    Kind::Id => item.id = parse_id(name).map(str::to_owned),
                }
            }
        }
        Some(item)
    }
}

/// The sequence of a classic item name, if the server can produce it.
fn classic_sequence(name: &str) -> Option<i64> {
    parse_sequence(name, CLASSIC_PREFIX).filter(|s| SequenceKey::new(*s).is_some())
}

/// The items among `names` in the order consumers of a `layout` queue of
/// `kind` take them; foreign names (and names of the other layout) are left
/// out.
///
/// Classic items come by sequence in creation order (across the counter's
/// sign wrap) whatever `kind` is; Curator items as Curator's consumers of
/// that kind sort them.
///
/// ```
/// use zk_queue::inspect::{order, Kind, Layout};
///
/// let names = ["queue-1000000050000000000", "queue-0FFFFFFFF0000000001", "x"];
/// let items = order(&names, Layout::Curator, Kind::Priority);
/// assert_eq!(items.iter().map(|i| i.priority).collect::<Vec<_>>(), [Some(-1), Some(5)]);
///
/// let classic = order(&["qn-0000000010", "qn-0000000009"], Layout::Classic, Kind::Plain);
/// assert_eq!(classic[0].name, "qn-0000000009");
/// ```
pub fn order<S: AsRef<str>>(names: &[S], layout: Layout, kind: Kind) -> Vec<ItemName> {
    let mut items: Vec<ItemName> = names
        .iter()
        .filter_map(|n| ItemName::parse(n.as_ref(), Some(layout)))
        .collect();
    match layout {
        Layout::Classic => items.sort_by_key(|i| i.sequence.and_then(SequenceKey::new)),
        Layout::Curator => {
            items.sort_by(|a, b| kind.order_key(&a.name).cmp(&kind.order_key(&b.name)));
        }
    }
    items
}

/// The contents of one item node.
///
/// ```
/// use zk_queue::inspect::{decode_item, Layout};
/// let item = decode_item(Layout::Classic, b"raw")?;
/// assert_eq!(item.records, [b"raw".to_vec()]);
/// assert_eq!((item.attempts, item.put_at, item.death), (0, None, None));
/// # Ok::<(), zk_queue::inspect::FrameError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodedItem {
    /// The serialized items, in order: one for a classic item or a `put`,
    /// several for a `put_multi`, none for an empty frame.
    pub records: Vec<Vec<u8>>,
    /// Failed deliveries recorded so far (by this crate's consumers; Curator
    /// does not count them); always 0 for classic items.
    pub attempts: u32,
    /// The item's first put, if recorded: an item this crate's consumers
    /// requeued keeps it; otherwise the node's creation time is the put.
    pub put_at: Option<SystemTime>,
    /// A requeued item's back-off: this crate's consumers do not deliver it
    /// before then ([`QueueBuilder::redelivery_backoff`](crate::QueueBuilder::redelivery_backoff)).
    pub not_before: Option<SystemTime>,
    /// Why the item was moved to a dead-letter path, if it was.
    pub death: Option<Death>,
    /// Why the bytes after the frame are a damaged trailer, if they are; the
    /// fields above then read as nothing recorded.
    pub trailer_error: Option<TrailerError>,
}

impl DecodedItem {
    /// Which delivery of the item the next one is (or the current one, while
    /// a consumer holds it), counted as
    /// [`ItemMeta::attempt`](crate::ItemMeta::attempt) counts it: 1 for an
    /// item never failed, 2 after one failed delivery, and so on.
    ///
    /// ```
    /// use zk_queue::inspect::{decode_item, Layout};
    /// let item = decode_item(Layout::Classic, b"raw")?;
    /// assert_eq!((item.attempts, item.attempt()), (0, 1));
    /// # Ok::<(), zk_queue::inspect::FrameError>(())
    /// ```
    pub fn attempt(&self) -> u32 {
        attempt_number(self.attempts)
    }
}

/// The number of the delivery after `failed` failed ones: the one
/// definition of an attempt, for [`DecodedItem::attempt`] and
/// [`ItemMeta::attempt`](crate::ItemMeta::attempt).
pub(crate) fn attempt_number(failed: u32) -> u32 {
    failed.saturating_add(1)
}

/// Decodes the data of an item node of `layout`: a classic item is one
/// record of raw bytes; a Curator item is an item frame, whose records and
/// the metadata this crate records after the frame are returned.
///
/// ```
/// use zk_queue::inspect::{decode_item, Layout};
/// use zk_queue::inspect::FrameError;
///
/// // What Curator's `put("x")` stores.
/// let data = [0x00, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01, b'x', 0x02];
/// let item = decode_item(Layout::Curator, &data)?;
/// assert_eq!(item.records, [b"x".to_vec()]);
///
/// // A damaged trailer leaves the records readable, and is reported.
/// let damaged = [&data[..], b"ZKQ\x03\0\0\0\x01\0\0\0\0\0"].concat();
/// let item = decode_item(Layout::Curator, &damaged)?;
/// assert_eq!((item.records.len(), item.attempts), (1, 0));
/// assert!(item.trailer_error.is_some());
///
/// let err = decode_item(Layout::Curator, b"raw bytes").unwrap_err();
/// assert!(matches!(err, FrameError::WrongVersion { .. }));
/// # Ok::<(), FrameError>(())
/// ```
///
/// # Errors
/// For a Curator item whose data is not a valid frame, the [`FrameError`]
/// naming the first deviation (Curator's consumers treat such an item as
/// corrupt). Classic items always decode; a damaged trailer is not an error
/// (see [`DecodedItem::trailer_error`]).
pub fn decode_item(layout: Layout, data: &[u8]) -> Result<DecodedItem, FrameError> {
    let mut item = DecodedItem {
        records: vec![data.to_vec()],
        attempts: 0,
        put_at: None,
        not_before: None,
        death: None,
        trailer_error: None,
    };
    if layout == Layout::Classic {
        return Ok(item);
    }
    let records = decode_frame(data)?;
    item.records = records.iter().map(|r| r.to_vec()).collect();
    match trailer::read(data, trailer::frame_len(&records)) {
        Ok(found) => {
            item.attempts = found.attempts;
            item.put_at = found.put_at.map(trailer::from_epoch_millis);
            item.not_before = found.not_before.map(trailer::from_epoch_millis);
            item.death = found.death;
        }
        Err(damage) => item.trailer_error = Some(damage),
    }
    Ok(item)
}

/// Whether `name` is the name of a shard of a sharded queue (Curator's
/// `QueueSharder` layout, [`ShardedQueue`](crate::ShardedQueue)):
/// `queue-<UUID>`.
///
/// ```
/// use zk_queue::inspect::is_shard_name;
/// assert!(is_shard_name("queue-0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0"));
/// assert!(!is_shard_name("queue-0000000003"));
/// ```
pub fn is_shard_name(name: &str) -> bool {
    name.strip_prefix(crate::naming::QUEUE_PREFIX)
        .is_some_and(crate::naming::is_uuid)
}

/// Where this crate's consumers of the queue at `queue_path` register: the
/// sibling `<queue>.consumers` (none for a queue named like a shard,
/// `queue-…`, whose consumers do not register). Its children are the
/// consumers, each an ephemeral `_c_<UUID>-consumer-<sequence>` (see
/// [`is_consumer_registration`]); each claims its own stripe of the queue's
/// sequence numbers. Nothing is added under the queue itself.
///
/// ```
/// use zk_queue::inspect::consumer_registry;
/// assert_eq!(consumer_registry("/jobs"), "/jobs.consumers");
/// ```
pub fn consumer_registry(queue_path: &str) -> String {
    crate::naming::registry_of(queue_path)
}

/// Whether `name`, a child of a [`consumer_registry`], is a consumer's
/// registration.
///
/// ```
/// use zk_queue::inspect::is_consumer_registration;
/// assert!(is_consumer_registration("_c_0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0-consumer-0000000003"));
/// assert!(!is_consumer_registration("queue-0000000003"));
/// ```
pub fn is_consumer_registration(name: &str) -> bool {
    crate::naming::is_registration(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_frame;
    use crate::naming::{delay_prefix, id_prefix, priority_prefix};

    #[test]
    fn kinds_of_every_name_the_crate_writes() {
        for p in [i32::MIN, -1, 0, 5, i32::MAX] {
            let name = format!("{}{:010}", priority_prefix(p), 3);
            let item = ItemName::parse(&name, None).unwrap();
            assert_eq!(
                (item.kind, item.priority, item.sequence),
                (Kind::Priority, Some(p), Some(3)),
                "{name}"
            );
        }
        for epoch in [1, 1000, 1_700_000_000_000] {
            let name = format!("{}{:010}", delay_prefix(epoch), 4);
            let item = ItemName::parse(&name, None).unwrap();
            assert_eq!(
                (item.kind, item.due, item.sequence),
                (Kind::Delay, Some(epoch), Some(4)),
                "{name}"
            );
        }
        for id in ["order/42", "x|y", "job"] {
            let name = format!("{}{:010}", id_prefix(id), 5);
            let item = ItemName::parse(&name, None).unwrap();
            assert_eq!(item.kind, Kind::Id, "{name}");
            assert_eq!(item.id.as_deref(), Some(crate::naming::fix_id(id).as_str()));
            assert_eq!(item.sequence, Some(5));
        }
        let item = ItemName::parse("queue--2147483648", None).unwrap();
        assert_eq!((item.kind, item.sequence), (Kind::Plain, Some(i64::from(i32::MIN))));
    }

    #[test]
    fn odd_names() {
        // Every queue- name is a Curator item, even without a sequence.
        let item = ItemName::parse("queue-x", None).unwrap();
        assert_eq!((item.kind, item.sequence), (Kind::Plain, None));
        assert_eq!(Kind::of_name("queue-|0000000001"), Kind::Plain);
        assert_eq!(Kind::of_name("queue-||0000000001"), Kind::Id);
        for name in ["qn-", "qn-x", "qn--2147483649", "Queue-1", "entry-100-0000000001"] {
            assert_eq!(ItemName::parse(name, None), None, "{name}");
        }
    }

    #[test]
    fn a_name_is_a_priority_name_only_if_its_priority_parses() {
        // Nine characters before the sequence, but not Curator's priority text.
        for name in [
            "queue-10\08\x1aqn||0",
            "queue-1000000ff0000000000",
            "queue-2000000050000000000",
        ] {
            assert_eq!(Kind::of_name(name), Kind::Plain, "{name:?}");
            let item = ItemName::parse(name, Some(Layout::Curator)).unwrap();
            assert_eq!((item.kind, item.priority), (Kind::Plain, None), "{name:?}");
        }
        let item = ItemName::parse("queue-0FFFFFFFF0000000001", None).unwrap();
        assert_eq!((item.kind, item.priority), (Kind::Priority, Some(-1)));
    }

    #[test]
    fn detection_uses_the_majority_and_ignores_foreign_names() {
        assert_eq!(
            Layout::detect(&["qn-0000000001", "queue-0000000001"]),
            Some(Layout::Curator)
        );
        assert_eq!(
            Layout::detect(&["qn-0000000001", "lock", "lock2"]),
            Some(Layout::Classic)
        );
        let names = [
            "queue-0000000009",
            "queue-|a|0000000001",
            "queue-1000000050000000000",
            "queue-1000000050000000002",
        ];
        assert_eq!(Kind::detect(&names), Kind::Priority);
        assert_eq!(
            Kind::detect(&["queue-|zz|0000000001", "queue-|00000005|0000000002"]),
            Kind::Delay
        );
    }

    #[test]
    fn order_matches_the_consumers() {
        let names = [
            "queue-|000003E8|0000000003",
            "queue-0000000009",
            "queue-|00000005|0000000004",
            "foreign",
        ];
        let sorted: Vec<String> = order(&names, Layout::Curator, Kind::Delay)
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(
            sorted,
            [
                "queue-0000000009",
                "queue-|00000005|0000000004",
                "queue-|000003E8|0000000003"
            ]
        );
        let classic = ["qn--2147483648", "qn-2147483647", "qn-0000000000", "queue-0000000001"];
        let sorted: Vec<String> = order(&classic, Layout::Classic, Kind::Plain)
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(sorted, ["qn-0000000000", "qn-2147483647", "qn--2147483648"]);
    }

    #[test]
    fn decodes_frames_with_attempts() {
        let mut frame = encode_frame([&b"a"[..], &b""[..], &b"bc"[..]]).unwrap();
        let recorded = trailer::Trailer {
            attempts: 3,
            put_at: Some(1_000),
            ..trailer::Trailer::default()
        };
        trailer::append(&mut frame, &recorded);
        let item = decode_item(Layout::Curator, &frame).unwrap();
        assert_eq!(item.records, [b"a".to_vec(), vec![], b"bc".to_vec()]);
        assert_eq!(item.attempts, 3);
        assert_eq!(item.put_at, Some(trailer::from_epoch_millis(1_000)));
        assert_eq!(item.trailer_error, None);
        assert_eq!(
            decode_item(Layout::Curator, &[0, 1, 0, 1]).unwrap_err(),
            FrameError::Truncated { len: 4 }
        );
        let raw = decode_item(Layout::Classic, &frame).unwrap();
        assert_eq!(raw.records, [frame.clone()]);
    }
}
