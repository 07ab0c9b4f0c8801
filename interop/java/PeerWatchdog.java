/*
 * PeerWatchdog: the whole-run timeout every Java peer has, so none can hang
 * the Rust side that started it.
 */

/** Ends a peer's process once its whole-run timeout has passed. */
final class PeerWatchdog {
    /** The exit code of a peer whose whole run took longer than its timeout. */
    static final int EXIT_TIMEOUT = 3;

    private PeerWatchdog() {}

    /**
     * Starts a daemon thread that, once timeoutMs have passed, runs
     * beforeExit, says so on stderr and halts the JVM with EXIT_TIMEOUT.
     */
    static void start(String peer, long timeoutMs, Runnable beforeExit) {
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(timeoutMs);
            } catch (InterruptedException e) {
                return;
            }
            beforeExit.run();
            System.err.println(peer + ": timed out after " + timeoutMs + " ms (peer.timeout.ms)");
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_TIMEOUT);
        }, peer + "-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }
}
