/*
 * CeilingPeer: the server's pipelined create and delete rates as a plain
 * ZooKeeper Java client reaches them, for the benchmark to compare with its
 * own client's (see examples/bench/java.rs, which compiles and runs it).
 *
 * Usage:
 *   java [-Dpeer.timeout.ms=N] CeilingPeer <connectString> <parent> <items> <size> <warmup>
 *
 * Under <parent> (which must exist) it creates and deletes <warmup> znodes
 * untimed, then creates <items> PERSISTENT_SEQUENTIAL znodes of <size> bytes
 * with the asynchronous API, keeping up to 1,000 requests in flight, then
 * deletes them the same way, each phase timed on its own. It prints one JSON
 * line on stdout:
 *   {"creates_per_s":..,"deletes_per_s":..,"items_per_s":..}
 * where items_per_s = 1 / (1/creates_per_s + 1/deletes_per_s).
 *
 * Exit codes: 0 success; 1 any failure (message on stderr); 2 bad command
 * line; 3 the whole run took longer than peer.timeout.ms (default 120000).
 */

import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class CeilingPeer {
    /** Requests in flight at once, as the benchmark's own client keeps. */
    static final int IN_FLIGHT = 1_000;

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CeilingPeer <connectString> <parent> <items> <size> <warmup>");
            System.exit(2);
        }
        String connect = args[0];
        String parent = args[1];
        int items;
        int size;
        int warmup;
        try {
            items = Integer.parseInt(args[2]);
            size = Integer.parseInt(args[3]);
            warmup = Integer.parseInt(args[4]);
        } catch (NumberFormatException e) {
            System.err.println("items, size and warmup must be integers: " + e.getMessage());
            System.exit(2);
            return;
        }
        long timeoutMs = Long.getLong("peer.timeout.ms", 120_000L);
        PeerWatchdog.start("CeilingPeer", timeoutMs, () -> {});

        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            if (!connected.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no session with " + connect + " within 30 s");
            }
            byte[] data = new byte[size];
            Arrays.fill(data, (byte) 'x');
            deleteAll(zk, createAll(zk, parent + "/w-", data, warmup));

            long started = System.nanoTime();
            String[] created = createAll(zk, parent + "/n-", data, items);
            double createSecs = (System.nanoTime() - started) / 1e9;
            started = System.nanoTime();
            deleteAll(zk, created);
            double deleteSecs = (System.nanoTime() - started) / 1e9;

            double creates = items / createSecs;
            double deletes = items / deleteSecs;
            double both = 1.0 / (1.0 / creates + 1.0 / deletes);
            System.out.printf("{\"creates_per_s\":%.3f,\"deletes_per_s\":%.3f,\"items_per_s\":%.3f}%n",
                    creates, deletes, both);
        } catch (Exception e) {
            System.err.println(e);
            System.exit(1);
        } finally {
            zk.close();
        }
    }

    /** Creates n sequential znodes under prefix, pipelined; returns their paths. */
    static String[] createAll(ZooKeeper zk, String prefix, byte[] data, int n) throws Exception {
        String[] created = new String[n];
        Semaphore room = new Semaphore(IN_FLIGHT);
        CountDownLatch done = new CountDownLatch(n);
        AtomicReference<String> failure = new AtomicReference<>();
        for (int i = 0; i < n && failure.get() == null; i++) {
            room.acquire();
            zk.create(prefix, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL,
                    (rc, path, ctx, name) -> {
                        if (rc == KeeperException.Code.OK.intValue()) {
                            created[(Integer) ctx] = name;
                        } else {
                            failure.compareAndSet(null, "create " + path + ": " + KeeperException.Code.get(rc));
                        }
                        room.release();
                        done.countDown();
                    }, i);
        }
        await(done, failure);
        return created;
    }

    /** Deletes the znodes named, pipelined. */
    static void deleteAll(ZooKeeper zk, String[] paths) throws Exception {
        Semaphore room = new Semaphore(IN_FLIGHT);
        CountDownLatch done = new CountDownLatch(paths.length);
        AtomicReference<String> failure = new AtomicReference<>();
        for (String path : paths) {
            if (failure.get() != null) {
                break;
            }
            room.acquire();
            zk.delete(path, -1, (rc, p, ctx) -> {
                if (rc != KeeperException.Code.OK.intValue()) {
                    failure.compareAndSet(null, "delete " + p + ": " + KeeperException.Code.get(rc));
                }
                room.release();
                done.countDown();
            }, null);
        }
        await(done, failure);
    }

    static void await(CountDownLatch done, AtomicReference<String> failure) throws InterruptedException {
        while (!done.await(100, TimeUnit.MILLISECONDS)) {
            if (failure.get() != null) {
                break;
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException(failure.get());
        }
    }
}
