//! TLS to ZooKeeper's secure client port (feature `tls`), with rustls and
//! its `ring` provider.
//!
//! - [`TlsConfig`] (this file): the trusted certificate authorities, the
//!   client's certificate, the server name verified; read and checked when
//!   built.
//! - `error.rs`: the [`TlsError`] a failed handshake stands for (the
//!   error types are the crate's error module's, re-exported here).
//! - `stream.rs`: the handshake within a deadline, and one connection's
//!   TLS state shared by its writing callers and its reader.

mod error;
mod stream;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

pub use crate::error::{TlsError, TlsErrorKind};
pub(crate) use error::of_handshake;
pub(crate) use stream::{failure_of, handshake, TlsStream};

/// TLS settings of a client: whom to trust, who the client is, and which
/// name the server's certificate must carry. Built by
/// [`TlsConfig::builder`]; given to
/// [`ZkClientBuilder::tls`](crate::client::ZkClientBuilder::tls).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{client::TlsConfig, ZkClient};
/// let tls = TlsConfig::builder("/etc/zookeeper/ca.pem")
///     .client_certificate("/etc/app/client.pem", "/etc/app/client.key")
///     .build()?;
/// let client = ZkClient::builder("zk1:2281,zk2:2281").tls(tls).connect()?;
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
#[derive(Clone)]
pub struct TlsConfig {
    rustls: Arc<rustls::ClientConfig>,
    server_name: Option<ServerName<'static>>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// A builder of settings that trust the certificate authorities of the
    /// PEM file `ca_file` (one certificate or more).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let tls = zk_queue::client::TlsConfig::builder("/etc/zookeeper/ca.pem").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(ca_file: impl AsRef<Path>) -> TlsConfigBuilder {
        TlsConfigBuilder {
            ca_file: ca_file.as_ref().to_owned(),
            client: None,
            server_name: None,
        }
    }

    /// The name the certificate of the server at `host` must carry.
    pub(crate) fn server_name(&self, host: &str) -> Result<ServerName<'static>, TlsError> {
        match &self.server_name {
            Some(name) => Ok(name.clone()),
            None => ServerName::try_from(host.to_owned())
                .map_err(|e| TlsError::new(TlsErrorKind::BadServerName, host).caused_by(e)),
        }
    }

    /// The rustls settings.
    pub(crate) fn rustls(&self) -> Arc<rustls::ClientConfig> {
        Arc::clone(&self.rustls)
    }
}

/// The consuming builder of [`TlsConfig`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// let tls = zk_queue::client::TlsConfig::builder("ca.pem")
///     .server_name("zookeeper.internal")
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TlsConfigBuilder {
    ca_file: PathBuf,
    client: Option<(PathBuf, PathBuf)>,
    server_name: Option<String>,
}

impl TlsConfigBuilder {
    /// Presents the certificate (chain) of the PEM file `cert_file`, with
    /// the private key of the PEM file `key_file` (PKCS#8, PKCS#1 or SEC1),
    /// to servers that ask for one: ZooKeeper's `x509` authentication scheme
    /// then knows the client by the certificate's subject. Defaults to no
    /// client certificate.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let tls = zk_queue::client::TlsConfig::builder("ca.pem")
    ///     .client_certificate("client.pem", "client.key")
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn client_certificate(mut self, cert_file: impl AsRef<Path>, key_file: impl AsRef<Path>) -> Self {
        self.client = Some((cert_file.as_ref().to_owned(), key_file.as_ref().to_owned()));
        self
    }

    /// The name (DNS name or IP address) every server's certificate must
    /// carry. Defaults to the host of each server's address in the connect
    /// string (`zk1` for `zk1:2281`, the IP address for `127.0.0.1:2281`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let tls = zk_queue::client::TlsConfig::builder("ca.pem")
    ///     .server_name("zookeeper.internal")
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn server_name(mut self, name: &str) -> Self {
        self.server_name = Some(name.to_owned());
        self
    }

    /// Reads and checks the files: an unreadable file, a file without a
    /// PEM certificate (or key), a key that does not fit, or a bad server
    /// name is an [`Error::Tls`](crate::Error::Tls).
    ///
    /// ```
    /// use zk_queue::client::{TlsConfig, TlsErrorKind};
    /// let err = TlsConfig::builder("/no/such/ca.pem").build().unwrap_err();
    /// assert!(matches!(err, zk_queue::Error::Tls(e) if e.kind() == TlsErrorKind::UnreadableFile));
    /// ```
    pub fn build(self) -> crate::Result<TlsConfig> {
        self.load().map_err(crate::Error::Tls)
    }

    fn load(self) -> Result<TlsConfig, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certificates(&self.ca_file)? {
            roots.add(cert).map_err(|e| bad_pem(&self.ca_file).caused_by(e))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::new(TlsErrorKind::Handshake, "no tls version").caused_by(e))?
            .with_root_certificates(roots);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert_file, key_file)) => {
                let chain = certificates(cert_file)?;
                let key = private_key(key_file)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    TlsError::new(TlsErrorKind::BadClientCertificate, cert_file.display().to_string()).caused_by(e)
                })?
            }
        };
        let server_name = match self.server_name {
            None => None,
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|e| TlsError::new(TlsErrorKind::BadServerName, name).caused_by(e))?,
            ),
        };
        Ok(TlsConfig {
            rustls: Arc::new(config),
            server_name,
        })
    }
}

/// The file could not be read.
fn unreadable(path: &Path, e: std::io::Error) -> TlsError {
    TlsError::new(TlsErrorKind::UnreadableFile, path.display().to_string()).caused_by(e)
}

/// The file holds no usable PEM.
fn bad_pem(path: &Path) -> TlsError {
    TlsError::new(TlsErrorKind::BadPem, path.display().to_string())
}

/// The certificates of the PEM file `path`: at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = std::fs::read(path).map_err(|e| unreadable(path, e))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad_pem(path).caused_by(e))?;
    if certs.is_empty() {
        return Err(bad_pem(path));
    }
    Ok(certs)
}

/// The first private key of the PEM file `path`.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = std::fs::read(path).map_err(|e| unreadable(path, e))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| bad_pem(path).caused_by(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(builder: TlsConfigBuilder) -> TlsErrorKind {
        match builder.load() {
            Err(e) => e.kind(),
            Ok(_) => panic!("built"),
        }
    }

    #[test]
    fn unreadable_and_non_pem_files_are_refused_when_built() {
        let garbage = std::env::temp_dir().join(format!("zk-queue-garbage-{}.pem", std::process::id()));
        std::fs::write(&garbage, "not a certificate\n").unwrap();
        assert_eq!(
            kind(TlsConfig::builder("/no/such/ca.pem")),
            TlsErrorKind::UnreadableFile
        );
        assert_eq!(kind(TlsConfig::builder(&garbage)), TlsErrorKind::BadPem);
        let _ = std::fs::remove_file(garbage);
    }

    #[test]
    fn errors_keep_the_tls_library_error_as_their_source() {
        let e = TlsConfig::builder("/no/such/ca.pem").load().unwrap_err();
        assert!(std::error::Error::source(&e).is_some());
        assert!(
            e.to_string().starts_with("cannot read a tls file: /no/such/ca.pem"),
            "{e}"
        );
    }
}
