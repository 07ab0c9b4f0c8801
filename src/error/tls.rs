//! Why TLS could not be used: a bad setting found when the client was
//! built, or a server whose TLS handshake failed.

use std::fmt;
use std::sync::Arc;

/// What went wrong with TLS. Part of [`TlsError`].
///
/// ```
/// use zk_queue::client::TlsErrorKind;
/// assert_eq!(TlsErrorKind::UnknownCa.to_string(), "the server's certificate is signed by an unknown certificate authority");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlsErrorKind {
    /// A file of the settings could not be read.
    UnreadableFile,
    /// A file of the settings holds no usable PEM certificate or key.
    BadPem,
    /// The client certificate and key could not be used together.
    BadClientCertificate,
    /// The server name to verify is not a valid DNS name or IP address.
    BadServerName,
    /// The server's certificate is not signed by a trusted certificate
    /// authority.
    UnknownCa,
    /// The server's certificate has expired.
    Expired,
    /// The server's certificate is not valid yet.
    NotYetValid,
    /// The server's certificate is valid, but not for the name verified.
    WrongHost,
    /// The server is not a TLS server: it closed the connection or answered
    /// in plain text at the handshake (a plain client port).
    NotTls,
    /// The server refused the handshake (an alert), for example the
    /// client's certificate, or the lack of one.
    Refused,
    /// Another handshake failure.
    Handshake,
}

impl fmt::Display for TlsErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsErrorKind::UnreadableFile => "cannot read a tls file",
            TlsErrorKind::BadPem => "no usable pem certificate or key",
            TlsErrorKind::BadClientCertificate => "the client certificate and key cannot be used",
            TlsErrorKind::BadServerName => "the server name to verify is not a dns name or ip address",
            TlsErrorKind::UnknownCa => "the server's certificate is signed by an unknown certificate authority",
            TlsErrorKind::Expired => "the server's certificate has expired",
            TlsErrorKind::NotYetValid => "the server's certificate is not valid yet",
            TlsErrorKind::WrongHost => "the server's certificate is not valid for the host name verified",
            TlsErrorKind::NotTls => "the server does not speak tls",
            TlsErrorKind::Refused => "the server refused the tls handshake",
            TlsErrorKind::Handshake => "the tls handshake failed",
        })
    }
}

/// A TLS failure: its [`kind`](TlsError::kind), a detail (the file, what
/// the TLS library said of a failed handshake), and the TLS library's error as its
/// [`source`](std::error::Error::source).
///
/// Equal when kind and detail are.
///
/// ```
/// use zk_queue::client::{TlsError, TlsErrorKind};
/// let e = TlsError::new(TlsErrorKind::NotTls, "");
/// assert_eq!(e.kind(), TlsErrorKind::NotTls);
/// assert_eq!(e.to_string(), "the server does not speak tls");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
#[derive(Clone, Debug)]
pub struct TlsError {
    kind: TlsErrorKind,
    detail: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl TlsError {
    /// A failure of `kind`, with `detail` (empty for none).
    ///
    /// ```
    /// use zk_queue::client::{TlsError, TlsErrorKind};
    /// let e = TlsError::new(TlsErrorKind::UnreadableFile, "/etc/zk/ca.pem");
    /// assert_eq!(e.to_string(), "cannot read a tls file: /etc/zk/ca.pem");
    /// ```
    pub fn new(kind: TlsErrorKind, detail: impl Into<String>) -> TlsError {
        TlsError {
            kind,
            detail: detail.into(),
            source: None,
        }
    }

    /// The failure with its cause.
    pub(crate) fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> TlsError {
        self.source = Some(Arc::new(source));
        self
    }

    /// What went wrong.
    ///
    /// ```
    /// use zk_queue::client::{TlsError, TlsErrorKind};
    /// assert_eq!(TlsError::new(TlsErrorKind::Expired, "").kind(), TlsErrorKind::Expired);
    /// ```
    pub fn kind(&self) -> TlsErrorKind {
        self.kind
    }

    /// The detail: the file, or what the TLS library said of a failed
    /// handshake; empty for none.
    ///
    /// ```
    /// use zk_queue::client::{TlsError, TlsErrorKind};
    /// assert_eq!(TlsError::new(TlsErrorKind::BadPem, "ca.pem").detail(), "ca.pem");
    /// ```
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl PartialEq for TlsError {
    fn eq(&self, other: &TlsError) -> bool {
        self.kind == other.kind && self.detail == other.detail
    }
}

impl Eq for TlsError {}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}: {}", self.kind, self.detail)
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
