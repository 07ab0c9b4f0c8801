//! The session handshake: the first frame on a connection is the client's
//! `ConnectRequest`, and the server's first frame its `ConnectResponse`
//! (neither has a request or reply header).

use super::jute::{framed, Reader};
use crate::error::DecodeError;

/// The protocol version this client speaks, and the only one there is.
const PROTOCOL_VERSION: i32 = 0;

/// The client's opening frame: a new session (`session_id` 0, an empty
/// password), or the resumption of one on another connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConnectRequest<'a> {
    /// The last zxid the client saw; a server that has seen less refuses the
    /// connection (by closing it), so the client never goes back in time.
    pub(crate) last_zxid: i64,
    /// The session timeout asked for; the server clamps it to its limits.
    pub(crate) timeout_ms: i32,
    /// The session to resume, 0 for a new one.
    pub(crate) session_id: i64,
    /// The session's password, empty for a new one.
    pub(crate) password: &'a [u8],
    /// Whether a server cut off from its quorum may serve the client
    /// read-only.
    pub(crate) read_only: bool,
}

impl ConnectRequest<'_> {
    /// Appends the request as one length-prefixed frame to `out`:
    /// `protocolVersion`, `lastZxidSeen`, `timeOut`, `sessionId`, `passwd`,
    /// then the `readOnly` flag.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        framed(out, |w| {
            w.i32(PROTOCOL_VERSION);
            w.i64(self.last_zxid);
            w.i32(self.timeout_ms);
            w.i64(self.session_id);
            w.buffer(self.password);
            w.bool(self.read_only);
        });
    }
}

/// The server's answer to a [`ConnectRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectResponse {
    /// The negotiated session timeout. Zero or less means the server refused
    /// to resume the session because it expired: the caller must treat the
    /// session as expired (and its id and password as void).
    pub(crate) timeout_ms: i32,
    /// The session's id.
    pub(crate) session_id: i64,
    /// The session's password, for resuming it on another connection.
    pub(crate) password: Vec<u8>,
    /// Whether the server serves the session read-only (false when an older
    /// server leaves the flag out).
    pub(crate) read_only: bool,
}

impl ConnectResponse {
    /// The response in `frame` (the bytes after the length prefix):
    /// `protocolVersion`, `timeOut`, `sessionId`, `passwd`, and an optional
    /// `readOnly` flag.
    pub(crate) fn decode(frame: &[u8]) -> Result<ConnectResponse, DecodeError> {
        let mut r = Reader::new(frame);
        let _protocol_version = r.i32()?;
        let timeout_ms = r.i32()?;
        let session_id = r.i64()?;
        let password = r.buffer()?;
        let read_only = match r.remaining() {
            0 => false,
            _ => r.bool()?,
        };
        r.finish()?;
        Ok(ConnectResponse {
            timeout_ms,
            session_id,
            password,
            read_only,
        })
    }

    /// Whether the server says the session expired (a timeout of zero or
    /// less).
    pub(crate) fn is_expired(&self) -> bool {
        self.timeout_ms <= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_request_is_encoded_field_by_field() {
        let mut out = vec![0xAA];
        ConnectRequest {
            last_zxid: 0x0102_0304_0506_0708,
            timeout_ms: 30_000,
            session_id: 0x1122_3344_5566_7788,
            password: &[9, 8, 7],
            read_only: true,
        }
        .encode(&mut out);
        #[rustfmt::skip]
        let expected = [
            0xAA, // already in the buffer
            0, 0, 0, 32, // frame length
            0, 0, 0, 0, // protocolVersion
            1, 2, 3, 4, 5, 6, 7, 8, // lastZxidSeen
            0, 0, 0x75, 0x30, // timeOut: 30000
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // sessionId
            0, 0, 0, 3, 9, 8, 7, // passwd
            1, // readOnly
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn a_new_session_sends_an_empty_password() {
        let mut out = Vec::new();
        ConnectRequest {
            last_zxid: 0,
            timeout_ms: 1,
            session_id: 0,
            password: &[],
            read_only: false,
        }
        .encode(&mut out);
        #[rustfmt::skip]
        let expected = [
            0, 0, 0, 29,
            0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 1,
            0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0,
            0,
        ];
        assert_eq!(out, expected);
    }

    #[rustfmt::skip]
    const RESPONSE: [u8; 36] = [
        0, 0, 0, 0, // protocolVersion
        0, 0, 0x9C, 0x40, // timeOut: 40000
        0, 0, 0, 0, 0, 0, 0x01, 0x02, // sessionId
        0, 0, 0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, // passwd
    ];

    #[test]
    fn a_response_without_the_read_only_flag_decodes() {
        let response = ConnectResponse::decode(&RESPONSE).expect("decodes");
        assert_eq!(
            response,
            ConnectResponse {
                timeout_ms: 40_000,
                session_id: 0x0102,
                password: (1..=16).collect(),
                read_only: false,
            }
        );
        assert!(!response.is_expired());
    }

    #[test]
    fn a_response_with_the_read_only_flag_decodes() {
        for (flag, read_only) in [(0, false), (1, true)] {
            let mut frame = RESPONSE.to_vec();
            frame.push(flag);
            let response = ConnectResponse::decode(&frame).expect("decodes");
            assert_eq!((response.read_only, response.session_id), (read_only, 0x0102));
        }
    }

    #[test]
    fn an_expired_session_is_told_by_its_timeout() {
        #[rustfmt::skip]
        let frame = [
            0, 0, 0, 0,
            0, 0, 0, 0, // timeOut: 0, the session expired
            0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0,
            0,
        ];
        let response = ConnectResponse::decode(&frame).expect("decodes");
        assert!(response.is_expired());
    }

    #[test]
    fn truncated_or_padded_responses_are_refused() {
        for cut in 0..RESPONSE.len() {
            assert!(ConnectResponse::decode(&RESPONSE[..cut]).is_err(), "cut at {cut}");
        }
        let mut frame = RESPONSE.to_vec();
        frame.extend_from_slice(&[1, 0]);
        let e = ConnectResponse::decode(&frame).expect_err("two bytes after the password");
        assert_eq!((e.what, e.offset), ("trailing bytes", RESPONSE.len() + 1));
    }

    #[test]
    fn a_huge_password_length_is_refused() {
        let mut frame = RESPONSE.to_vec();
        frame[16..20].copy_from_slice(&i32::MAX.to_be_bytes());
        let e = ConnectResponse::decode(&frame).expect_err("past the end");
        assert_eq!((e.what, e.offset), ("length past the end", 16));
    }
}
