/*
 * BarrierModes: the QueuePeer mode that is one member of a round of
 * Curator's DistributedDoubleBarrier, so the Rust tests can share a round
 * with it.
 *
 *   curator-double-barrier  <barrierPath> <memberQty> <id>
 *
 * Makes a DistributedDoubleBarrier(client, barrierPath, memberQty) and goes
 * through one round, appending to the ledger file (each line one append of
 * its own, so the lines of other writers never mix with it):
 * "arrive <id>" before enter(), "entered <id>" once enter() returned, then
 * after holdMs "leaving <id>" before leave() and "left <id>" once it
 * returned. Prints on stderr, each as one line: "ready" once connected,
 * "entered" and "left", and exits 0 after leaving.
 *
 * Options (system properties):
 *   -Dpeer.ledger=FILE          the ledger (required)
 *   -Dpeer.holdMs=N             how long it stays inside (default 20)
 *   -Dpeer.sessionTimeoutMs=N   the client's session timeout (default 30000)
 */

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

final class BarrierModes {
    private BarrierModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-double-barrier", BarrierModes::doubleBarrier);
    }

    /** Appends one line to the ledger in one write. */
    private static void append(Path ledger, String line) throws Exception {
        Files.write(ledger, (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    static void doubleBarrier(QueuePeer.Args a) throws Exception {
        String ledgerName = System.getProperty("peer.ledger");
        if (ledgerName == null) {
            throw new IllegalArgumentException("-Dpeer.ledger is required");
        }
        Path ledger = Path.of(ledgerName);
        int holdMs = Integer.getInteger("peer.holdMs", 20);
        String id = a.prefix();
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(client, a.path(), a.count());
            QueuePeer.event("ready");
            append(ledger, "arrive " + id);
            barrier.enter();
            append(ledger, "entered " + id);
            QueuePeer.event("entered");
            Thread.sleep(holdMs);
            append(ledger, "leaving " + id);
            barrier.leave();
            append(ledger, "left " + id);
            QueuePeer.event("left");
        }
    }
}
