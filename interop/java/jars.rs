// The Debian jars the Java peers in this folder compile and run against,
// shared by the test harness (`tests/it/support/java.rs`) and the benchmark
// (`examples/bench/java.rs`), which `include!` this file.

/// Where Debian installs the jars.
const JAR_DIR: &str = "/usr/share/java";

/// The jars the peers need; together they are sufficient even without the
/// `Class-Path` entries of the jars' manifests.
const JARS: &[&str] = &[
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "zookeeper-recipes-queue.jar",
    "curator-client.jar",
    "curator-framework.jar",
    "curator-recipes.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
];
