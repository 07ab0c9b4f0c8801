//! [`QueueBuilder`]: options shared by every Curator-compatible queue kind.

mod build;
mod consuming;
mod failures;
mod putting;

use std::sync::Arc;
use std::time::Duration;

use crate::client::ZkClient;
use crate::codec::QueueSerializer;
use crate::queue::core::{Consumer, Options};
use crate::queue::put::PutMode;
use crate::queue::ErrorMode;
use crate::sync::Backoff;

/// The default redelivery back-off: the first pause and the cap.
const DEFAULT_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

/// Builds the queues of Curator's family; consuming setters, each documenting
/// its default.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ConsumeError, ErrorMode, QueueBuilder, StringSerializer, ZkClient};
///
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
///     .consumer(|job: String| -> Result<(), ConsumeError> {
///         println!("working on {job}");
///         Ok(())
///     })
///     .lock_path("/jobs-locks")
///     .error_mode(ErrorMode::Requeue)
///     .max_attempts(5)
///     .dead_letter_path("/jobs-dead")
///     .build_queue()?;
/// queue.put("resize 42".to_string())?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until one of its `build_*` methods is called"]
pub struct QueueBuilder<T> {
    client: ZkClient,
    path: String,
    serializer: Arc<dyn QueueSerializer<T>>,
    consumer: Option<Consumer<T>>,
    options: Options,
    /// The put path's settings, which the consumer engine never sees.
    puts: PutMode,
    error_mode_set: bool,
    /// How often the metrics sampler reads the queue's gauges.
    #[cfg(feature = "metrics")]
    metrics_interval: Duration,
}

impl<T: Send + 'static> QueueBuilder<T> {
    /// A builder for a queue at `path` whose items `serializer` turns into
    /// bytes. Without a [`consumer`](Self::consumer) the queue only produces.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let producer = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// producer.put("hello".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str, serializer: impl QueueSerializer<T>) -> QueueBuilder<T> {
        QueueBuilder {
            client: client.clone(),
            path: path.to_owned(),
            serializer: Arc::new(serializer),
            consumer: None,
            options: Options {
                lock_path: None,
                final_flush: Duration::from_secs(5),
                consumer_threads: 1,
                claim_window: 64,
                rescan_interval: Duration::from_secs(30),
                error_mode: ErrorMode::Requeue,
                max_attempts: None,
                redelivery_backoff: Backoff::new(DEFAULT_BACKOFF.0, DEFAULT_BACKOFF.1),
                min_items_before_refresh: 0,
                dead_letter_path: None,
                acl: client.default_acl().to_vec(),
                listing_gate: None,
            },
            puts: PutMode {
                max_items: None,
                in_background: false,
                coalesce: None,
            },
            error_mode_set: false,
            #[cfg(feature = "metrics")]
            metrics_interval: Duration::from_secs(10),
        }
    }
}

impl<T> std::fmt::Debug for QueueBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("path", &self.path)
            .field("consumer", &self.consumer.is_some())
            .field("options", &self.options)
            .field("puts", &self.puts)
            .finish()
    }
}
