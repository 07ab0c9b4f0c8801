//! Access control against a real server: queues whose nodes carry a digest
//! or IP ACL, and clients without the right identity, which must be denied
//! with a typed error and must change nothing.
//!
//! Each test works under its own open base node, so the protected nodes never
//! include a parent that other tests create children in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_queue::{
    Acl, ConsumeError, CreateMode, DistributedQueue, Error, Perms, QueueBuilder, QueueConsumer, SimpleQueue,
    StringSerializer, ZkClient,
};

use crate::support::client;
use crate::support::queues::{producer, started};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};

const WAIT: Duration = Duration::from_secs(30);

/// The identity the protected nodes admit.
const USER: &str = "user";
const PASSWORD: &str = "pw";

/// The protected nodes' ACL: everything for `USER`, nothing for anyone else.
fn owner_acl() -> Vec<Acl> {
    vec![Acl::digest(USER, PASSWORD, Perms::ALL)]
}

/// A client authenticated with `credentials` (`user:password`), or with none.
fn client_with(credentials: Option<&str>) -> ZkClient {
    let mut builder = ZkClient::builder(&shared_connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10));
    if let Some(credentials) = credentials {
        builder = builder.add_auth("digest", credentials.as_bytes());
    }
    builder.connect().unwrap()
}

fn owner() -> ZkClient {
    client_with(Some(&format!("{USER}:{PASSWORD}")))
}

/// A new open node under which one test creates everything it protects.
fn open_base(name: &str) -> String {
    let base = unique_path(name);
    client().ensure_path(&base).unwrap();
    base
}

fn assert_denied<T: std::fmt::Debug>(what: &str, result: zk_queue::Result<T>) {
    assert!(
        matches!(result, Err(Error::NotAuthorized { .. })),
        "{what}: expected NotAuthorized, got {result:?}"
    );
}

/// A protected lock-safe queue and the paths of its nodes.
struct Protected {
    queue: String,
    locks: String,
    dead: String,
}

impl Protected {
    /// A queue builder on the protected paths with the protected ACL.
    fn builder(&self, client: &ZkClient) -> QueueBuilder<String> {
        producer(client, &self.queue)
            .lock_path(&self.locks)
            .dead_letter_path(&self.dead)
            .acl(owner_acl())
    }

    /// Every item node's name and bytes, in name order, read by `owner`.
    fn snapshot(&self, owner: &ZkClient) -> Vec<(String, Vec<u8>)> {
        let (mut names, _) = owner.get_children(&self.queue).unwrap();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let (data, _) = owner.get_data(&format!("{}/{name}", self.queue)).unwrap();
                (name, data)
            })
            .collect()
    }
}

/// Creates a protected queue holding three items (one node each) through
/// `owner`, and returns it with its snapshot.
fn protected_queue(owner: &ZkClient, name: &str) -> (Protected, Vec<(String, Vec<u8>)>) {
    let base = open_base(name);
    let protected = Protected {
        queue: format!("{base}/queue"),
        locks: format!("{base}/locks"),
        dead: format!("{base}/dead"),
    };
    let queue = started(protected.builder(owner).build_queue());
    for item in ["a", "b", "c"] {
        queue.put(item.to_string()).unwrap();
    }
    queue.close();
    let snapshot = protected.snapshot(owner);
    assert_eq!(snapshot.len(), 3);
    (protected, snapshot)
}

/// A consumer that records every error it is told of and counts items.
#[derive(Clone, Default)]
struct ErrorLog {
    consumed: Arc<AtomicUsize>,
    errors: Arc<Mutex<Vec<(bool, String)>>>,
}

impl ErrorLog {
    /// Waits until `n` errors were reported; panics after `within`.
    fn wait_for_errors(&self, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.errors.lock().len() < n {
            assert!(Instant::now() < deadline, "fewer than {n} errors within {within:?}");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl QueueConsumer<String> for ErrorLog {
    fn consume(&self, _item: String) -> Result<(), ConsumeError> {
        self.consumed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn error(&self, error: &Error) {
        let denied = matches!(error, Error::NotAuthorized { .. });
        self.errors.lock().push((denied, error.to_string()));
    }
}

/// Every way `stranger` could read, take, delete or add items of the
/// protected queue, each of which must fail with `NotAuthorized`.
fn assert_stranger_is_denied(stranger: &ZkClient, protected: &Protected, snapshot: &[(String, Vec<u8>)]) {
    let item = format!("{}/{}", protected.queue, snapshot[0].0);
    assert_denied("get_children", stranger.get_children(&protected.queue));
    assert_denied("get_data", stranger.get_data(&item));
    assert_denied("delete", stranger.delete(&item, None));
    assert_denied(
        "create",
        stranger.create(
            &format!("{}/queue-", protected.queue),
            b"x",
            CreateMode::PersistentSequential,
        ),
    );

    // A producer: starting finds the nodes there; putting is denied.
    let queue: DistributedQueue<String> = started(producer(stranger, &protected.queue).build_queue());
    assert_denied("put", queue.put("intruder".to_string()));
    assert_denied("depth", queue.depth());
    queue.close();

    // A lock-safe consumer is told through `error`, with back-off.
    let log = ErrorLog::default();
    let started_at = Instant::now();
    let consumer = started(
        QueueBuilder::new(stranger, &protected.queue, StringSerializer)
            .consumer(log.clone())
            .lock_path(&protected.locks)
            .build_queue(),
    );
    log.wait_for_errors(3, WAIT);
    thread::sleep(Duration::from_millis(500));
    consumer.close();
    let elapsed = started_at.elapsed();
    let errors = log.errors.lock().clone();
    assert!(errors.iter().all(|(denied, _)| *denied), "{errors:?}");
    // 100 ms, 200 ms, 400 ms... between scans: a handful, not a hot loop.
    let bound = 2 + (elapsed.as_millis() / 100) as usize;
    assert!(errors.len() <= bound.min(12), "{} errors in {elapsed:?}", errors.len());
    assert_eq!(log.consumed.load(Ordering::SeqCst), 0);

    // A pull consumer in plain mode: its take returns the denial.
    let (builder, receiver) = QueueBuilder::new(stranger, &protected.queue, StringSerializer).pull_consumer();
    let pulled = started(builder.build_queue());
    match receiver.take_timeout(WAIT) {
        Err(Error::NotAuthorized { path }) => assert_eq!(path, protected.queue),
        other => panic!("pull take: expected NotAuthorized, got {other:?}"),
    }
    pulled.close();
}

/// After the denials: the same items with the same bytes, no lock and no dead
/// letter left, and the owner consumes every item.
fn assert_untouched_then_consumed(owner: &ZkClient, protected: &Protected, snapshot: &[(String, Vec<u8>)]) {
    assert_eq!(protected.snapshot(owner), snapshot, "the items changed");
    assert_eq!(
        owner.get_children(&protected.locks).unwrap().0,
        Vec::<String>::new(),
        "a lock was left"
    );
    assert_eq!(
        owner.get_children(&protected.dead).unwrap().0,
        Vec::<String>::new(),
        "an item moved"
    );
    let recorder = Recorder::new();
    let _consumer = started(protected.builder(owner).consumer(recorder.clone()).build_queue());
    assert_eq!(recorder.wait_for(3, WAIT), ["a", "b", "c"]);
    assert!(recorder.errors().is_empty(), "{:?}", recorder.errors());
}

#[test]
fn a_protected_queue_denies_a_client_without_credentials_and_keeps_every_item() {
    let owner = owner();
    let (protected, snapshot) = protected_queue(&owner, "acl-no-credentials");
    assert_stranger_is_denied(&client_with(None), &protected, &snapshot);
    assert_untouched_then_consumed(&owner, &protected, &snapshot);
}

#[test]
fn a_protected_queue_denies_a_client_with_the_wrong_password() {
    let owner = owner();
    let (protected, snapshot) = protected_queue(&owner, "acl-wrong-password");
    // ZooKeeper accepts any digest credentials; they just match no entry.
    let stranger = client_with(Some(&format!("{USER}:not-{PASSWORD}")));
    assert_stranger_is_denied(&stranger, &protected, &snapshot);
    assert_untouched_then_consumed(&owner, &protected, &snapshot);
}

#[test]
fn a_read_only_client_can_read_but_neither_take_nor_lock() {
    let owner = owner();
    let base = open_base("acl-read-only");
    let protected = Protected {
        queue: format!("{base}/queue"),
        locks: format!("{base}/locks"),
        dead: format!("{base}/dead"),
    };
    let acl = vec![
        Acl::digest(USER, PASSWORD, Perms::ALL),
        Acl::new(Perms::READ, "world", "anyone"),
    ];
    let queue = started(protected.builder(&owner).acl(acl).build_queue());
    for item in ["a", "b", "c"] {
        queue.put(item.to_string()).unwrap();
    }
    queue.close();
    let snapshot = protected.snapshot(&owner);
    let reader = client_with(None);
    assert_eq!(protected.snapshot(&reader), snapshot, "reading is allowed");

    // Plain mode reads the items but may not delete (claim) them: each is
    // reported and left in place, and the consumer waits for a change.
    let plain = ErrorLog::default();
    let consumer = started(
        QueueBuilder::new(&reader, &protected.queue, StringSerializer)
            .consumer(plain.clone())
            .build_queue(),
    );
    plain.wait_for_errors(3, WAIT);
    thread::sleep(Duration::from_millis(500));
    consumer.close();
    let errors = plain.errors.lock().clone();
    assert!(errors.iter().all(|(denied, _)| *denied), "{errors:?}");
    assert_eq!(errors.len(), 3, "one report per item, then quiet: {errors:?}");
    assert_eq!(plain.consumed.load(Ordering::SeqCst), 0);

    // Lock-safe mode may not create locks.
    let locking = ErrorLog::default();
    let consumer = started(
        QueueBuilder::new(&reader, &protected.queue, StringSerializer)
            .consumer(locking.clone())
            .lock_path(&protected.locks)
            .build_queue(),
    );
    locking.wait_for_errors(2, WAIT);
    consumer.close();
    let errors = locking.errors.lock().clone();
    assert!(errors.iter().all(|(denied, _)| *denied), "{errors:?}");
    assert_eq!(locking.consumed.load(Ordering::SeqCst), 0);

    assert_untouched_then_consumed(&owner, &protected, &snapshot);
}

#[test]
fn every_node_the_queue_creates_carries_its_acl() {
    let owner = owner();
    let base = open_base("acl-every-node");
    // `deep` is missing: the queue creates it as an ancestor.
    let protected = Protected {
        queue: format!("{base}/deep/queue"),
        locks: format!("{base}/locks"),
        dead: format!("{base}/dead"),
    };
    let acl = owner_acl();
    let acl_of = |path: &str| owner.get_acl(path).unwrap_or_else(|e| panic!("{path}: {e}")).0;
    let (builder, receiver) = protected.builder(&owner).max_attempts(2).pull_consumer();
    let queue = started(builder.build_queue());
    for node in [
        &format!("{base}/deep"),
        &protected.queue,
        &protected.locks,
        &protected.dead,
    ] {
        assert_eq!(acl_of(node), acl, "{node}");
    }
    queue.put("x".to_string()).unwrap();
    let (names, _) = owner.get_children(&protected.queue).unwrap();
    let [first] = names.as_slice() else { panic!("{names:?}") };
    assert_eq!(acl_of(&format!("{}/{first}", protected.queue)), acl, "a put item");

    // Held: its lock node exists.
    let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
    let (locks, _) = owner.get_children(&protected.locks).unwrap();
    assert_eq!(locks, std::slice::from_ref(first));
    assert_eq!(acl_of(&format!("{}/{first}", protected.locks)), acl, "a lock node");

    // Requeued, in a multi, under a new name.
    delivery.nack("first failure");
    let requeued = wait_for_child(&owner, &protected.queue, |name| name != first);
    assert_eq!(
        acl_of(&format!("{}/{requeued}", protected.queue)),
        acl,
        "a requeued item"
    );

    // The second failure moves it to the dead-letter path, in a multi.
    let delivery = receiver.take_timeout(WAIT).unwrap().expect("the requeued item");
    delivery.nack("second failure");
    let dead = wait_for_child(&owner, &protected.dead, |_| true);
    assert_eq!(acl_of(&format!("{}/{dead}", protected.dead)), acl, "a dead letter");
    queue.close();
}

#[test]
fn a_background_put_node_carries_the_queues_acl() {
    let owner = owner();
    let path = format!("{}/queue", open_base("acl-background-put"));
    let queue = started(
        QueueBuilder::new(&owner, &path, StringSerializer)
            .put_in_background(true)
            .acl(owner_acl())
            .build_queue(),
    );
    queue.put("x".to_string()).unwrap();
    assert!(queue.flush_puts(WAIT).unwrap());
    let (names, _) = owner.get_children(&path).unwrap();
    let [item] = names.as_slice() else { panic!("{names:?}") };
    assert_eq!(owner.get_acl(&format!("{path}/{item}")).unwrap().0, owner_acl());
}

/// Waits until `parent` has a child for which `wanted` holds, and returns it.
fn wait_for_child(client: &ZkClient, parent: &str, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let (names, _) = client.get_children(parent).unwrap();
        if let Some(name) = names.into_iter().find(|n| wanted(n)) {
            return name;
        }
        assert!(
            Instant::now() < deadline,
            "no matching child of {parent} within {WAIT:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_ip_acl_admits_loopback_clients_and_denies_other_addresses() {
    let base = open_base("acl-ip");
    let client = client_with(None);

    let local = format!("{base}/local");
    let queue = started(
        producer(&client, &local)
            .acl(vec![Acl::ip("127.0.0.1", Perms::ALL)])
            .build_queue(),
    );
    queue.put("here".to_string()).unwrap();
    assert_eq!(client.get_acl(&local).unwrap().0, [Acl::ip("127.0.0.1", Perms::ALL)]);
    let recorder = Recorder::new();
    let _consumer = started(
        QueueBuilder::new(&client_with(None), &local, StringSerializer)
            .consumer(recorder.clone())
            .build_queue(),
    );
    assert_eq!(recorder.wait_for(1, WAIT), ["here"]);

    // The queue node is created (its parent is open), then nothing more.
    let elsewhere = format!("{base}/elsewhere");
    let queue = started(
        producer(&client, &elsewhere)
            .acl(vec![Acl::ip("10.255.255.1", Perms::ALL)])
            .build_queue(),
    );
    assert_denied("put", queue.put("there".to_string()));
    assert_denied("get_children", client.get_children(&elsewhere));
    assert_eq!(client.exists(&elsewhere).unwrap().map(|s| s.num_children), Some(0));
}

#[test]
fn a_protected_simple_queue_denies_strangers_and_keeps_every_item() {
    let owner = owner();
    let path = format!("{}/simple", open_base("acl-simple"));
    let queue = SimpleQueue::builder(&owner, &path).acl(owner_acl()).build().unwrap();
    let items: [&[u8]; 3] = [b"one", b"two", b"three"];
    for item in items {
        queue.offer(item).unwrap();
    }
    assert_eq!(owner.get_acl(&path).unwrap().0, owner_acl());
    let (mut names, _) = owner.get_children(&path).unwrap();
    names.sort();
    for name in &names {
        assert_eq!(
            owner.get_acl(&format!("{path}/{name}")).unwrap().0,
            owner_acl(),
            "{name}"
        );
    }

    let wrong = format!("{USER}:not-{PASSWORD}");
    for stranger in [client_with(None), client_with(Some(&wrong))] {
        let theirs = SimpleQueue::new(&stranger, &path).unwrap();
        assert_denied("peek", theirs.peek());
        assert_denied("element", theirs.element());
        assert_denied("poll", theirs.poll());
        assert_denied("remove", theirs.remove());
        assert_denied("take_timeout", theirs.take_timeout(Duration::from_secs(5)));
        assert_denied("len", theirs.len());
        assert_denied("offer", theirs.offer(b"intruder"));
        // A blocking take gives up at once too: retrying cannot cure a denial.
        let (tx, rx) = crossbeam_channel::bounded(1);
        thread::spawn(move || {
            let _ = tx.send(theirs.take());
        });
        assert_denied("take", rx.recv_timeout(WAIT).expect("take returned"));
    }

    let mut left = owner.get_children(&path).unwrap().0;
    left.sort();
    assert_eq!(left, names, "the items changed");
    // Same bytes, same order.
    for item in items {
        assert_eq!(queue.poll().unwrap().as_deref(), Some(item));
    }
    assert_eq!(queue.poll().unwrap(), None);
}
