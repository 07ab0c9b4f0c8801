/*
 * SelectorModes: the QueuePeer mode that takes turns leading with Curator's
 * LeaderSelector, so the Rust tests can share a leader path with it.
 *
 *   curator-selector  <leaderPath> <terms> <id>
 *
 * Starts a LeaderSelector(client, leaderPath, listener) with id <id> and
 * autoRequeue(), whose listener is a LeaderSelectorListenerAdapter (the
 * leader is interrupted at SUSPENDED and LOST). Each term appends
 * "enter <id>.<n>" to the ledger file, prints "leader <n>" on stderr,
 * sleeps holdMs, and appends "exit <id>.<n>" before it returns (also when
 * interrupted), each line one append of its own. Prints "ready" once
 * started; after <terms> terms it closes the selector, prints "closed" and
 * exits 0. Killing the process instead leaves its node to the session's
 * expiry.
 *
 * Options (system properties):
 *   -Dpeer.ledger=FILE          the ledger (required)
 *   -Dpeer.holdMs=N             how long each term lasts (default 20)
 *   -Dpeer.sessionTimeoutMs=N   the client's session timeout (default 30000)
 */

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Semaphore;

final class SelectorModes {
    private SelectorModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-selector", SelectorModes::selector);
    }

    static void selector(QueuePeer.Args a) throws Exception {
        Path ledger = QueuePeer.ledger();
        int holdMs = Integer.getInteger("peer.holdMs", 20);
        Semaphore ended = new Semaphore(0);
        try (CuratorFramework client = QueuePeer.connectCurator(a.connect(), QueuePeer.sessionTimeoutMs())) {
            LeaderSelector selector = new LeaderSelector(client, a.path(), new LeaderSelectorListenerAdapter() {
                private int terms;

                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    String who = a.prefix() + "." + (++terms);
                    QueuePeer.append(ledger, "enter " + who);
                    QueuePeer.event("leader " + terms);
                    try {
                        Thread.sleep(holdMs);
                    } finally {
                        QueuePeer.append(ledger, "exit " + who);
                        ended.release();
                    }
                }
            });
            selector.setId(a.prefix());
            selector.autoRequeue();
            selector.start();
            QueuePeer.event("ready");
            ended.acquire(a.count());
            selector.close();
            QueuePeer.event("closed");
        }
    }
}
