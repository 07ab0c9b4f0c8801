//! The [`TlsError`] a failed TLS handshake stands for.

use super::{TlsError, TlsErrorKind};

/// The failure a rustls error of the handshake stands for; `heard` tells
/// whether the server had sent anything before. The TLS library's text is
/// the failure's detail, so that the message says what was wrong.
pub(crate) fn of_handshake(e: rustls::Error, heard: bool) -> TlsError {
    use rustls::{AlertDescription, CertificateError, Error};
    let kind = match &e {
        Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => TlsErrorKind::UnknownCa,
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsErrorKind::Expired,
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => TlsErrorKind::NotYetValid,
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TlsErrorKind::WrongHost
            }
            _ => TlsErrorKind::Handshake,
        },
        Error::InvalidMessage(_) if !heard => TlsErrorKind::NotTls,
        Error::AlertReceived(AlertDescription::CloseNotify) => TlsErrorKind::Handshake,
        Error::AlertReceived(_) => TlsErrorKind::Refused,
        _ => TlsErrorKind::Handshake,
    };
    // The TLS library's words, so that the message says what was wrong
    // (which names were compared, which alert came) and not only the kind.
    let detail = e.to_string();
    TlsError::new(kind, detail).caused_by(e)
}
