/*
 * CuratorLatencyPeer: Apache Curator's plain DistributedQueue measured the
 * way the benchmark measures its own queues below saturation (see
 * examples/bench/java.rs, which compiles and runs it).
 *
 * Usage:
 *   java [-Dpeer.timeout.ms=N] CuratorLatencyPeer <connectString> <queuePath> <rate> <items> <size> <warmup>
 *
 * One Curator client runs a queue with a consumer (no lock path, Curator's
 * defaults). It first puts <warmup> items as fast as it can and waits until
 * they are consumed (not measured: the JVM compiles its hot paths), then
 * puts <items> items of <size> bytes at <rate> items per second, paced by
 * the clock (open loop). Each item carries the time it was
 * due; the consumer records now minus that. It prints one JSON line on
 * stdout:
 *   {"achieved_rate":..,"p50_ms":..,"p90_ms":..,"p99_ms":..,"max_ms":..}
 * (percentiles by nearest rank).
 *
 * Exit codes: 0 success; 1 any failure (message on stderr); 2 bad command
 * line; 3 the whole run took longer than peer.timeout.ms (default 120000).
 */

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorLatencyPeer {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: CuratorLatencyPeer <connectString> <queuePath> <rate> <items> <size> <warmup>");
            System.exit(2);
        }
        String connect = args[0];
        String path = args[1];
        double rate;
        int items;
        int size;
        int warmup;
        try {
            rate = Double.parseDouble(args[2]);
            items = Integer.parseInt(args[3]);
            size = Integer.parseInt(args[4]);
            warmup = Integer.parseInt(args[5]);
        } catch (NumberFormatException e) {
            System.err.println("rate, items and size must be numbers: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (!(rate > 0) || items <= 0 || size < 8 || warmup < 0) {
            System.err.println("rate and items must be positive, size at least 8, warmup not negative");
            System.exit(2);
        }
        long timeoutMs = Long.getLong("peer.timeout.ms", 120_000L);
        PeerWatchdog.start("CuratorLatencyPeer", timeoutMs, () -> {});

        long[] latencies = new long[items];
        // Warm-up items come first and are counted down, not recorded.
        AtomicInteger taken = new AtomicInteger(-warmup);
        CountDownLatch warm = new CountDownLatch(warmup);
        CountDownLatch done = new CountDownLatch(items);
        QueueSerializer<byte[]> bytes = new QueueSerializer<>() {
            @Override
            public byte[] serialize(byte[] item) {
                return item;
            }

            @Override
            public byte[] deserialize(byte[] data) {
                return data;
            }
        };
        QueueConsumer<byte[]> consumer = new QueueConsumer<>() {
            @Override
            public void consumeMessage(byte[] item) {
                long now = System.nanoTime();
                int i = taken.getAndIncrement();
                if (i < 0) {
                    warm.countDown();
                } else if (i < items) {
                    latencies[i] = now - ByteBuffer.wrap(item).getLong();
                    done.countDown();
                }
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState state) {
            }
        };
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, new ExponentialBackoffRetry(100, 3))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no session with " + connect + " within 30 s");
            }
            try (DistributedQueue<byte[]> queue = QueueBuilder.builder(client, consumer, bytes, path).buildQueue()) {
                queue.start();
                for (int i = 0; i < warmup; i++) {
                    queue.put(new byte[size]);
                }
                if (!warm.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("the warm-up items were not consumed");
                }
                long start = System.nanoTime();
                for (int i = 0; i < items; i++) {
                    long due = start + (long) (i * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    byte[] item = new byte[size];
                    ByteBuffer.wrap(item).putLong(due);
                    queue.put(item);
                }
                double achieved = items / ((System.nanoTime() - start) / 1e9);
                if (!done.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException(taken.get() + " of " + items + " items consumed");
                }
                long[] sorted = latencies.clone();
                Arrays.sort(sorted);
                System.out.printf("{\"achieved_rate\":%.3f,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f}%n",
                        achieved, rank(sorted, 50), rank(sorted, 90), rank(sorted, 99), rank(sorted, 100));
            }
        } catch (Exception e) {
            System.err.println(e);
            System.exit(1);
        }
    }

    /** The nearest-rank percentile of sorted nanoseconds, in milliseconds. */
    static double rank(long[] sorted, double percent) {
        int index = (int) Math.ceil(percent / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
    }
}
