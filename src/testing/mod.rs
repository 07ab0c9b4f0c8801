//! Real ZooKeeper servers for tests.
