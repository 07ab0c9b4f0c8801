/*
 * SemaphoreModes: the QueuePeer modes that take turns with Curator's
 * semaphores, so the Rust tests can share a semaphore path with them.
 *
 *   curator-semaphore        <path> <rounds> <id>
 *   curator-semaphore-mutex  <path> <rounds> <id>
 *
 * curator-semaphore acquires a lease of an InterProcessSemaphoreV2(client,
 * path, maxLeases) `rounds` times; curator-semaphore-mutex an
 * InterProcessSemaphoreMutex(client, path). While it holds, each appends
 * "enter <id>.<round>" to the ledger file, sleeps holdMs, and appends
 * "exit <id>.<round>" before it releases, as MutexModes does; prints
 * "ready" once connected, "held N" after the N-th enter, and exits 0 after
 * the last release.
 *
 * Options (system properties):
 *   -Dpeer.ledger=FILE          the ledger (required)
 *   -Dpeer.holdMs=N             how long each hold lasts (default 20)
 *   -Dpeer.maxLeases=N          the semaphore's lease count (default 1)
 *   -Dpeer.sessionTimeoutMs=N   the client's session timeout (default 30000)
 */

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

import java.nio.file.Path;
import java.util.Map;

final class SemaphoreModes {
    private SemaphoreModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-semaphore", SemaphoreModes::semaphore);
        modes.put("curator-semaphore-mutex", SemaphoreModes::semaphoreMutex);
    }

    static void semaphoreMutex(QueuePeer.Args a) throws Exception {
        MutexModes.takeTurns(a, client -> new InterProcessSemaphoreMutex(client, a.path()));
    }

    static void semaphore(QueuePeer.Args a) throws Exception {
        Path ledger = QueuePeer.ledger();
        int holdMs = Integer.getInteger("peer.holdMs", 20);
        int maxLeases = Integer.getInteger("peer.maxLeases", 1);
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, a.path(), maxLeases);
            QueuePeer.event("ready");
            for (int round = 0; round < a.count(); round++) {
                Lease lease = semaphore.acquire();
                try {
                    String who = a.prefix() + "." + round;
                    QueuePeer.append(ledger, "enter " + who);
                    QueuePeer.event("held " + (round + 1));
                    Thread.sleep(holdMs);
                    QueuePeer.append(ledger, "exit " + who);
                } finally {
                    semaphore.returnLease(lease);
                }
            }
        }
    }
}
