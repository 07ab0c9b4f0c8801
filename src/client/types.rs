//! Plain data types of the client facade: node stats, create modes, ACLs and
//! multi operations.

/// Metadata of a znode, as ZooKeeper reports it.
///
/// ```
/// let stat = zk_queue::client::Stat::default();
/// assert_eq!(stat.num_children, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Transaction id of the change that created the node.
    pub czxid: i64,
    /// Transaction id of the last change to the node's data.
    pub mzxid: i64,
    /// Transaction id of the last change to the node's children.
    pub pzxid: i64,
    /// Creation time, epoch milliseconds (server clock).
    pub ctime: i64,
    /// Last modification time, epoch milliseconds (server clock).
    pub mtime: i64,
    /// Number of changes to the node's data.
    pub version: i32,
    /// Number of changes to the node's children; also the next sequence
    /// number a sequential child receives.
    pub cversion: i32,
    /// Number of changes to the node's ACL.
    pub aversion: i32,
    /// Session id of the owner if the node is ephemeral, else 0.
    pub ephemeral_owner: i64,
    /// Length of the node's data in bytes.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
}

/// The kind of znode to create.
///
/// ```
/// use zk_queue::client::CreateMode;
/// assert!(CreateMode::PersistentSequential.is_sequential());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Persistent, with a server-assigned 10-digit sequence appended to the name.
    PersistentSequential,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// Ephemeral, with a sequence appended.
    EphemeralSequential,
    /// Persistent, deleted by the server some time after its last child is gone.
    Container,
    /// Persistent, deleted by the server once it has had no children and no
    /// change for `ttl`; servers need `zookeeper.extendedTypesEnabled=true`.
    PersistentWithTtl {
        /// How long the node may sit unchanged and childless.
        ttl: std::time::Duration,
    },
    /// Persistent with a sequence appended, deleted by the server once it
    /// has had no children and no change for `ttl`; servers need
    /// `zookeeper.extendedTypesEnabled=true`.
    PersistentSequentialWithTtl {
        /// How long the node may sit unchanged and childless.
        ttl: std::time::Duration,
    },
}

impl CreateMode {
    /// Whether the server appends a sequence number to the name.
    ///
    /// ```
    /// use zk_queue::client::CreateMode;
    /// assert!(CreateMode::EphemeralSequential.is_sequential());
    /// assert!(!CreateMode::Container.is_sequential());
    /// ```
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl { .. }
        )
    }
}

/// Permission bits of an [`Acl`] entry (ZooKeeper's `READ`, `WRITE`, `CREATE`,
/// `DELETE`, `ADMIN`).
///
/// ```
/// use zk_queue::client::Perms;
/// let rw = Perms::READ | Perms::WRITE;
/// assert!(rw.contains(Perms::READ));
/// assert!(!rw.contains(Perms::DELETE));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Perms(u8);

impl Perms {
    /// Read data and list children.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// assert!(Perms::ALL.contains(Perms::READ));
    /// assert!(!Perms::WRITE.contains(Perms::READ));
    /// ```
    pub const READ: Perms = Perms(1);
    /// Set data.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// assert!(Perms::ALL.contains(Perms::WRITE));
    /// assert!(!Perms::READ.contains(Perms::WRITE));
    /// ```
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// assert!(Perms::ALL.contains(Perms::CREATE));
    /// assert!(!Perms::DELETE.contains(Perms::CREATE));
    /// ```
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// assert!(Perms::ALL.contains(Perms::DELETE));
    /// assert!(!Perms::CREATE.contains(Perms::DELETE));
    /// ```
    pub const DELETE: Perms = Perms(8);
    /// Set the ACL.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// assert!(Perms::ALL.contains(Perms::ADMIN));
    /// assert!(!Perms::READ.contains(Perms::ADMIN));
    /// ```
    pub const ADMIN: Perms = Perms(16);
    /// Every permission.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// let each = Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE | Perms::ADMIN;
    /// assert_eq!(each, Perms::ALL);
    /// ```
    pub const ALL: Perms = Perms(31);

    /// Whether every bit of `other` is set in `self`.
    ///
    /// ```
    /// use zk_queue::client::Perms;
    /// let rw = Perms::READ | Perms::WRITE;
    /// assert!(rw.contains(Perms::WRITE));
    /// assert!(!Perms::READ.contains(rw));
    /// ```
    pub fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }

    /// The bits as ZooKeeper's records carry them.
    pub(crate) fn bits(self) -> i32 {
        i32::from(self.0)
    }

    /// Permissions from ZooKeeper's bits (unknown bits are dropped).
    pub(crate) fn from_bits(bits: i32) -> Perms {
        Perms((bits & i32::from(Perms::ALL.0)) as u8)
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

/// One entry of a node's access-control list: who (`scheme` and `id`) may do what.
///
/// A node's ACL is a list of entries; a client may do what any entry that
/// matches one of its identities allows. The schemes ZooKeeper ships:
/// - `world:anyone`: every client ([`Acl::anyone_all`]);
/// - `digest:<user>:<hash>`: clients that authenticated as that user and
///   password ([`Acl::digest`], with [`ZkClientBuilder::add_auth`](crate::ZkClientBuilder::add_auth));
/// - `ip:<address>[/<bits>]`: clients connecting from that address or network
///   ([`Acl::ip`]);
/// - `auth`: on create, the identities the creating client authenticated with
///   ([`Acl::creator_all`]); the server stores those instead.
///
/// ```
/// use zk_queue::{client::{Acl, Perms}};
/// let open = Acl::anyone_all();
/// assert_eq!(open.scheme(), "world");
/// let mine = Acl::digest("alice", "secret", Perms::ALL);
/// assert_eq!(mine.id(), "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acl {
    perms: Perms,
    scheme: String,
    id: String,
}

impl Acl {
    /// An entry granting `perms` to `id` under `scheme` (`world`, `auth`,
    /// `digest`, `ip`, ...).
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let acl = Acl::new(Perms::READ, "ip", "10.0.0.0/8");
    /// assert_eq!((acl.scheme(), acl.id()), ("ip", "10.0.0.0/8"));
    /// ```
    pub fn new(perms: Perms, scheme: impl Into<String>, id: impl Into<String>) -> Acl {
        Acl {
            perms,
            scheme: scheme.into(),
            id: id.into(),
        }
    }

    /// Everything for everyone (`world:anyone`), ZooKeeper's `OPEN_ACL_UNSAFE`.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let open = Acl::anyone_all();
    /// assert_eq!((open.scheme(), open.id(), open.perms()), ("world", "anyone", Perms::ALL));
    /// ```
    pub fn anyone_all() -> Acl {
        Acl::new(Perms::ALL, "world", "anyone")
    }

    /// Everything for the identities this client authenticated with
    /// (`auth` scheme), ZooKeeper's `CREATOR_ALL_ACL`.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let mine = Acl::creator_all();
    /// assert_eq!((mine.scheme(), mine.perms()), ("auth", Perms::ALL));
    /// ```
    pub fn creator_all() -> Acl {
        Acl::new(Perms::ALL, "auth", "")
    }

    /// `perms` for clients that authenticated as `user` with `password`
    /// (ZooKeeper's `digest` scheme): the entry stores
    /// `user:base64(sha1("user:password"))`, exactly as ZooKeeper's
    /// `DigestAuthenticationProvider.generateDigest` does, so the password
    /// itself is never sent in the ACL. A client proves the identity with
    /// `add_auth("digest", b"user:password")`
    /// ([`ZkClientBuilder::add_auth`](crate::ZkClientBuilder::add_auth)).
    ///
    /// ZooKeeper splits the credentials at the first `:`, so a user name
    /// containing `:` can never authenticate.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let acl = Acl::digest("user", "password", Perms::READ | Perms::WRITE);
    /// assert_eq!(acl.scheme(), "digest");
    /// assert_eq!(acl.id(), "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=");
    /// ```
    pub fn digest(user: &str, password: &str, perms: Perms) -> Acl {
        use base64::Engine as _;
        use sha1::Digest as _;
        let hash = sha1::Sha1::digest(format!("{user}:{password}").as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(hash);
        Acl::new(perms, "digest", format!("{user}:{hash}"))
    }

    /// `perms` for clients connecting from `address`: one IPv4 or IPv6
    /// address, or a network in CIDR notation (`10.0.0.0/8`). ZooKeeper
    /// matches the address the server sees, so clients behind a proxy or NAT
    /// count as the proxy's address.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let local = Acl::ip("127.0.0.1", Perms::ALL);
    /// assert_eq!((local.scheme(), local.id()), ("ip", "127.0.0.1"));
    /// let office = Acl::ip("10.1.0.0/16", Perms::READ);
    /// assert_eq!(office.id(), "10.1.0.0/16");
    /// ```
    pub fn ip(address: &str, perms: Perms) -> Acl {
        Acl::new(perms, "ip", address)
    }

    /// The granted permissions.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// let acl = Acl::new(Perms::READ | Perms::WRITE, "world", "anyone");
    /// assert!(acl.perms().contains(Perms::WRITE));
    /// ```
    pub fn perms(&self) -> Perms {
        self.perms
    }

    /// The scheme.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// assert_eq!(Acl::new(Perms::ALL, "digest", "alice:hash").scheme(), "digest");
    /// ```
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The id within the scheme.
    ///
    /// ```
    /// use zk_queue::{client::{Acl, Perms}};
    /// assert_eq!(Acl::new(Perms::ALL, "digest", "alice:hash").id(), "alice:hash");
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// One operation of a [`multi`](crate::ZkClient::multi) transaction.
///
/// ```
/// use zk_queue::{client::{Acl, CreateMode, Op, Perms}};
/// let ops = vec![
///     Op::check("/q/lock", 0),
///     Op::delete("/q/item", None),
///     Op::create("/q/next-", b"x".to_vec(), CreateMode::PersistentSequential),
///     Op::create_with_acl(
///         "/q/private-",
///         b"y".to_vec(),
///         CreateMode::PersistentSequential,
///         vec![Acl::digest("alice", "secret", Perms::ALL)],
///     ),
/// ];
/// assert_eq!(ops.len(), 4);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Create a node.
    Create {
        /// Path (a prefix for sequential modes).
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Kind of node.
        mode: CreateMode,
        /// The new node's ACL; `None` for the client's default ACL
        /// ([`ZkClientBuilder::default_acl`](crate::ZkClientBuilder::default_acl)).
        acl: Option<Vec<Acl>>,
    },
    /// Delete a node, optionally only at a given version.
    Delete {
        /// Path.
        path: String,
        /// Expected version, or `None` for any.
        version: Option<i32>,
    },
    /// Replace a node's data, optionally only at a given version.
    SetData {
        /// Path.
        path: String,
        /// New data.
        data: Vec<u8>,
        /// Expected version, or `None` for any.
        version: Option<i32>,
    },
    /// Fail the transaction unless the node has this version.
    Check {
        /// Path.
        path: String,
        /// Required version.
        version: i32,
    },
}

impl Op {
    /// A create operation; the node gets the client's default ACL.
    ///
    /// ```
    /// use zk_queue::{client::{CreateMode, Op}};
    /// let op = Op::create("/jobs/queue-", b"job".to_vec(), CreateMode::PersistentSequential);
    /// assert_eq!(op.path(), "/jobs/queue-");
    /// ```
    pub fn create(path: impl Into<String>, data: Vec<u8>, mode: CreateMode) -> Op {
        Op::Create {
            path: path.into(),
            data,
            mode,
            acl: None,
        }
    }

    /// A create operation whose node gets `acl` (which must not be empty: the
    /// multi fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// before sending otherwise).
    ///
    /// ```
    /// use zk_queue::{client::{Acl, CreateMode, Op, Perms}};
    /// let acl = vec![Acl::digest("alice", "secret", Perms::ALL)];
    /// let op = Op::create_with_acl("/jobs/queue-", b"job".to_vec(), CreateMode::PersistentSequential, acl.clone());
    /// assert!(matches!(op, Op::Create { acl: Some(a), .. } if a == acl));
    /// ```
    pub fn create_with_acl(path: impl Into<String>, data: Vec<u8>, mode: CreateMode, acl: Vec<Acl>) -> Op {
        Op::Create {
            path: path.into(),
            data,
            mode,
            acl: Some(acl),
        }
    }

    /// A delete operation.
    ///
    /// ```
    /// use zk_queue::client::Op;
    /// let op = Op::delete("/jobs/queue-0000000001", Some(0));
    /// assert_eq!(op, Op::Delete { path: "/jobs/queue-0000000001".into(), version: Some(0) });
    /// ```
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Delete {
            path: path.into(),
            version,
        }
    }

    /// A set-data operation.
    ///
    /// ```
    /// use zk_queue::client::Op;
    /// let op = Op::set_data("/config", b"v2".to_vec(), None);
    /// assert_eq!(op.path(), "/config");
    /// ```
    pub fn set_data(path: impl Into<String>, data: Vec<u8>, version: Option<i32>) -> Op {
        Op::SetData {
            path: path.into(),
            data,
            version,
        }
    }

    /// A version check.
    ///
    /// ```
    /// use zk_queue::client::Op;
    /// let op = Op::check("/jobs-locks/queue-0000000001", 0);
    /// assert_eq!(op, Op::Check { path: "/jobs-locks/queue-0000000001".into(), version: 0 });
    /// ```
    pub fn check(path: impl Into<String>, version: i32) -> Op {
        Op::Check {
            path: path.into(),
            version,
        }
    }

    /// The path the operation concerns.
    ///
    /// ```
    /// use zk_queue::client::Op;
    /// assert_eq!(Op::delete("/jobs/a", None).path(), "/jobs/a");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. } | Op::Delete { path, .. } | Op::SetData { path, .. } | Op::Check { path, .. } => {
                path
            }
        }
    }
}

/// The result of one operation of a successful multi.
///
/// ```
/// use zk_queue::client::OpResult;
/// let r = OpResult::Delete;
/// assert!(matches!(r, OpResult::Delete));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpResult {
    /// The node was created at this path.
    Create {
        /// The created path (with the sequence for sequential modes).
        path: String,
    },
    /// The node was deleted.
    Delete,
    /// The data was replaced.
    SetData {
        /// The node's new stat.
        stat: Stat,
    },
    /// The check passed.
    Check,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_ids_match_zookeepers_digest_provider() {
        // Printed by ZooKeeper 3.8's own tool:
        // java -cp '/usr/share/java/*' org.apache.zookeeper.server.auth.DigestAuthenticationProvider <user:password>
        for (user, password, id) in [
            ("user", "password", "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="),
            ("alice", "secret", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="),
            ("user", "pw", "user:2Om+GBbT2q/tS6pdvACZbbm7/1A="),
            // The password may contain ':'; only the user name may not.
            ("bob", "p@ss:w0rd", "bob:0B04r32294cSxxTz+GYobgbsaHI="),
        ] {
            let acl = Acl::digest(user, password, Perms::READ);
            assert_eq!((acl.scheme(), acl.id(), acl.perms()), ("digest", id, Perms::READ));
        }
    }

    #[test]
    fn ip_entries_keep_the_address_or_network() {
        assert_eq!(
            Acl::ip("127.0.0.1", Perms::ALL),
            Acl::new(Perms::ALL, "ip", "127.0.0.1")
        );
        assert_eq!(Acl::ip("10.0.0.0/8", Perms::READ).id(), "10.0.0.0/8");
        assert_eq!(Acl::ip("::1", Perms::ALL).id(), "::1");
    }

    #[test]
    fn permission_bits_are_zookeepers() {
        assert_eq!(Perms::READ.bits(), 1);
        assert_eq!((Perms::CREATE | Perms::ADMIN).bits(), 20);
        assert_eq!(Perms::from_bits(31), Perms::ALL);
        assert_eq!(Perms::from_bits(-1), Perms::ALL);
        assert_eq!(Perms::from_bits(64), Perms(0));
    }
}
