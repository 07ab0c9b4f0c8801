//! Real ZooKeeper servers for tests (feature `testing`).
//!
//! [`TestingServer`] starts a standalone ZooKeeper 3.8 server from Debian's `zookeeper` package
//! (`apt-get install zookeeper`: `/usr/share/java/zookeeper.jar` run by `java` as
//! `org.apache.zookeeper.server.ZooKeeperServerMain`) on a free loopback port, with its data in a
//! temporary directory and its output in a log file next to it. It returns once the server
//! answers `ruok`, and offers the faults a queue must survive: [`stop`](TestingServer::stop),
//! [`kill`](TestingServer::kill), [`pause`](TestingServer::pause) /
//! [`resume`](TestingServer::resume), and [`restart`](TestingServer::restart) on the same port and
//! data.
//!
//! Each server is a JVM that costs about half a second and 50 to 100 MB, so tests that inject no
//! fault should share one server per test binary (kept in a `static`, each test under its own
//! znode path) and only fault tests start their own. A shared server that is never dropped still
//! dies with the test process: the JVM runs under a small `sh` guard that kills it when the
//! process that started it exits, however it exits.
//!
//! For TLS tests, [`TestCertificates`] makes a certificate authority and
//! server and client certificates at run time (valid, expired, for another
//! host, signed by an unknown authority), and
//! [`TestingServerBuilder::secure_client_port`] opens a secure client port
//! with one of them ([`ServerTls`]).
//!
//! To run tests against an existing server instead, set `ZK_CONNECT` (for example
//! `ZK_CONNECT=127.0.0.1:2181 cargo test`) and read it with [`connect_string_from_env`].
//!
//! The harness needs a Unix system with `sh`, and is developed on Debian.
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::OnceLock;
//! use zk_queue::testing::{connect_string_from_env, TestingServer};
//!
//! /// The server shared by every test of this binary.
//! fn shared_connect_string() -> String {
//!     static SERVER: OnceLock<TestingServer> = OnceLock::new();
//!     connect_string_from_env().unwrap_or_else(|| {
//!         SERVER
//!             .get_or_init(|| TestingServer::start().expect("start zookeeper"))
//!             .connect_string()
//!     })
//! }
//! # let _ = shared_connect_string();
//! ```

mod boot;
mod builder;
mod certs;
mod cluster;
mod delay_line;
mod error;
mod launch;
mod probe;
mod process;
mod proxy;
mod proxy_port;
mod server;

pub use builder::TestingServerBuilder;
pub use certs::{ClientAuth, ServerCertificate, ServerTls, TestCertificates};
pub use cluster::TestingCluster;
pub use error::ServerError;
pub use proxy::{FaultProxy, Request};
pub use server::TestingServer;

/// The environment variable naming an existing server for tests.
const ZK_CONNECT: &str = "ZK_CONNECT";

/// Returns `ZK_CONNECT` if set and non-empty.
///
/// Surrounding whitespace is trimmed; a value that is not valid Unicode counts as unset.
///
/// # Examples
///
/// ```
/// use zk_queue::testing::connect_string_from_env;
///
/// match connect_string_from_env() {
///     Some(connect) => println!("using the server at {connect}"),
///     None => println!("ZK_CONNECT is not set; starting a TestingServer"),
/// }
/// ```
pub fn connect_string_from_env() -> Option<String> {
    std::env::var(ZK_CONNECT)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}
