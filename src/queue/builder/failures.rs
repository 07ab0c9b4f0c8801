//! What becomes of a failed item, and the ACL of the nodes a queue makes.

use crate::client::Acl;
use crate::queue::ErrorMode;
use crate::sync::Backoff;
use std::time::Duration;

use super::QueueBuilder;

impl<T: Send + 'static> QueueBuilder<T> {
    /// What happens to an item whose consumer returned an error; needs a
    /// [`lock_path`](Self::lock_path). Defaults to [`ErrorMode::Requeue`].
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::ErrorMode;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").error_mode(ErrorMode::Delete).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn error_mode(mut self, mode: ErrorMode) -> Self {
        self.options.error_mode = mode;
        self.error_mode_set = true;
        self
    }

    /// After this many failed deliveries a requeued item moves to the
    /// [`dead_letter_path`](Self::dead_letter_path) instead of looping. Needs
    /// a dead-letter path. Defaults to no limit (as Curator).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .dead_letter_path("/jobs-dead")
    ///     .max_attempts(3)
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.options.max_attempts = Some(attempts);
        self
    }

    /// How long a failed item waits before it is delivered again (with
    /// [`ErrorMode::Requeue`]): after its n-th failure, a random pause between
    /// half and all of `initial` doubled n − 1 times, capped at `max`
    /// (exponential back-off with equal jitter). With `initial` zero a failed
    /// item is delivered again at once. Defaults to 1 second, capped at 60
    /// seconds.
    ///
    /// The requeued node records when it is due again after its frame, so the
    /// pause holds across consumers and crashes: this crate's consumers (with
    /// or without a lock path, callback or pull) leave it alone until then,
    /// each reading it once and waking for it when it is due, by its clock
    /// (as for delay queues). Curator's consumers, [`RawQueue`](crate::admin::RawQueue)
    /// and `zkq take` see an ordinary item and may take it earlier; that is
    /// correct, only sooner.
    ///
    /// # Errors
    /// The `build_*` methods fail with [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `max` is
    /// less than `initial`.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .redelivery_backoff(Duration::from_millis(200), Duration::from_secs(10))
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn redelivery_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.options.redelivery_backoff = Backoff::new(initial, max);
        self
    }

    /// Where items go that cannot be consumed: undecodable items (byte for
    /// byte), and items that failed `max_attempts` times. Items there keep
    /// their name prefix (priority, due time or id) and their frame, so a
    /// queue on that path (this crate's or Curator's) reads them as the
    /// original items; after the frame each records why it died, when, and
    /// the queue and node it came from ([`DeadLetters::list`](crate::admin::DeadLetters::list)). It must not be
    /// the queue path, lie inside it, or be the lock path. Defaults to none:
    /// undecodable items are left in place and logged.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").dead_letter_path("/jobs-dead").build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn dead_letter_path(mut self, path: &str) -> Self {
        self.options.dead_letter_path = Some(path.to_owned());
        self
    }

    /// The ACL of every node the queue creates: the queue node and any
    /// missing ancestors, the lock and dead-letter directories, item nodes,
    /// lock nodes, requeued items and items moved to the dead-letter path.
    /// Defaults to the client's default ACL
    /// ([`ZkClientBuilder::default_acl`](crate::ZkClientBuilder::default_acl)).
    ///
    /// ZooKeeper checks each node's own ACL (nothing is inherited), and a
    /// node that already exists keeps the ACL it has. A client whose
    /// identities the ACL does not allow can neither read, take, delete nor
    /// put items: each such call fails with [`Error::NotAuthorized`](crate::Error::NotAuthorized), and a
    /// consumer is told through [`QueueConsumer::error`](crate::QueueConsumer::error) (or its
    /// [`ItemReceiver`](crate::ItemReceiver)'s takes return the error) while the queue retries with
    /// back-off; nothing is deleted or left locked. Whether a node exists, and
    /// its [`Stat`](crate::client::Stat), stay visible to every client.
    ///
    /// Give the queue's own clients every permission: consuming lists and
    /// deletes items and creates and deletes lock nodes, and requeueing
    /// creates items. [`Acl::creator_all`] stands for the creating client's
    /// identities, so that client must have authenticated
    /// ([`ZkClientBuilder::add_auth`](crate::ZkClientBuilder::add_auth)).
    ///
    /// # Errors
    /// The `build_*` methods fail with [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty
    /// ACL.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, StringSerializer, ZkClient, client::{Acl, Perms}};
    /// let client = ZkClient::builder("127.0.0.1:2181").add_auth("digest", b"worker:secret").connect()?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .acl(vec![Acl::digest("worker", "secret", Perms::ALL)])
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.options.acl = acl;
        self
    }
}
