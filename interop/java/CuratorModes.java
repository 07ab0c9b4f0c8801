/*
 * CuratorModes: the QueuePeer modes that drive Curator's DistributedQueue
 * family (plain, priority, delay and id queues) with String items, serialised
 * as UTF-8 by a QueueSerializer<String> and framed by Curator's ItemSerializer.
 *
 * Producers read the items from stdin (UTF-8, one per line, exactly <count>
 * lines up to EOF) so the caller controls the exact content:
 *   curator-put            <item>                 DistributedQueue.put(item)
 *   curator-put-priority   <priority> <item>      DistributedPriorityQueue.put(item, priority)
 *   curator-put-delay      <epochMillis> <item>   DistributedDelayQueue.put(item, epochMillis)
 *   curator-put-id         <id> <item>            DistributedIdQueue.put(item, id)
 *   curator-put-multi      <item>                 all lines in ONE putMulti (one znode)
 * A line's first space separates the number or id from the item; the item is
 * the rest of the line, possibly empty or containing spaces. Producers are
 * producer-only queues (consumer null) with putInBackground(false); after the
 * puts they flushPuts and close.
 *
 * Consumers start a queue of the kind with a consumer that prints every item
 * it consumes as one stdout line, print "ready" on stderr once the queue is
 * started, and exit 0 once <count> items were printed and the item that
 * completed the count is fully processed (deleted, lock released), after
 * closing the queue:
 *   curator-consume, curator-consume-priority (buildPriorityQueue(0)),
 *   curator-consume-delay, curator-consume-id
 * Once the count is reached no further item is dispatched, so items beyond it
 * stay in ZooKeeper for other consumers. The only exception is a multi-item
 * frame: all its records are delivered and printed, so output can exceed
 * <count> when the count is reached inside a frame.
 *
 *   curator-list           print the children of <queuePath>, sorted, one per
 *                          line (count ignored; no output if the node is missing)
 *
 * Options (system properties; validated up front, bad values exit 2):
 *   -Dpeer.lockPath=/path         .lockPath(path): lock-safe consumption
 *   -Dpeer.failFirst=N            the consumer throws for its first N deliveries
 *                                 (counted over all items); a failed delivery
 *                                 prints nothing on stdout and "failed <item>"
 *                                 on stderr
 *   -Dpeer.errorMode=DELETE|REQUEUE   queue.setErrorMode(..); needs peer.lockPath
 *   -Dpeer.consumeDelayMs=N       sleep N ms at the start of every delivery
 *   -Dpeer.stopAtStdinEof=true    consumers also exit 0 once stdin is closed: no
 *                                 item is dispatched after that, and the one being
 *                                 processed then is finished (printed) first; so
 *                                 the caller ends a consumer that may never reach
 *                                 its count without killing it mid-delivery
 */

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.ErrorMode;
import org.apache.curator.framework.recipes.queue.QueueBase;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;

final class CuratorModes {
    private CuratorModes() {}

    /** How long a producer waits for its puts to be acknowledged. */
    static final long FLUSH_TIMEOUT_MS = 30_000;

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-put", CuratorModes::put);
        modes.put("curator-put-priority", CuratorModes::putPriority);
        modes.put("curator-put-delay", CuratorModes::putDelay);
        modes.put("curator-put-id", CuratorModes::putId);
        modes.put("curator-put-multi", CuratorModes::putMulti);
        modes.put("curator-consume", a -> consume(a, Kind.PLAIN));
        modes.put("curator-consume-priority", a -> consume(a, Kind.PRIORITY));
        modes.put("curator-consume-delay", a -> consume(a, Kind.DELAY));
        modes.put("curator-consume-id", a -> consume(a, Kind.ID));
        modes.put("curator-list", CuratorModes::list);
    }

    /** The queue kinds. */
    enum Kind { PLAIN, PRIORITY, DELAY, ID }

    /** Items are Strings, stored as their UTF-8 bytes. */
    static final QueueSerializer<String> SERIALIZER = new QueueSerializer<>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    // ---------------------------------------------------------------- options

    /** The -Dpeer.* options of the Curator modes. */
    record Options(String lockPath, int failFirst, ErrorMode errorMode, long consumeDelayMs, boolean stopAtStdinEof) {
        /** Reads and validates the system properties; bad values throw IllegalArgumentException. */
        static Options fromSystemProperties() {
            String lockPath = System.getProperty("peer.lockPath");
            if (lockPath != null && lockPath.isEmpty()) {
                throw new IllegalArgumentException("peer.lockPath must not be empty");
            }
            int failFirst = (int) nonNegative("peer.failFirst");
            long consumeDelayMs = nonNegative("peer.consumeDelayMs");
            boolean stopAtStdinEof = Boolean.getBoolean("peer.stopAtStdinEof");
            ErrorMode errorMode = null;
            String mode = System.getProperty("peer.errorMode");
            if (mode != null) {
                try {
                    errorMode = ErrorMode.valueOf(mode.toUpperCase(Locale.ROOT));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(
                            "peer.errorMode must be DELETE or REQUEUE, got '" + mode + "'");
                }
                if (lockPath == null) {
                    throw new IllegalArgumentException("peer.errorMode needs peer.lockPath");
                }
            }
            return new Options(lockPath, failFirst, errorMode, consumeDelayMs, stopAtStdinEof);
        }

        private static long nonNegative(String key) {
            String value = System.getProperty(key);
            if (value == null) {
                return 0;
            }
            long n;
            try {
                n = Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(key + " is not a number: '" + value + "'");
            }
            if (n < 0 || n > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(key + " is out of range: " + n);
            }
            return n;
        }
    }

    /** A builder for queuePath with the options applied. */
    static QueueBuilder<String> builder(
            CuratorFramework client, QueueConsumer<String> consumer, QueuePeer.Args a) {
        QueueBuilder<String> builder = QueueBuilder.builder(client, consumer, SERIALIZER, a.path());
        if (a.options().lockPath() != null) {
            builder.lockPath(a.options().lockPath());
        }
        return builder;
    }

    /** Sets the error mode if one was asked for; call before start(). */
    static <Q extends QueueBase<String>> Q configure(Q queue, QueuePeer.Args a) {
        if (a.options().errorMode() != null) {
            queue.setErrorMode(a.options().errorMode());
        }
        return queue;
    }

    // ---------------------------------------------------------------- producers

    /** Reads stdin (UTF-8) to EOF; it must hold exactly count lines. */
    static List<String> readLines(int count) throws Exception {
        List<String> lines = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            lines.add(line);
        }
        if (lines.size() != count) {
            throw new QueuePeer.UsageException(
                    "expected " + count + " lines on stdin, got " + lines.size());
        }
        return lines;
    }

    /** A stdin line "<key> <item>", split at its first space. */
    record Keyed(String key, String item) {
        static Keyed parse(String line, int number, String keyName) {
            int space = line.indexOf(' ');
            if (space < 0) {
                throw new QueuePeer.UsageException("stdin line " + (number + 1) + ": expected '<"
                        + keyName + "> <item>', got '" + line + "'");
            }
            return new Keyed(line.substring(0, space), line.substring(space + 1));
        }

        long number(int lineNumber) {
            try {
                return Long.parseLong(key);
            } catch (NumberFormatException e) {
                throw new QueuePeer.UsageException(
                        "stdin line " + (lineNumber + 1) + ": not a number: '" + key + "'");
            }
        }
    }

    /** Keyed lines of stdin. */
    static List<Keyed> readKeyed(int count, String keyName) throws Exception {
        List<String> lines = readLines(count);
        List<Keyed> keyed = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            keyed.add(Keyed.parse(lines.get(i), i, keyName));
        }
        return keyed;
    }

    /** Something that puts into a started queue. */
    @FunctionalInterface
    interface Puts<Q> {
        void run(Q queue) throws Exception;
    }

    /** Starts queue, runs the puts, waits for them to be acknowledged, closes. */
    static <Q extends QueueBase<String>> void produce(Q queue, QueuePeer.Args a, Puts<Q> puts)
            throws Exception {
        configure(queue, a).start();
        try {
            puts.run(queue);
            if (!queue.flushPuts(FLUSH_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("flushPuts timed out after " + FLUSH_TIMEOUT_MS + " ms");
            }
        } finally {
            queue.close();
        }
    }

    /** A producer-only builder with foreground puts. */
    static QueueBuilder<String> producer(CuratorFramework client, QueuePeer.Args a) {
        return builder(client, null, a).putInBackground(false);
    }

    static void put(QueuePeer.Args a) throws Exception {
        List<String> items = readLines(a.count());
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            produce(producer(client, a).buildQueue(), a, queue -> {
                for (String item : items) {
                    queue.put(item);
                }
            });
        }
    }

    static void putPriority(QueuePeer.Args a) throws Exception {
        List<Keyed> lines = readKeyed(a.count(), "priority");
        List<Integer> priorities = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            long p = lines.get(i).number(i);
            if (p < Integer.MIN_VALUE || p > Integer.MAX_VALUE) {
                throw new QueuePeer.UsageException("stdin line " + (i + 1) + ": priority out of int range: " + p);
            }
            priorities.add((int) p);
        }
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            produce(producer(client, a).buildPriorityQueue(0), a, queue -> {
                for (int i = 0; i < lines.size(); i++) {
                    queue.put(lines.get(i).item(), priorities.get(i));
                }
            });
        }
    }

    static void putDelay(QueuePeer.Args a) throws Exception {
        List<Keyed> lines = readKeyed(a.count(), "epochMillis");
        List<Long> epochs = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            epochs.add(lines.get(i).number(i));
        }
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            produce(producer(client, a).buildDelayQueue(), a, queue -> {
                for (int i = 0; i < lines.size(); i++) {
                    queue.put(lines.get(i).item(), epochs.get(i));
                }
            });
        }
    }

    static void putId(QueuePeer.Args a) throws Exception {
        List<Keyed> lines = readKeyed(a.count(), "id");
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            produce(producer(client, a).buildIdQueue(), a, queue -> {
                for (Keyed line : lines) {
                    queue.put(line.item(), line.key());
                }
            });
        }
    }

    static void putMulti(QueuePeer.Args a) throws Exception {
        List<String> items = readLines(a.count());
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            produce(producer(client, a).buildQueue(), a, queue -> {
                Iterator<String> it = items.iterator();
                queue.putMulti(() -> it.hasNext() ? it.next() : null);
            });
        }
    }

    // ---------------------------------------------------------------- consumers

    /**
     * The consumer, and the executor through which Curator dispatches every
     * item: the executor runs each item's whole processing inline (like
     * Curator's default direct executor), then checks whether the count is
     * reached; after that it drops further items, leaving them in ZooKeeper.
     */
    static final class Consumer implements QueueConsumer<String> {
        private final int count;
        private final Options options;
        private final CountDownLatch done = new CountDownLatch(1);
        private int deliveries;
        private int printed;
        private boolean finished;
        /** An item's processing is under way in {@link #execute}. */
        private boolean running;

        Consumer(int count, Options options) {
            this.count = count;
            this.options = options;
            if (count == 0) {
                finished = true;
                done.countDown();
            }
        }

        @Override
        public void consumeMessage(String item) throws Exception {
            int delivery;
            synchronized (this) {
                delivery = ++deliveries;
            }
            if (options.consumeDelayMs() > 0) {
                Thread.sleep(options.consumeDelayMs());
            }
            if (delivery <= options.failFirst()) {
                System.err.println("failed " + item);
                System.err.flush();
                throw new RuntimeException(
                        "peer.failFirst: failing delivery " + delivery + " of '" + item + "'");
            }
            QueuePeer.emit(item);
            synchronized (this) {
                printed++;
            }
        }

        @Override
        public void stateChanged(CuratorFramework client, ConnectionState newState) {
            // Curator's queues never call this (CURATOR-336).
        }

        /** The Executor given to the queue builder. */
        void execute(Runnable itemTask) {
            synchronized (this) {
                if (finished) {
                    return;
                }
                running = true;
            }
            try {
                itemTask.run();
            } finally {
                synchronized (this) {
                    running = false;
                    notifyAll();
                    if (printed >= count) {
                        finished = true;
                        done.countDown();
                    }
                }
            }
        }

        /** Dispatches nothing more, waits for the item being processed, then ends the run. */
        void stop() throws InterruptedException {
            synchronized (this) {
                finished = true;
                while (running) {
                    wait();
                }
            }
            done.countDown();
        }

        /** With peer.stopAtStdinEof, a daemon thread that stops the consumer once stdin closes. */
        void stopAtStdinEof() {
            if (!options.stopAtStdinEof()) {
                return;
            }
            Thread reader = new Thread(() -> {
                try {
                    while (System.in.read() != -1) {
                        // Only the end matters.
                    }
                    stop();
                } catch (IOException | InterruptedException e) {
                    // The watchdog still bounds the run.
                }
            }, "stdin-eof");
            reader.setDaemon(true);
            reader.start();
        }

        void awaitDone() throws InterruptedException {
            // The watchdog bounds the whole run.
            done.await();
        }
    }

    static void consume(QueuePeer.Args a, Kind kind) throws Exception {
        Consumer consumer = new Consumer(a.count(), a.options());
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            QueueBuilder<String> builder = builder(client, consumer, a).executor(consumer::execute);
            QueueBase<String> queue = switch (kind) {
                case PLAIN -> builder.buildQueue();
                case PRIORITY -> builder.buildPriorityQueue(0);
                case DELAY -> builder.buildDelayQueue();
                case ID -> builder.buildIdQueue();
            };
            configure(queue, a).start();
            // Items put from now on are seen: the cache's getChildren (and its
            // watch) is queued behind start().
            System.err.println("ready");
            System.err.flush();
            consumer.stopAtStdinEof();
            try {
                consumer.awaitDone();
            } finally {
                queue.close();
            }
        }
    }

    // ---------------------------------------------------------------- listing

    static void list(QueuePeer.Args a) throws Exception {
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect())) {
            List<String> children;
            try {
                children = new ArrayList<>(client.getChildren().forPath(a.path()));
            } catch (KeeperException.NoNodeException e) {
                System.err.println("curator-list: " + a.path() + " does not exist");
                children = new ArrayList<>();
            }
            Collections.sort(children);
            for (String child : children) {
                QueuePeer.emit(child);
            }
        }
    }
}
