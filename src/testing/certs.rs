//! Certificates for TLS tests, made at run time ([`TestCertificates`]), and
//! the TLS settings of a test server's secure client port ([`ServerTls`]).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

use super::error::ServerError;

/// The names a valid server certificate is made for.
const SERVER_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// A certificate authority: its certificate and key.
struct Authority {
    cert: Certificate,
    key: KeyPair,
}

/// A test certificate authority and certificates signed by it, written as
/// PEM files in a temporary directory (removed on drop): a valid server
/// certificate for `localhost` and `127.0.0.1`, an expired one, one for
/// another host, one signed by an unknown authority, and client
/// certificates on demand.
///
/// ```no_run
/// use zk_queue::testing::{ClientAuth, ServerCertificate, TestCertificates, TestingServer};
/// let certs = TestCertificates::generate()?;
/// let server = TestingServer::builder()
///     .secure_client_port(certs.server_tls(ServerCertificate::Valid).client_auth(ClientAuth::Want))
///     .start()?;
/// println!("tls at {}, trusting {}", server.secure_connect_string().unwrap(), certs.ca_file().display());
/// # Ok::<(), zk_queue::testing::ServerError>(())
/// ```
pub struct TestCertificates {
    ca: Authority,
    dir: TempDir,
}

impl std::fmt::Debug for TestCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCertificates")
            .field("dir", &self.dir.path())
            .finish()
    }
}

/// Which server certificate a test server presents.
///
/// ```
/// use zk_queue::testing::ServerCertificate;
/// assert_ne!(ServerCertificate::Valid, ServerCertificate::Expired);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerCertificate {
    /// Signed by the test authority, for `localhost` and `127.0.0.1`, valid now.
    Valid,
    /// As `Valid`, but it expired in 2001.
    Expired,
    /// Signed by the test authority and valid now, but for `wrong.example` only.
    WrongHost,
    /// For `localhost` and `127.0.0.1` and valid now, but signed by another
    /// authority, unknown to clients that trust the test one.
    UnknownCa,
    /// For `localhost` and `127.0.0.1` and valid now, signed by an authority
    /// with the test authority's name but another key: the name matches,
    /// the signature does not verify.
    ImpostorCa,
}

impl TestCertificates {
    /// Makes a new authority and the server certificates.
    ///
    /// # Errors
    /// [`ServerError::Io`] if the files cannot be written, or a certificate
    /// cannot be made.
    ///
    /// ```
    /// use zk_queue::testing::TestCertificates;
    /// let certs = TestCertificates::generate()?;
    /// assert!(certs.ca_file().exists());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn generate() -> Result<TestCertificates, ServerError> {
        let dir = tempfile::Builder::new()
            .prefix("zk-testing-tls-")
            .tempdir()
            .map_err(|e| ServerError::io("could not create a temporary directory", e))?;
        let ca = authority("zk-queue test ca")?;
        let other = authority("unknown test ca")?;
        let impostor = authority("zk-queue test ca")?;
        let certs = TestCertificates { ca, dir };
        certs.write("ca.pem", &certs.ca.cert.pem())?;
        let valid = SERVER_NAMES.map(String::from).to_vec();
        certs.server_store("server-valid.pem", &valid, false, &certs.ca)?;
        certs.server_store("server-expired.pem", &valid, true, &certs.ca)?;
        certs.server_store("server-wrong-host.pem", &["wrong.example".to_owned()], false, &certs.ca)?;
        certs.server_store("server-unknown-ca.pem", &valid, false, &other)?;
        certs.server_store("server-impostor-ca.pem", &valid, false, &impostor)?;
        Ok(certs)
    }

    /// The test authority's certificate (PEM): what clients trust.
    ///
    /// ```
    /// let certs = zk_queue::testing::TestCertificates::generate()?;
    /// assert!(std::fs::read_to_string(certs.ca_file())?.starts_with("-----BEGIN CERTIFICATE-----"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The TLS settings of a server presenting `which` certificate and
    /// trusting the test authority's client certificates.
    ///
    /// ```
    /// use zk_queue::testing::{ServerCertificate, TestCertificates};
    /// let certs = TestCertificates::generate()?;
    /// let tls = certs.server_tls(ServerCertificate::Expired);
    /// # let _ = tls;
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn server_tls(&self, which: ServerCertificate) -> ServerTls {
        ServerTls::new(self.key_store(which), self.ca_file())
    }

    /// The key store (private key and certificate, PEM) of `which` server
    /// certificate.
    ///
    /// ```
    /// use zk_queue::testing::{ServerCertificate, TestCertificates};
    /// let certs = TestCertificates::generate()?;
    /// let pem = std::fs::read_to_string(certs.key_store(ServerCertificate::Valid))?;
    /// assert!(pem.contains("PRIVATE KEY") && pem.contains("CERTIFICATE"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key_store(&self, which: ServerCertificate) -> PathBuf {
        let file = match which {
            ServerCertificate::Valid => "server-valid.pem",
            ServerCertificate::Expired => "server-expired.pem",
            ServerCertificate::WrongHost => "server-wrong-host.pem",
            ServerCertificate::UnknownCa => "server-unknown-ca.pem",
            ServerCertificate::ImpostorCa => "server-impostor-ca.pem",
        };
        self.dir.path().join(file)
    }

    /// A client certificate for the subject `CN=<common_name>` (what
    /// ZooKeeper's `x509` scheme knows the client by), signed by the test
    /// authority: the certificate's and the key's PEM files.
    ///
    /// # Errors
    /// [`ServerError::Io`] if the files cannot be written, or the
    /// certificate cannot be made.
    ///
    /// ```
    /// let certs = zk_queue::testing::TestCertificates::generate()?;
    /// let (cert, key) = certs.client("alice")?;
    /// assert!(cert.exists() && key.exists());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn client(&self, common_name: &str) -> Result<(PathBuf, PathBuf), ServerError> {
        let names = SERVER_NAMES.map(String::from).to_vec();
        let (cert, key) = leaf(common_name, &names, false, &self.ca)?;
        let stem: String = common_name.chars().filter(char::is_ascii_alphanumeric).collect();
        let cert_file = self.write(&format!("client-{stem}.pem"), &cert.pem())?;
        let key_file = self.write(&format!("client-{stem}.key"), &key.serialize_pem())?;
        Ok((cert_file, key_file))
    }

    /// A server key store: key and certificate in one PEM file.
    fn server_store(&self, file: &str, names: &[String], expired: bool, ca: &Authority) -> Result<(), ServerError> {
        let (cert, key) = leaf(&names[0], names, expired, ca)?;
        self.write(file, &format!("{}{}", key.serialize_pem(), cert.pem()))?;
        Ok(())
    }

    /// Writes `text` to `file` in the directory.
    fn write(&self, file: &str, text: &str) -> Result<PathBuf, ServerError> {
        let path = self.dir.path().join(file);
        std::fs::write(&path, text).map_err(|e| ServerError::io(format!("could not write {}", path.display()), e))?;
        Ok(path)
    }
}

/// A certificate could not be made.
fn failed(e: rcgen::Error) -> ServerError {
    ServerError::io("could not make a test certificate", std::io::Error::other(e))
}

/// A new self-signed authority named `name`.
fn authority(name: &str) -> Result<Authority, ServerError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok(Authority { cert, key })
}

/// A certificate for `names`, with the subject `CN=<common_name>`, signed by
/// `ca`; one that expired in 2001 if `expired`.
fn leaf(
    common_name: &str,
    names: &[String],
    expired: bool,
    ca: &Authority,
) -> Result<(Certificate, KeyPair), ServerError> {
    let mut params = CertificateParams::new(names.to_vec()).map_err(failed)?;
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate().map_err(failed)?;
    let cert = params.signed_by(&key, &ca.cert, &ca.key).map_err(failed)?;
    Ok((cert, key))
}

/// Whether a server asks clients for a certificate (`ssl.clientAuth`).
///
/// ```
/// use zk_queue::testing::ClientAuth;
/// assert_eq!(ClientAuth::default(), ClientAuth::Want);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientAuth {
    /// Never asks.
    None,
    /// Asks; a client without one is let in, without an `x509` identity.
    #[default]
    Want,
    /// Requires one.
    Need,
}

/// The TLS settings of a test server's secure client port: its key store
/// (the private key and certificate, PEM), its trust store (the authorities
/// whose client certificates it trusts, PEM) and whether it asks clients for
/// a certificate. The server also knows clients by their certificate
/// (ZooKeeper's `x509` authentication scheme), and does not check the host
/// names of client certificates (`ssl.hostnameVerification=false`): they
/// name users, not hosts.
///
/// ```
/// use zk_queue::testing::{ClientAuth, ServerTls};
/// let tls = ServerTls::new("/tmp/server.pem", "/tmp/ca.pem").client_auth(ClientAuth::Need);
/// # let _ = tls;
/// ```
#[derive(Clone, Debug)]
pub struct ServerTls {
    pub(super) key_store: PathBuf,
    pub(super) trust_store: PathBuf,
    pub(super) client_auth: ClientAuth,
}

impl ServerTls {
    /// Settings with the key store `key_store` and trust store
    /// `trust_store` (both PEM files).
    ///
    /// ```
    /// let tls = zk_queue::testing::ServerTls::new("/tmp/server.pem", "/tmp/ca.pem");
    /// # let _ = tls;
    /// ```
    pub fn new(key_store: impl AsRef<Path>, trust_store: impl AsRef<Path>) -> ServerTls {
        ServerTls {
            key_store: key_store.as_ref().to_owned(),
            trust_store: trust_store.as_ref().to_owned(),
            client_auth: ClientAuth::default(),
        }
    }

    /// Whether the server asks clients for a certificate. Defaults to
    /// [`ClientAuth::Want`].
    ///
    /// ```
    /// use zk_queue::testing::{ClientAuth, ServerTls};
    /// let tls = ServerTls::new("/tmp/server.pem", "/tmp/ca.pem").client_auth(ClientAuth::None);
    /// # let _ = tls;
    /// ```
    pub fn client_auth(mut self, client_auth: ClientAuth) -> ServerTls {
        self.client_auth = client_auth;
        self
    }

    /// The lines of `zoo.cfg` for a secure client port `port`.
    pub(super) fn zoo_cfg(&self, port: u16) -> String {
        let auth = match self.client_auth {
            ClientAuth::None => "none",
            ClientAuth::Want => "want",
            ClientAuth::Need => "need",
        };
        format!(
            "secureClientPort={port}\n\
             secureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\n\
             ssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\n\
             ssl.trustStore.type=PEM\n\
             ssl.clientAuth={auth}\n\
             ssl.hostnameVerification=false\n\
             authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n",
            self.key_store.display(),
            self.trust_store.display(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{ClientAuth, ServerTls};

    #[test]
    fn the_readme_shows_the_zoo_cfg_lines_the_tls_tests_run_against() {
        let readme = include_str!("../../README.md");
        let shown = readme
            .split("```properties\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("the README shows a server's zoo.cfg lines");
        let written = ServerTls::new("/etc/zookeeper/server.pem", "/etc/zookeeper/ca.pem")
            .client_auth(ClientAuth::Want)
            .zoo_cfg(2281);
        assert_eq!(shown, written);
    }
}
