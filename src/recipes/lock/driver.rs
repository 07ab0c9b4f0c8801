//! What tells Curator's locks apart (its `LockInternalsDriver`s): the name
//! a participant's node is created with, the order of the nodes, and whether
//! a participant holds or which node it watches until it may.

use crate::client::{CreateMode, Session};
use crate::recipes::names::{self, LOCK, READ, WRITE};

/// The rules of one kind of participant of a lock path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Driver {
    /// `InterProcessMutex` (and the semaphores on it): `lock-` nodes; a
    /// participant holds when fewer than `max_leases` nodes come before its
    /// own, and watches the `max_leases`-th before it.
    Mutex { max_leases: usize },
    /// The write lock of `InterProcessReadWriteLock`: `__WRIT__` nodes,
    /// ordered with the readers' by their sequences; a writer holds when its
    /// node is first, and watches the node just before it.
    Write,
    /// Its read lock: `__READ__` nodes; a reader holds when no writer's
    /// node comes before its own, and watches the first writer's.
    Read,
    /// The read lock taken by a thread that holds the write lock: a
    /// `__READ__` node with the write node's `sequence` (not a new one from
    /// the server), which holds at once. It sorts with the write node, ahead
    /// of every participant that was waiting when it was taken, so releasing
    /// the write lock lets no waiting writer in while the read lock is held
    /// (the fix of CURATOR-621, as Curator 5.5 makes it). It is created only
    /// in the write node's `session`: in another, the write node may be
    /// gone and another writer hold. Its fencing token is the write node's
    /// creation zxid, `czxid`, not its own: in that node's place, it comes
    /// before the writers that wait, whose tokens must stay larger.
    ReadBesideWrite {
        sequence: String,
        session: Session,
        czxid: i64,
    },
}

/// What one look at the line says of a participant's node.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It holds.
    Holds,
    /// It waits until the node at this index in the line changes or goes.
    Watch(usize),
}

impl Driver {
    /// The read lock of the thread whose write node is `write_node` (its
    /// name), created in `session` with the creation zxid `czxid`.
    pub(crate) fn read_beside(write_node: &str, session: Session, czxid: i64) -> Driver {
        Driver::ReadBesideWrite {
            sequence: names::sort_key(write_node, &[WRITE]).to_owned(),
            session,
            czxid,
        }
    }

    /// The fencing token of the nodes it creates, if not their own creation
    /// zxid.
    pub(crate) fn czxid(&self) -> Option<i64> {
        match self {
            Driver::ReadBesideWrite { czxid, .. } => Some(*czxid),
            _ => None,
        }
    }

    /// The only session its nodes may be created in, if it has one.
    pub(crate) fn session(&self) -> Option<Session> {
        match self {
            Driver::ReadBesideWrite { session, .. } => Some(*session),
            _ => None,
        }
    }

    /// The lock name in its nodes' names.
    pub(crate) fn lock_name(&self) -> &'static str {
        match self {
            Driver::Mutex { .. } => LOCK,
            Driver::Write => WRITE,
            Driver::Read | Driver::ReadBesideWrite { .. } => READ,
        }
    }

    /// What its participants are called in the log.
    pub(crate) fn recipe(&self) -> &'static str {
        match self {
            Driver::Mutex { .. } => "mutex",
            Driver::Write => "write lock",
            Driver::Read | Driver::ReadBesideWrite { .. } => "read lock",
        }
    }

    /// The name to create a node with after `protected_prefix`, and its
    /// mode: sequential (the server appends the sequence) unless the
    /// sequence is given.
    pub(crate) fn node_name(&self, protected_prefix: &str) -> (String, CreateMode) {
        let name = names::node_name(protected_prefix, self.lock_name());
        match self {
            Driver::ReadBesideWrite { sequence, .. } => (format!("{name}{sequence}"), CreateMode::Ephemeral),
            _ => (name, CreateMode::EphemeralSequential),
        }
    }

    /// The children of the lock path in the order they hold.
    pub(crate) fn sorted(&self, children: Vec<String>) -> Vec<String> {
        match self {
            Driver::Mutex { .. } => names::sorted(children, &[LOCK]),
            _ => names::sorted(children, &[READ, WRITE]),
        }
    }

    /// Whether a participant that waits for the node at `before` in the line
    /// holds once that node is deleted, without looking at the line again:
    /// for a mutex, when that node was the first. The nodes before its own
    /// were then `max_leases` (it watches the `max_leases`-th before it);
    /// with the first gone, fewer are left, and no node can come before them
    /// again: the server gives a new node a larger sequence than every node
    /// before it under the path (the path cannot go and start them over
    /// while a node is under it), and a deleted node does not come back.
    /// Not for the read-write lock: the read node its write holder takes
    /// sorts with the write node, ahead of nodes made before it.
    pub(crate) fn holds_once_deleted(&self, before: usize) -> bool {
        matches!(self, Driver::Mutex { .. }) && before == 0
    }

    /// The node (by its place in the line) a waiter for the node at
    /// `before` also watches, so that the node it waits for is the first
    /// at its turn (see `lead.rs`), if any: for a mutex, the first when it
    /// waits for the second (that node's deletion makes the second the
    /// first), and two before the node it waits for when it waits further
    /// back (that node's deletion means another look at the line).
    pub(crate) fn watch_ahead(&self, before: usize) -> Option<usize> {
        match self {
            Driver::Mutex { .. } if before == 1 => Some(0),
            Driver::Mutex { .. } => before.checked_sub(2),
            _ => None,
        }
    }

    /// Whether the node at `ours` in the `sorted` line holds, or which node
    /// it waits for (Curator's `getsTheLock`).
    pub(crate) fn verdict(&self, sorted: &[String], ours: usize) -> Verdict {
        let leases = |max_leases: usize| match ours.checked_sub(max_leases) {
            None => Verdict::Holds,
            Some(before) => Verdict::Watch(before),
        };
        match self {
            Driver::Mutex { max_leases } => leases(*max_leases),
            Driver::Write => leases(1),
            Driver::Read => match sorted[..ours].iter().position(|name| name.contains(WRITE)) {
                None => Verdict::Holds,
                Some(writer) => Verdict::Watch(writer),
            },
            Driver::ReadBesideWrite { .. } => Verdict::Holds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_mutex_participant_holds_within_its_leases_and_watches_the_last_lease_before_it() {
        let line = line(&["a-lock-1", "b-lock-2", "c-lock-3"]);
        assert_eq!(Driver::Mutex { max_leases: 1 }.verdict(&line, 0), Verdict::Holds);
        assert_eq!(Driver::Mutex { max_leases: 1 }.verdict(&line, 2), Verdict::Watch(1));
        assert_eq!(Driver::Mutex { max_leases: 2 }.verdict(&line, 1), Verdict::Holds);
        assert_eq!(Driver::Mutex { max_leases: 2 }.verdict(&line, 2), Verdict::Watch(0));
    }

    #[test]
    fn only_a_mutex_waiter_on_the_first_node_holds_once_it_is_deleted() {
        assert!(Driver::Mutex { max_leases: 1 }.holds_once_deleted(0));
        assert!(!Driver::Mutex { max_leases: 1 }.holds_once_deleted(1));
        // With two leases, the third waits on the first: once it goes, one
        // node is left before it.
        let line = line(&["a-lock-1", "b-lock-2", "c-lock-3"]);
        assert_eq!(Driver::Mutex { max_leases: 2 }.verdict(&line, 2), Verdict::Watch(0));
        assert!(Driver::Mutex { max_leases: 2 }.holds_once_deleted(0));
        assert_eq!(Driver::Mutex { max_leases: 2 }.verdict(&line[1..], 1), Verdict::Holds);
        assert!(!Driver::Write.holds_once_deleted(0));
        assert!(!Driver::Read.holds_once_deleted(0));
    }

    #[test]
    fn a_reader_waits_only_for_the_first_writer_before_it_and_a_writer_for_anyone() {
        let line = line(&[
            "_c_a-__READ__0000000000",
            "_c_b-__WRIT__0000000001",
            "_c_c-__READ__0000000002",
            "_c_d-__WRIT__0000000003",
            "_c_e-__READ__0000000004",
        ]);
        assert_eq!(Driver::Read.verdict(&line, 0), Verdict::Holds);
        assert_eq!(Driver::Read.verdict(&line, 2), Verdict::Watch(1));
        assert_eq!(Driver::Read.verdict(&line, 4), Verdict::Watch(1));
        assert_eq!(Driver::Write.verdict(&line, 1), Verdict::Watch(0));
        assert_eq!(Driver::Write.verdict(&line, 3), Verdict::Watch(2));
        assert_eq!(Driver::Write.verdict(&line[1..], 0), Verdict::Holds);
    }

    #[test]
    fn the_write_holder_s_read_node_takes_the_write_node_s_place_in_the_line() {
        let driver = Driver::read_beside("_c_b-__WRIT__0000000001", Session::of_epoch(7), 0x100);
        assert_eq!(driver.verdict(&[], 0), Verdict::Holds);
        let (name, mode) = driver.node_name("_c_f-");
        assert_eq!(
            (name.as_str(), mode),
            ("_c_f-__READ__0000000001", CreateMode::Ephemeral)
        );
        // A writer that was waiting behind the write node still waits once
        // it is gone: the read node is before it.
        let line = driver.sorted(line(&["_c_d-__WRIT__0000000002", "_c_f-__READ__0000000001"]));
        assert_eq!(line[0], "_c_f-__READ__0000000001");
        assert_eq!(Driver::Write.verdict(&line, 1), Verdict::Watch(0));
        let (name, mode) = Driver::Read.node_name("_c_f-");
        assert_eq!(
            (name.as_str(), mode),
            ("_c_f-__READ__", CreateMode::EphemeralSequential)
        );
    }
}
