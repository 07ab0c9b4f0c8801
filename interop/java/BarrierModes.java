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

import java.nio.file.Path;
import java.util.Map;

final class BarrierModes {
    private BarrierModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-double-barrier", BarrierModes::doubleBarrier);
    }

    static void doubleBarrier(QueuePeer.Args a) throws Exception {
        Path ledger = QueuePeer.ledger();
        int holdMs = Integer.getInteger("peer.holdMs", 20);
        String id = a.prefix();
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(client, a.path(), a.count());
            QueuePeer.event("ready");
            QueuePeer.append(ledger, "arrive " + id);
            barrier.enter();
            QueuePeer.append(ledger, "entered " + id);
            QueuePeer.event("entered");
            Thread.sleep(holdMs);
            QueuePeer.append(ledger, "leaving " + id);
            barrier.leave();
            QueuePeer.append(ledger, "left " + id);
            QueuePeer.event("left");
        }
    }
}
