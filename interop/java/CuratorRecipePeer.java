/*
 * CuratorRecipePeer: Apache Curator's coordination recipes measured the way
 * the benchmark measures its own (see examples/bench/recipes.rs and
 * examples/bench/java.rs, which compiles and runs it).
 *
 * Usage:
 *   java [-Dpeer.timeout.ms=N] CuratorRecipePeer <connectString> <basePath> <cycles> <warmup> <contenders>
 *
 * Under <basePath> (which must exist) it measures, one after another, each
 * after <warmup> cycles of its own that are not recorded (the JVM compiles
 * its hot paths):
 *   - mutex: one client's InterProcessMutex, acquire then release, <cycles>
 *     times; the time of each cycle.
 *   - mutex_handoff: <contenders> threads, each with a client of its own and
 *     an InterProcessMutex on one path, acquire and release in a loop; the
 *     time from a holder's release call to the next holder's acquire
 *     returning, <cycles> times.
 *   - semaphore: one client's InterProcessSemaphoreV2 of one lease, acquire
 *     then return the lease, <cycles> times.
 *   - selector_handoff: <contenders> LeaderSelectors (autoRequeue), a client
 *     each; the time from a leader's return from takeLeadership to the next
 *     leader's takeLeadership call, <cycles> times.
 * It prints one JSON line on stdout:
 *   {"mutex":{"per_s":..,"p50_ms":..,"p99_ms":..},"mutex_handoff":{..},"semaphore":{..},"selector_handoff":{..}}
 * where per_s is cycles (or hand-offs) per second over the measured part and
 * the percentiles are by nearest rank.
 *
 * Exit codes: 0 success; 1 any failure (message on stderr); 2 bad command
 * line; 3 the whole run took longer than peer.timeout.ms (default 120000).
 */

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorRecipePeer {
    /** How long one acquisition may wait. */
    static final long WAIT_S = 30;

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CuratorRecipePeer <connectString> <basePath> <cycles> <warmup> <contenders>");
            System.exit(2);
        }
        String connect = args[0];
        String base = args[1];
        int cycles;
        int warmup;
        int contenders;
        try {
            cycles = Integer.parseInt(args[2]);
            warmup = Integer.parseInt(args[3]);
            contenders = Integer.parseInt(args[4]);
        } catch (NumberFormatException e) {
            System.err.println("cycles, warmup and contenders must be numbers: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (cycles <= 0 || warmup < 0 || contenders < 2) {
            System.err.println("cycles must be positive, warmup not negative, contenders at least 2");
            System.exit(2);
        }
        long timeoutMs = Long.getLong("peer.timeout.ms", 120_000L);
        PeerWatchdog.start("CuratorRecipePeer", timeoutMs, () -> {});
        try {
            String mutex = measure(warmup, cycles, n -> mutexCycles(connect, base + "/mutex", n));
            String mutexHandoff = measure(warmup, cycles,
                    n -> mutexHandoffs(connect, base + "/mutex-handoff", n, contenders));
            String semaphore = measure(warmup, cycles, n -> semaphoreCycles(connect, base + "/semaphore", n));
            String selectorHandoff = measure(warmup, cycles,
                    n -> selectorHandoffs(connect, base + "/selector-handoff", n, contenders));
            System.out.printf("{\"mutex\":%s,\"mutex_handoff\":%s,\"semaphore\":%s,\"selector_handoff\":%s}%n",
                    mutex, mutexHandoff, semaphore, selectorHandoff);
        } catch (Exception e) {
            System.err.println(e);
            System.exit(1);
        }
    }

    /** Times of cycles (ns) and the seconds they took together. */
    static final class Run {
        final long[] nanos;
        final double secs;

        Run(long[] nanos, double secs) {
            this.nanos = nanos;
            this.secs = secs;
        }
    }

    interface Part {
        Run run(int cycles) throws Exception;
    }

    /** Runs a part for the warm-up, then measured; its JSON figures. */
    static String measure(int warmup, int cycles, Part part) throws Exception {
        if (warmup > 0) {
            part.run(warmup);
        }
        Run run = part.run(cycles);
        long[] sorted = run.nanos.clone();
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "{\"per_s\":%.3f,\"p50_ms\":%.4f,\"p99_ms\":%.4f}",
                cycles / run.secs, rank(sorted, 50), rank(sorted, 99));
    }

    static CuratorFramework client(String connect) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("no session with " + connect + " within 30 s");
        }
        return client;
    }

    static Run mutexCycles(String connect, String path, int cycles) throws Exception {
        try (CuratorFramework client = client(connect)) {
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            long[] nanos = new long[cycles];
            long start = System.nanoTime();
            for (int i = 0; i < cycles; i++) {
                long t = System.nanoTime();
                if (!mutex.acquire(WAIT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("an uncontended mutex was not acquired");
                }
                mutex.release();
                nanos[i] = System.nanoTime() - t;
            }
            return new Run(nanos, (System.nanoTime() - start) / 1e9);
        }
    }

    static Run semaphoreCycles(String connect, String path, int cycles) throws Exception {
        try (CuratorFramework client = client(connect)) {
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, 1);
            long[] nanos = new long[cycles];
            long start = System.nanoTime();
            for (int i = 0; i < cycles; i++) {
                long t = System.nanoTime();
                Lease lease = semaphore.acquire(WAIT_S, TimeUnit.SECONDS);
                if (lease == null) {
                    throw new IllegalStateException("an uncontended semaphore gave no lease");
                }
                semaphore.returnLease(lease);
                nanos[i] = System.nanoTime() - t;
            }
            return new Run(nanos, (System.nanoTime() - start) / 1e9);
        }
    }

    /**
     * Hand-offs between contenders: a holder notes when it releases; the
     * next one, once it holds, records the time since.
     */
    static final class Handoffs {
        final long[] nanos;
        final AtomicInteger recorded = new AtomicInteger();
        final AtomicLong released = new AtomicLong(-1);
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        long start;
        long end;

        Handoffs(int cycles) {
            nanos = new long[cycles];
        }

        boolean finished() {
            return done.getCount() == 0 || failure.get() != null;
        }

        void acquired() {
            long now = System.nanoTime();
            long then = released.getAndSet(-1);
            if (then < 0) {
                return;
            }
            int i = recorded.getAndIncrement();
            if (i == 0) {
                start = then;
            }
            if (i < nanos.length) {
                nanos[i] = now - then;
                if (i == nanos.length - 1) {
                    end = now;
                    done.countDown();
                }
            }
        }

        void releasing() {
            released.set(System.nanoTime());
        }

        void failed(Throwable e) {
            failure.compareAndSet(null, e);
            done.countDown();
        }

        Run await() throws Exception {
            if (!done.await(WAIT_S * 4, TimeUnit.SECONDS)) {
                throw new IllegalStateException(recorded.get() + " of " + nanos.length + " hand-offs");
            }
            if (failure.get() != null) {
                throw new IllegalStateException("a contender failed", failure.get());
            }
            return new Run(nanos, (end - start) / 1e9);
        }
    }

    static Run mutexHandoffs(String connect, String path, int cycles, int contenders) throws Exception {
        Handoffs handoffs = new Handoffs(cycles);
        List<CuratorFramework> clients = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        try {
            for (int c = 0; c < contenders; c++) {
                CuratorFramework client = client(connect);
                clients.add(client);
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                Thread thread = new Thread(() -> {
                    try {
                        while (!handoffs.finished()) {
                            if (!mutex.acquire(WAIT_S, TimeUnit.SECONDS)) {
                                throw new IllegalStateException("no turn within " + WAIT_S + " s");
                            }
                            handoffs.acquired();
                            handoffs.releasing();
                            mutex.release();
                        }
                    } catch (Throwable e) {
                        handoffs.failed(e);
                    }
                }, "contender-" + c);
                threads.add(thread);
            }
            threads.forEach(Thread::start);
            Run run = handoffs.await();
            for (Thread thread : threads) {
                thread.join(TimeUnit.SECONDS.toMillis(WAIT_S));
            }
            return run;
        } finally {
            clients.forEach(CuratorFramework::close);
        }
    }

    static Run selectorHandoffs(String connect, String path, int cycles, int contenders) throws Exception {
        Handoffs handoffs = new Handoffs(cycles);
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        try {
            for (int c = 0; c < contenders; c++) {
                CuratorFramework client = client(connect);
                clients.add(client);
                LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework leader) {
                        handoffs.acquired();
                        handoffs.releasing();
                    }
                });
                selector.autoRequeue();
                selectors.add(selector);
            }
            selectors.forEach(LeaderSelector::start);
            return handoffs.await();
        } finally {
            selectors.forEach(LeaderSelector::close);
            clients.forEach(CuratorFramework::close);
        }
    }

    /** The nearest-rank percentile of sorted nanoseconds, in milliseconds. */
    static double rank(long[] sorted, double percent) {
        int index = (int) Math.ceil(percent / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
    }
}
