//! [`Listing`]: a queue node's children split into its items, in
//! consumption order, and the rest.

use super::{order, ItemName, Kind, Layout};

/// A queue node's children, split into its items (in the order consumers
/// take them) and the foreign names around them.
///
/// The layout is detected from the names ([`Layout::detect`]) unless one is
/// given, and is [`Layout::Curator`] when no name is an item; the kind of a
/// Curator queue is detected too ([`Kind::detect`]); classic items are
/// always [`Kind::Plain`].
///
/// ```
/// use zk_queue::inspect::{Kind, Layout, Listing};
///
/// let listing = Listing::of(["queue-0000000001", "lock", "queue-0000000000"], None);
/// assert_eq!((listing.layout, listing.kind), (Layout::Curator, Kind::Plain));
/// assert_eq!(listing.items[0].name, "queue-0000000000");
/// assert_eq!(listing.foreign, ["lock"]);
///
/// // A forced layout makes the other layout's names foreign.
/// let listing = Listing::of(["qn-0000000000", "queue-0000000000"], Some(Layout::Classic));
/// assert_eq!(listing.items.len(), 1);
/// assert_eq!(listing.foreign, ["queue-0000000000"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listing {
    /// The layout of the items.
    pub layout: Layout,
    /// The kind of the queue, which decides the order of its items.
    pub kind: Kind,
    /// The items, in consumption order.
    pub items: Vec<ItemName>,
    /// Every other child name, in the order listed.
    pub foreign: Vec<String>,
}

impl Listing {
    /// Splits the child names `names`; `layout` forces a layout instead of
    /// detecting one.
    ///
    /// ```
    /// use zk_queue::inspect::{Kind, Listing};
    /// let listing = Listing::of(["queue-0000000009", "queue-1000000050000000000"], None);
    /// assert_eq!(listing.kind, Kind::Priority);
    /// assert!(listing.foreign.is_empty());
    /// ```
    pub fn of<S: AsRef<str>>(names: impl IntoIterator<Item = S>, layout: Option<Layout>) -> Listing {
        let names: Vec<S> = names.into_iter().collect();
        let layout = layout.or_else(|| Layout::detect(&names)).unwrap_or(Layout::Curator);
        let kind = match layout {
            Layout::Classic => Kind::Plain,
            Layout::Curator => Kind::detect(&names),
        };
        let items = order(&names, layout, kind);
        let foreign = names
            .iter()
            .map(AsRef::as_ref)
            .filter(|name| ItemName::parse(name, Some(layout)).is_none())
            .map(str::to_owned)
            .collect();
        Listing {
            layout,
            kind,
            items,
            foreign,
        }
    }

    /// Whether the queue node has no items (it may have foreign children).
    ///
    /// ```
    /// assert!(zk_queue::inspect::Listing::of(["lock"], None).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
