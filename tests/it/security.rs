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
    client::{Acl, CreateMode, Perms},
    ConsumeError, DistributedQueue, Error, QueueBuilder, QueueConsumer, SimpleQueue, StringSerializer, ZkClient,
};

use crate::support::queues::producer;
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually};

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
    let queue = protected.builder(owner).build_queue().unwrap();
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
        eventually(within, &format!("{n} errors reported"), || {
            self.errors.lock().len() >= n
        });
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
    let queue: DistributedQueue<String> = producer(stranger, &protected.queue).build_queue().unwrap();
    assert_denied("put", queue.put("intruder".to_string()));
    assert_denied("len", queue.len());
    queue.close();

    // A consumer of any kind could take nothing: building it is refused.
    let locking = QueueBuilder::new(stranger, &protected.queue, StringSerializer)
        .consumer(ErrorLog::default())
        .lock_path(&protected.locks)
        .build_queue();
    assert_denied("build a lock-safe consumer", locking);
    let (builder, _receiver) = QueueBuilder::new(stranger, &protected.queue, StringSerializer).pull_consumer();
    assert_denied("build a pull consumer", builder.build_queue());
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
    let _consumer = protected
        .builder(owner)
        .consumer(recorder.clone())
        .build_queue()
        .unwrap();
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

/// Starts a consumer (a lock-safe callback consumer, or a plain pull
/// receiver) on an open queue, takes its access away with `set_acl`, puts an
/// item, and gives the access back.
fn revoked_then_restored(name: &str, pull: bool) {
    let owner = owner();
    let base = open_base(name);
    let path = format!("{base}/queue");
    let worker = client_with(None);
    let log = ErrorLog::default();
    // ZooKeeper drops the watch event of a node this client may no longer
    // read: the consumer learns of the revoke, and of the restore, by
    // listing again at its rescan interval.
    let base_builder = QueueBuilder::new(&worker, &path, StringSerializer).rescan_interval(Duration::from_millis(300));
    let (builder, receiver) = if pull {
        let (builder, receiver) = base_builder.pull_consumer();
        (builder, Some(receiver))
    } else {
        let builder = base_builder.consumer(log.clone()).lock_path(&format!("{base}/locks"));
        (builder, None)
    };
    let consumer = builder.build_queue().unwrap();

    owner.set_acl(&path, &owner_acl(), None).unwrap();
    assert_denied("listing after the revoke", worker.get_children(&path));
    // The consumer's watch stays silent for the owner's put; its next scan
    // is denied.
    let put = producer(&owner, &path).build_queue().unwrap();
    put.put("a".to_string()).unwrap();
    if let Some(receiver) = &receiver {
        match receiver.take_timeout(WAIT) {
            // The queue's listing, or the new item's read (when the
            // consumer heard of the item before its listing was denied).
            Err(Error::NotAuthorized { path: denied }) => {
                assert!(denied == path || denied.starts_with(&format!("{path}/")), "{denied}")
            }
            other => panic!("pull take: expected NotAuthorized, got {other:?}"),
        }
    } else {
        log.wait_for_errors(1, WAIT);
        let first = Instant::now();
        log.wait_for_errors(3, WAIT);
        thread::sleep(Duration::from_millis(500));
        let elapsed = first.elapsed();
        let errors = log.errors.lock().clone();
        assert!(errors.iter().all(|(denied, _)| *denied), "{errors:?}");
        // 100 ms, 200 ms, 400 ms... between scans: a handful, not a hot loop.
        let bound = 2 + (elapsed.as_millis() / 100) as usize;
        assert!(errors.len() <= bound.min(12), "{} errors in {elapsed:?}", errors.len());
        assert_eq!(log.consumed.load(Ordering::SeqCst), 0);
    }
    assert_eq!(owner.get_children(&path).unwrap().0.len(), 1, "the item is still there");

    owner.set_acl(&path, &[Acl::anyone_all()], None).unwrap();
    if let Some(receiver) = &receiver {
        // A denial met before the access came back may still be told once;
        // then the item comes.
        let mut stale = 0;
        let item = loop {
            match receiver.take_timeout(WAIT) {
                Ok(Some(delivery)) => break delivery.ack(),
                Err(Error::NotAuthorized { .. }) if stale < 2 => stale += 1,
                other => panic!("pull take after the restore: {other:?}"),
            }
        };
        assert_eq!(item, "a");
    } else {
        eventually(WAIT, "consumed after the access came back", || {
            log.consumed.load(Ordering::SeqCst) > 0
        });
    }
    consumer.close();
    assert_eq!(log.consumed.load(Ordering::SeqCst), usize::from(!pull));
    assert!(owner.get_children(&path).unwrap().0.is_empty(), "the item was taken");
}

#[test]
fn a_lock_safe_consumer_whose_access_is_revoked_backs_off_then_resumes_when_it_is_restored() {
    revoked_then_restored("acl-revoked-locked", false);
}

#[test]
fn a_pull_take_returns_the_denial_after_a_revoke_then_the_item_once_access_is_restored() {
    revoked_then_restored("acl-revoked-pull", true);
}

#[test]
fn set_acl_refuses_an_empty_acl_and_needs_admin_on_the_node() {
    let owner = owner();
    let base = open_base("acl-set");
    let path = format!("{base}/node");
    owner.create(&path, b"", CreateMode::Persistent).unwrap();
    assert!(matches!(
        owner.set_acl(&path, &[], None),
        Err(Error::InvalidArgument(_))
    ));
    let (_, stat) = owner.get_acl(&path).unwrap();
    let mine = vec![
        Acl::digest(USER, PASSWORD, Perms::ALL),
        Acl::new(Perms::READ, "world", "anyone"),
    ];
    // A stale ACL version is refused; the current one is taken.
    assert!(matches!(
        owner.set_acl(&path, &mine, Some(stat.aversion + 1)),
        Err(Error::BadVersion { .. })
    ));
    let changed = owner.set_acl(&path, &mine, Some(stat.aversion)).unwrap();
    assert_eq!(changed.aversion, stat.aversion + 1);
    assert_eq!(owner.get_acl(&path).unwrap().0, mine);
    // Readers may read but not change the ACL back.
    let reader = client_with(None);
    assert!(reader.get_data(&path).is_ok());
    assert_denied(
        "set_acl without ADMIN",
        reader.set_acl(&path, &[Acl::anyone_all()], None),
    );
    assert_eq!(owner.get_acl(&path).unwrap().0, mine);
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
    let queue = protected.builder(&owner).acl(acl).build_queue().unwrap();
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
    let consumer = QueueBuilder::new(&reader, &protected.queue, StringSerializer)
        .consumer(plain.clone())
        .build_queue()
        .unwrap();
    plain.wait_for_errors(3, WAIT);
    thread::sleep(Duration::from_millis(500));
    consumer.close();
    let errors = plain.errors.lock().clone();
    assert!(errors.iter().all(|(denied, _)| *denied), "{errors:?}");
    assert_eq!(errors.len(), 3, "one report per item, then quiet: {errors:?}");
    assert_eq!(plain.consumed.load(Ordering::SeqCst), 0);

    // Lock-safe mode may not create locks.
    let locking = ErrorLog::default();
    let consumer = QueueBuilder::new(&reader, &protected.queue, StringSerializer)
        .consumer(locking.clone())
        .lock_path(&protected.locks)
        .build_queue()
        .unwrap();
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
    let queue = builder.build_queue().unwrap();
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
    let queue = QueueBuilder::new(&owner, &path, StringSerializer)
        .put_in_background(true)
        .acl(owner_acl())
        .build_queue()
        .unwrap();
    queue.put("x".to_string()).unwrap();
    assert!(queue.flush_timeout(WAIT));
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
    let queue = producer(&client, &local)
        .acl(vec![Acl::ip("127.0.0.1", Perms::ALL)])
        .build_queue()
        .unwrap();
    queue.put("here".to_string()).unwrap();
    assert_eq!(client.get_acl(&local).unwrap().0, [Acl::ip("127.0.0.1", Perms::ALL)]);
    let recorder = Recorder::new();
    let _consumer = QueueBuilder::new(&client_with(None), &local, StringSerializer)
        .consumer(recorder.clone())
        .build_queue()
        .unwrap();
    assert_eq!(recorder.wait_for(1, WAIT), ["here"]);

    // The queue node is created (its parent is open), then nothing more.
    let elsewhere = format!("{base}/elsewhere");
    let queue = producer(&client, &elsewhere)
        .acl(vec![Acl::ip("10.255.255.1", Perms::ALL)])
        .build_queue()
        .unwrap();
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

/// The rescan interval of the take in the rescan test.
const RESCAN: Duration = Duration::from_secs(4);

#[test]
fn a_blocked_simple_take_lists_again_at_its_rescan_interval_and_gets_an_item_put_while_it_was_shut_out() {
    let owner = owner();
    let path = format!("{}/simple", open_base("acl-simple-rescan"));
    owner.ensure_path(&path).unwrap();
    let worker = client_with(None);
    let theirs = SimpleQueue::builder(&worker, &path)
        .rescan_interval(RESCAN)
        .build()
        .unwrap();
    assert_eq!(theirs.poll().unwrap(), None);
    let listings = worker.stats().get_children;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let started_at = Instant::now();
    thread::spawn(move || {
        // A rescan that lands while the client is shut out (on a slow
        // machine) returns the denial, as a take does; the caller takes again.
        let mut taken = theirs.take_timeout(WAIT);
        for _ in 0..50 {
            if !matches!(taken, Err(Error::NotAuthorized { .. })) {
                break;
            }
            thread::sleep(Duration::from_millis(100));
            taken = theirs.take_timeout(WAIT);
        }
        let _ = tx.send((taken, Instant::now()));
    });
    // The take has listed and waits on its watch.
    while worker.stats().get_children == listings {
        assert!(started_at.elapsed() < WAIT, "the take never listed");
        thread::sleep(Duration::from_millis(5));
    }
    // A request of the same session is answered after that listing, so the
    // watch is in place before the access is taken away.
    worker.exists(&path).unwrap();
    let listed_at = Instant::now();
    // Shut out, an item put, let back in: the server drops the watch's event.
    owner.set_acl(&path, &owner_acl(), None).unwrap();
    SimpleQueue::new(&owner, &path).unwrap().offer(b"meanwhile").unwrap();
    owner.set_acl(&path, &[Acl::anyone_all()], None).unwrap();
    let (taken, returned_at) = rx.recv_timeout(WAIT).expect("the take returned");
    assert_eq!(taken.unwrap().as_deref(), Some(&b"meanwhile"[..]));
    // Not woken by its watch, which would have been at once: the item came
    // with the listing at the rescan interval. (Half of it, as the listing
    // was seen a little late.)
    let waited = returned_at - listed_at;
    assert!(
        waited >= RESCAN / 2,
        "the take returned {waited:?} after listing: its watch woke it"
    );
    assert!(
        started_at.elapsed() < Duration::from_secs(12),
        "found by a rescan, not at the deadline: {:?}",
        started_at.elapsed()
    );
}
