/*
 * MutexModes: the QueuePeer mode that takes turns at a lock with Curator's
 * InterProcessMutex, so the Rust tests can share a lock path with it.
 *
 *   curator-mutex  <lockPath> <rounds> <id>
 *
 * Acquires an InterProcessMutex(client, lockPath) `rounds` times. While it
 * holds, it appends "enter <id>.<round>" to the ledger file, sleeps holdMs,
 * and appends "exit <id>.<round>" before it releases: each line one append
 * of its own, so the lines of other writers never mix with it. Prints on
 * stderr, each as one line: "ready" once connected, "held N" after the
 * N-th enter, and exits 0 after the last release.
 *
 * Options (system properties):
 *   -Dpeer.ledger=FILE          the ledger (required)
 *   -Dpeer.holdMs=N             how long each hold lasts (default 20)
 *   -Dpeer.sessionTimeoutMs=N   the client's session timeout (default 30000)
 */

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;

final class MutexModes {
    private MutexModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-mutex", MutexModes::mutex);
    }

    static void mutex(QueuePeer.Args a) throws Exception {
        takeTurns(a, client -> new InterProcessMutex(client, a.path()));
    }

    /**
     * Connects, makes its lock with lockOf, prints "ready", and takes turns
     * at it as the mode's comment says: the loop every lock mode shares.
     */
    static void takeTurns(QueuePeer.Args a, Function<CuratorFramework, InterProcessLock> lockOf) throws Exception {
        Path ledger = QueuePeer.ledger();
        int holdMs = Integer.getInteger("peer.holdMs", 20);
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            InterProcessLock lock = lockOf.apply(client);
            QueuePeer.event("ready");
            for (int round = 0; round < a.count(); round++) {
                lock.acquire();
                try {
                    String who = a.prefix() + "." + round;
                    QueuePeer.append(ledger, "enter " + who);
                    QueuePeer.event("held " + (round + 1));
                    Thread.sleep(holdMs);
                    QueuePeer.append(ledger, "exit " + who);
                } finally {
                    lock.release();
                }
            }
        }
    }
}
