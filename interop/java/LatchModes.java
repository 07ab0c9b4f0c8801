/*
 * LatchModes: the QueuePeer mode that joins a leader election with Curator's
 * LeaderLatch, so the Rust tests can share a latch path with it.
 *
 *   curator-latch  <latchPath> <holdMs> <id>
 *
 * Starts a LeaderLatch(client, latchPath, id) and prints on stderr, each as
 * one line: "ready" once started, "joined" once the latch has its node,
 * "leader N" when it gains leadership for the N-th time and "not-leader N"
 * when it loses it. After holdMs it closes the latch (printing "closed") and
 * exits 0. Killing the process instead leaves its node to the session's
 * expiry.
 *
 * Options (system properties):
 *   -Dpeer.sessionTimeoutMs=N   the client's session timeout (default 30000)
 */

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;

import java.util.Map;

final class LatchModes {
    private LatchModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-latch", LatchModes::latch);
    }

    static void latch(QueuePeer.Args a) throws Exception {
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            LeaderLatch latch = new LeaderLatch(client, a.path(), a.prefix());
            latch.addListener(new LeaderLatchListener() {
                private int gained;
                private int lost;

                @Override
                public void isLeader() {
                    QueuePeer.event("leader " + (++gained));
                }

                @Override
                public void notLeader() {
                    QueuePeer.event("not-leader " + (++lost));
                }
            });
            latch.start();
            QueuePeer.event("ready");
            while (latch.getOurPath() == null) {
                Thread.sleep(10);
            }
            QueuePeer.event("joined");
            Thread.sleep(a.count());
            latch.close();
            QueuePeer.event("closed");
        }
    }
}
