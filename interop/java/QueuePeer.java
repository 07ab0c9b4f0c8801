/*
 * QueuePeer: a small command-line Java peer that operates ZooKeeper queues
 * with the real Java recipes, so the Rust integration tests can share a queue
 * with them (see tests/it/support/java.rs, which compiles and runs it).
 *
 * Usage:
 *   java [-Dpeer.timeout.ms=N] [-Dpeer.<option>=...] QueuePeer <mode> <connectString> <queuePath> <count> [prefix]
 *
 * Modes:
 *   classic-offer  offer <count> items with the classic ZooKeeper recipe
 *                  (org.apache.zookeeper.recipes.queue.DistributedQueue)
 *   classic-take   take <count> items with the classic recipe's blocking take()
 *   simple-offer   offer <count> items with Curator's SimpleDistributedQueue
 *   simple-take    take <count> items with SimpleDistributedQueue.take()
 *   curator-*      Curator's DistributedQueue family (plain, priority, delay,
 *                  id, putMulti) and curator-list; they read items from stdin
 *                  and take -Dpeer.* options: see CuratorModes.java
 *
 * Items offered are the UTF-8 bytes of prefix + i for i = 0..count-1 (prefix
 * defaults to "item-"). Every item taken is printed to stdout as one UTF-8
 * line, flushed per line, so stdout holds nothing but item lines. On success
 * the last line on stderr is "done <count>".
 *
 * Before using the classic recipe the missing ancestors of <queuePath> are
 * created (the recipe itself only creates the queue node, one level); the queue
 * node itself is left to the recipe. Curator creates parents on its own.
 *
 * Exit codes:
 *   0  success
 *   1  any exception (stack trace on stderr)
 *   2  bad command line, bad -Dpeer.* option or bad stdin input
 *   3  the whole run took longer than -Dpeer.timeout.ms (default 60000)
 *
 * Adding a mode: write a static method taking Args and register it in MODES.
 * Logging is silenced by putting slf4j-nop on the classpath.
 */

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.recipes.queue.DistributedQueue;

public final class QueuePeer {
    /** Exit code for a bad command line. */
    static final int EXIT_USAGE = 2;
    /** Exit code for any exception. */
    static final int EXIT_ERROR = 1;

    static final int SESSION_TIMEOUT_MS = 30_000;
    static final int CONNECTION_TIMEOUT_MS = 15_000;

    /** stdout as UTF-8 with autoflush; only item lines go here. */
    static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    /** Parsed command line (and the -Dpeer.* options). */
    record Args(String mode, String connect, String path, int count, String prefix,
            CuratorModes.Options options) {
        /** The bytes of item number i. */
        byte[] item(int i) {
            return (prefix + i).getBytes(StandardCharsets.UTF_8);
        }
    }

    /** Bad input found while running (e.g. on stdin): exit code 2, like a bad command line. */
    static final class UsageException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    public static void main(String[] argv) {
        // stderr carries item text too ("failed <item>"), so make it UTF-8 like stdout.
        System.setErr(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        long timeoutMs = Long.getLong("peer.timeout.ms", 60_000L);
        PeerWatchdog.start("QueuePeer", timeoutMs, OUT::flush);

        Args args;
        try {
            args = parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("QueuePeer: " + e.getMessage());
            System.err.println(
                    "usage: QueuePeer <mode> <connectString> <queuePath> <count> [prefix]");
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_USAGE);
            return;
        }

        try {
            run(args);
            OUT.flush();
            System.err.println("done " + args.count());
            System.err.flush();
            // Client libraries may leave non-daemon threads behind; do not wait for them.
            System.exit(0);
        } catch (UsageException e) {
            OUT.flush();
            System.err.println("QueuePeer " + args.mode() + ": " + e.getMessage());
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_USAGE);
        } catch (Throwable t) {
            OUT.flush();
            System.err.println("QueuePeer " + args.mode() + " failed:");
            t.printStackTrace(System.err);
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_ERROR);
        }
    }

    /** One mode of operation. */
    @FunctionalInterface
    interface Mode {
        void run(Args args) throws Exception;
    }

    /** Every mode by its command-line name. */
    static final Map<String, Mode> MODES = new LinkedHashMap<>();

    static {
        MODES.put("classic-offer", QueuePeer::classicOffer);
        MODES.put("classic-take", QueuePeer::classicTake);
        MODES.put("simple-offer", QueuePeer::simpleOffer);
        MODES.put("simple-take", QueuePeer::simpleTake);
        CuratorModes.register(MODES);
        LatchModes.register(MODES);
        MutexModes.register(MODES);
        BarrierModes.register(MODES);
        RwLockModes.register(MODES);
        ShardModes.register(MODES);
        SemaphoreModes.register(MODES);
        SelectorModes.register(MODES);
    }

    /** Dispatches to the mode's implementation. */
    static void run(Args a) throws Exception {
        MODES.get(a.mode()).run(a);
    }

    static Args parse(String[] argv) {
        if (argv.length < 4 || argv.length > 5) {
            throw new IllegalArgumentException("expected 4 or 5 arguments, got " + argv.length);
        }
        String mode = argv[0];
        if (!MODES.containsKey(mode)) {
            throw new IllegalArgumentException(
                    "unknown mode '" + mode + "'; known modes: " + String.join(", ", MODES.keySet()));
        }
        int count;
        try {
            count = Integer.parseInt(argv[3]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("count is not a number: '" + argv[3] + "'");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count must not be negative: " + count);
        }
        String prefix = argv.length == 5 ? argv[4] : "item-";
        return new Args(mode, argv[1], argv[2], count, prefix, CuratorModes.Options.fromSystemProperties());
    }

    /** Prints one taken item as a UTF-8 line and flushes. */
    static void emit(byte[] item) {
        emit(new String(item, StandardCharsets.UTF_8));
    }

    /** Prints one line on stdout and flushes. */
    static void emit(String line) {
        OUT.println(line);
        OUT.flush();
    }

    // ---------------------------------------------------------------- classic recipe

    /** A raw ZooKeeper client, returned once the session is SyncConnected. */
    static ZooKeeper connectZooKeeper(String connect) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, SESSION_TIMEOUT_MS, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        // The watchdog bounds the whole run, so waiting without a limit is fine.
        connected.await();
        return zk;
    }

    /** Creates the missing ancestors of path (not path itself) as persistent nodes. */
    static void createAncestors(ZooKeeper zk, String path) throws Exception {
        int slash = 0;
        while ((slash = path.indexOf('/', slash + 1)) > 0) {
            String ancestor = path.substring(0, slash);
            try {
                zk.create(ancestor, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                // fine
            }
        }
    }

    static DistributedQueue classicQueue(ZooKeeper zk, String path) throws Exception {
        createAncestors(zk, path);
        return new DistributedQueue(zk, path, ZooDefs.Ids.OPEN_ACL_UNSAFE);
    }

    static void classicOffer(Args a) throws Exception {
        ZooKeeper zk = connectZooKeeper(a.connect());
        try {
            DistributedQueue queue = classicQueue(zk, a.path());
            for (int i = 0; i < a.count(); i++) {
                if (!queue.offer(a.item(i))) {
                    throw new IllegalStateException("classic offer returned false for item " + i);
                }
            }
        } finally {
            zk.close();
        }
    }

    static void classicTake(Args a) throws Exception {
        ZooKeeper zk = connectZooKeeper(a.connect());
        try {
            DistributedQueue queue = classicQueue(zk, a.path());
            for (int i = 0; i < a.count(); i++) {
                emit(queue.take());
            }
        } finally {
            zk.close();
        }
    }

    // ---------------------------------------------------------------- Curator

    /** A started Curator client, returned once connected. */
    static CuratorFramework connectCurator(String connect) throws Exception {
        return connectCurator(connect, SESSION_TIMEOUT_MS);
    }

    /** A started Curator client with a session timeout, returned once connected. */
    static CuratorFramework connectCurator(String connect, int sessionTimeoutMs) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, sessionTimeoutMs, CONNECTION_TIMEOUT_MS,
                new ExponentialBackoffRetry(100, 10));
        client.start();
        client.blockUntilConnected();
        return client;
    }

    /** The session timeout -Dpeer.sessionTimeoutMs asks for (default 30000). */
    static int sessionTimeoutMs() {
        return Integer.getInteger("peer.sessionTimeoutMs", SESSION_TIMEOUT_MS);
    }

    /** The ledger file -Dpeer.ledger names (required by the modes that write one). */
    static Path ledger() {
        String name = System.getProperty("peer.ledger");
        if (name == null) {
            throw new IllegalArgumentException("-Dpeer.ledger is required");
        }
        return Path.of(name);
    }

    /**
     * Appends one line to a ledger in one write, so the lines of other
     * writers never mix with it.
     */
    static void append(Path ledger, String line) throws Exception {
        Files.write(ledger, (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** Prints one event line of a mode on stderr and flushes. */
    static synchronized void event(String line) {
        System.err.println(line);
        System.err.flush();
    }

    static void simpleOffer(Args a) throws Exception {
        try (CuratorFramework client = connectCurator(a.connect())) {
            SimpleDistributedQueue queue = new SimpleDistributedQueue(client, a.path());
            for (int i = 0; i < a.count(); i++) {
                if (!queue.offer(a.item(i))) {
                    throw new IllegalStateException("simple offer returned false for item " + i);
                }
            }
        }
    }

    static void simpleTake(Args a) throws Exception {
        try (CuratorFramework client = connectCurator(a.connect())) {
            SimpleDistributedQueue queue = new SimpleDistributedQueue(client, a.path());
            for (int i = 0; i < a.count(); i++) {
                emit(queue.take());
            }
        }
    }
}
