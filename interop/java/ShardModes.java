/*
 * ShardModes: the QueuePeer modes that use Curator's QueueSharder over plain
 * DistributedQueue shards (String items, UTF-8), so the Rust tests can share
 * a sharded queue with it.
 *
 *   curator-sharder-put      put <count> items (prefix + i) through the
 *                            sharder, one every -Dpeer.putEveryMs ms, each
 *                            into sharder.getQueue() (foreground puts), then
 *                            print "shards N" on stderr
 *   curator-sharder-consume  consume <count> items from every shard the
 *                            sharder has or adopts, printing each as one
 *                            stdout line; "ready" on stderr once the
 *                            sharder's latch node is in the election
 *
 * Options (system properties):
 *   -Dpeer.leaderPath=/path     the sharder's leader path (required)
 *   -Dpeer.threshold=N          QueueSharderPolicies.newQueueThreshold (default 10000)
 *   -Dpeer.checkMs=N            QueueSharderPolicies.thresholdCheckMs (default 30000)
 *   -Dpeer.maxShards=N          QueueSharderPolicies.maxQueues (default 10)
 *   -Dpeer.putEveryMs=N         the pause between puts (default 0)
 *   -Dpeer.consumeDelayMs=N     the consumer's pause at each item (default 0)
 *   -Dpeer.gatePath=/path       the consumer takes no item past its first in
 *                               each shard until a node at this path exists
 *                               (watched, so no poll), so the caller decides
 *                               when consumption starts
 */

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorWatcher;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSharder;
import org.apache.curator.framework.recipes.queue.QueueSharderPolicies;
import org.apache.curator.framework.state.ConnectionState;

final class ShardModes {
    private ShardModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-sharder-put", ShardModes::put);
        modes.put("curator-sharder-consume", ShardModes::consume);
    }

    private static String leaderPath() {
        String path = System.getProperty("peer.leaderPath");
        if (path == null) {
            throw new QueuePeer.UsageException("-Dpeer.leaderPath is required");
        }
        return path;
    }

    private static QueueSharderPolicies policies() {
        return QueueSharderPolicies.builder()
                .newQueueThreshold(Integer.getInteger("peer.threshold", 10_000))
                .thresholdCheckMs(Integer.getInteger("peer.checkMs", 30_000))
                .maxQueues(Integer.getInteger("peer.maxShards", 10))
                .build();
    }

    static void put(QueuePeer.Args a) throws Exception {
        long everyMs = Long.getLong("peer.putEveryMs", 0L);
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            QueueSharder<String, DistributedQueue<String>> sharder = new QueueSharder<>(
                    client,
                    (c, path) -> QueueBuilder.builder(c, null, CuratorModes.SERIALIZER, path)
                            .putInBackground(false)
                            .buildQueue(),
                    a.path(), leaderPath(), policies());
            sharder.start();
            try {
                for (int i = 0; i < a.count(); i++) {
                    sharder.getQueue().put(a.prefix() + i);
                    if (everyMs > 0) {
                        Thread.sleep(everyMs);
                    }
                }
                System.err.println("shards " + sharder.getShardQty());
                System.err.flush();
            } finally {
                sharder.close();
            }
        }
    }

    static void consume(QueuePeer.Args a) throws Exception {
        CountDownLatch done = new CountDownLatch(a.count());
        AtomicInteger printed = new AtomicInteger();
        long delayMs = Long.getLong("peer.consumeDelayMs", 0L);
        String gatePath = System.getProperty("peer.gatePath");
        CountDownLatch gate = new CountDownLatch(gatePath == null ? 0 : 1);
        QueueConsumer<String> consumer = new QueueConsumer<>() {
            @Override
            public void consumeMessage(String item) throws Exception {
                // The watchdog bounds the wait.
                gate.await();
                if (delayMs > 0) {
                    Thread.sleep(delayMs);
                }
                QueuePeer.emit(item);
                printed.incrementAndGet();
                done.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {}
        };
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            QueueSharder<String, DistributedQueue<String>> sharder = new QueueSharder<>(
                    client,
                    (c, path) -> QueueBuilder.builder(c, consumer, CuratorModes.SERIALIZER, path).buildQueue(),
                    a.path(), leaderPath(), policies());
            sharder.start();
            // The sharder's latch joins the election in the background;
            // "ready" means its node is there, so that it comes first.
            awaitElectionNode(client, leaderPath());
            System.err.println("ready");
            System.err.flush();
            try {
                if (gatePath != null) {
                    awaitNode(client, gatePath);
                    gate.countDown();
                }
                // The watchdog bounds the whole run.
                done.await();
            } finally {
                sharder.close();
            }
            System.err.println("shards " + sharder.getShardQty());
            System.err.flush();
        }
    }

    /**
     * Waits (the watchdog bounds it) until a node exists at path: an exists
     * watch, set again after every event, so no poll.
     */
    private static void awaitNode(CuratorFramework client, String path) throws Exception {
        while (true) {
            CountDownLatch changed = new CountDownLatch(1);
            CuratorWatcher watcher = event -> changed.countDown();
            if (client.checkExists().usingWatcher(watcher).forPath(path) != null) {
                return;
            }
            changed.await();
        }
    }

    /** Waits (the watchdog bounds it) until the leader path has a child. */
    private static void awaitElectionNode(CuratorFramework client, String leaderPath) throws Exception {
        while (client.checkExists().forPath(leaderPath) == null
                || client.getChildren().forPath(leaderPath).isEmpty()) {
            Thread.sleep(5);
        }
    }
}
