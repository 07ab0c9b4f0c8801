/*
 * RwLockModes: the QueuePeer mode that takes turns at one half of Curator's
 * InterProcessReadWriteLock, so the Rust tests can share a read-write lock
 * path with it.
 *
 *   curator-rwlock  <lockPath> <rounds> <id>
 *
 * Acquires the read lock (-Dpeer.role=read, the default) or the write lock
 * (-Dpeer.role=write) of an InterProcessReadWriteLock(client, lockPath)
 * `rounds` times, and writes the ledger and prints its events exactly as
 * curator-mutex does (see MutexModes): "ready", "held N", exit 0.
 *
 * Options (system properties): those of curator-mutex, and
 *   -Dpeer.role=read|write      which half of the lock it takes
 */

import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;

import java.util.Map;

final class RwLockModes {
    private RwLockModes() {}

    static void register(Map<String, QueuePeer.Mode> modes) {
        modes.put("curator-rwlock", RwLockModes::rwlock);
    }

    static void rwlock(QueuePeer.Args a) throws Exception {
        String role = System.getProperty("peer.role", "read");
        if (!role.equals("read") && !role.equals("write")) {
            throw new IllegalArgumentException("-Dpeer.role must be read or write, not " + role);
        }
        MutexModes.takeTurns(a, client -> {
            InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, a.path());
            return role.equals("read") ? lock.readLock() : lock.writeLock();
        });
    }
}
