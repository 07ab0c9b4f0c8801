//! ZooKeeper's client protocol on the wire, as its `zookeeper.jute` record
//! definitions lay it out: encoding and decoding only, with no session state
//! and no I/O beyond the frame reader's reads.
//!
//! A connection starts with the handshake ([`ConnectRequest`],
//! [`ConnectResponse`]). After it, every client frame is a [`Request`] with
//! an xid of the client's choosing (or a fixed one for pings, auth and
//! set-watches), and every server frame starts with a [`ReplyHeader`]: the
//! xid of the request it answers, or [`XID_WATCH_EVENT`] for a
//! [`WatchEvent`]. Replies arrive in request order. [`FrameReader`] cuts the
//! incoming stream into frames; [`decode_reply`] reads a reply's body as the
//! [`ReplyKind`] its request expects.
//!
//! Paths are the client's on the way in and out: a chroot (`/app` of
//! `host:2181/app`) is prefixed to every path sent and taken off every path
//! received.

mod chroot;
mod codes;
mod event;
mod frame;
mod handshake;
mod jute;
mod multi;
mod reply;
mod request;

pub(crate) use crate::error::Code;
pub(crate) use crate::error::DecodeError;
pub(crate) use event::{EventType, WatchEvent};
pub(crate) use frame::FrameReader;
pub(crate) use handshake::{ConnectRequest, ConnectResponse};
pub(crate) use multi::MultiResult;
pub(crate) use reply::{decode_reply, Reply, ReplyError, ReplyHeader, ReplyKind};
pub(crate) use request::Request;

/// The xid of a watch notification.
pub(crate) const XID_WATCH_EVENT: i32 = -1;
/// The xid of a ping and its reply.
pub(crate) const XID_PING: i32 = -2;
/// The xid of an auth request and its reply.
pub(crate) const XID_AUTH: i32 = -4;
/// The xid of a set-watches request and its reply.
pub(crate) const XID_SET_WATCHES: i32 = -8;

/// Feeds `bytes` to every decoder of the protocol, for fuzzing: as a reply
/// frame (its header, then the body as every [`ReplyKind`], with and without
/// a chroot, and as a watch event), as a connect response, and as a stream
/// of frames read in small chunks. Returns whether any of them decoded.
///
/// # Panics
/// If the frames read from the stream depend on how it was cut into reads,
/// which would be a bug.
#[doc(hidden)]
pub fn decode_any_reply(frame: &[u8]) -> bool {
    let mut any = false;
    if let Ok((header, body)) = ReplyHeader::decode(frame) {
        any = true;
        for kind in ReplyKind::ALL {
            for chroot in ["", "/app"] {
                any |= decode_reply(kind, header.err, body, chroot).is_ok();
                any |= decode_reply(kind, Code::OK, body, chroot).is_ok();
            }
        }
        any |= WatchEvent::decode(body, "/app").is_ok();
    }
    any |= ConnectResponse::decode(frame).is_ok();
    let whole = read_frames(frame, usize::MAX);
    let chunk = frame.first().map_or(1, |b| usize::from(b % 7) + 1);
    let chunked = read_frames(frame, chunk);
    assert_eq!(whole, chunked, "frames depend on the read size {chunk}");
    any | whole.0.iter().any(|frame| ReplyHeader::decode(frame).is_ok())
}

/// The frames a [`FrameReader`] (1 MiB at most) reads from `bytes` given
/// `chunk` bytes per read, and how it ended (`None` at the end of the
/// stream).
fn read_frames(bytes: &[u8], chunk: usize) -> (Vec<Vec<u8>>, Option<DecodeError>) {
    let mut reader = FrameReader::new(1 << 20);
    let mut frames = Vec::new();
    let mut rest = bytes;
    loop {
        let mut piece = rest.get(..chunk.min(rest.len())).unwrap_or_default();
        match reader.read_from(&mut piece) {
            Ok(0) | Err(_) => return (frames, None),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
        }
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply frame (without its length prefix) holding a sync answer.
    fn sync_reply() -> Vec<u8> {
        let mut frame = vec![0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0];
        frame.extend_from_slice(&[0, 0, 0, 2, b'/', b's']);
        frame
    }

    #[test]
    fn the_fuzz_hook_decodes_a_reply() {
        assert!(decode_any_reply(&sync_reply()));
    }

    #[test]
    fn the_fuzz_hook_takes_anything() {
        assert!(!decode_any_reply(&[]));
        assert!(!decode_any_reply(&[0xFF; 7]));
        let reply = sync_reply();
        for cut in 0..reply.len() {
            decode_any_reply(&reply[..cut]);
        }
        let stream = [&[0, 0, 0, 22][..], &reply, &[0x80, 0, 0, 0]].concat();
        assert!(decode_any_reply(&stream));
    }

    #[test]
    fn frames_do_not_depend_on_the_read_size() {
        let reply = sync_reply();
        let stream = [&[0, 0, 0, 22][..], &reply, &[0, 0, 0, 22], &reply, &[0, 0]].concat();
        let whole = read_frames(&stream, usize::MAX);
        assert_eq!(whole, (vec![reply.clone(), reply], None));
        for chunk in 1..stream.len() {
            assert_eq!(read_frames(&stream, chunk), whole, "{chunk}");
        }
    }
}
