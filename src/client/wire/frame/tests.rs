//! The frame reader on streams cut every way, on bad lengths, and on reads
//! that time out.

use std::collections::VecDeque;
use std::io::{self, Read};

use super::*;

/// A stream that hands out its bytes in the given pieces (empty ones left
/// out: a read of nothing is the end of the stream), with a timeout error
/// before each piece.
struct Pieces {
    pieces: VecDeque<Vec<u8>>,
    timeout_next: bool,
}

impl Pieces {
    fn new(pieces: Vec<Vec<u8>>) -> Pieces {
        Pieces {
            pieces: pieces.into_iter().filter(|p| !p.is_empty()).collect(),
            timeout_next: true,
        }
    }
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.timeout_next) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let Some(mut piece) = self.pieces.pop_front() else {
            return Ok(0);
        };
        let n = piece.len().min(buf.len());
        buf[..n].copy_from_slice(&piece[..n]);
        if n < piece.len() {
            self.pieces.push_front(piece.split_off(n));
        } else {
            self.timeout_next = true;
        }
        Ok(n)
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    [&(body.len() as i32).to_be_bytes()[..], body].concat()
}

/// Every frame `r` yields until the end of the stream; timeouts are retried.
fn drain(reader: &mut FrameReader, r: &mut impl Read) -> Result<Vec<Vec<u8>>, DecodeError> {
    let mut frames = Vec::new();
    loop {
        match reader.read_from(r) {
            Ok(0) => return Ok(frames),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        while let Some(frame) = reader.next_frame()? {
            frames.push(frame);
        }
    }
}

#[test]
fn frames_split_at_every_offset_come_out_whole() {
    let bodies = [b"first".to_vec(), vec![], (0..=255).collect::<Vec<u8>>()];
    let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        let mut source = Pieces::new(vec![a.to_vec(), b.to_vec()]);
        let mut reader = FrameReader::new(1024);
        assert_eq!(drain(&mut reader, &mut source), Ok(bodies.to_vec()), "cut at {cut}");
        assert_eq!(reader.buffered(), 0);
    }
}

#[test]
fn frames_read_a_byte_at_a_time_come_out_whole() {
    let bodies = [b"one".to_vec(), b"two".to_vec()];
    let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
    let mut source = Pieces::new(stream.iter().map(|b| vec![*b]).collect());
    assert_eq!(drain(&mut FrameReader::new(16), &mut source), Ok(bodies.to_vec()));
}

#[test]
fn several_frames_in_one_read_come_out_one_by_one() {
    let stream = [frame(b"a"), frame(b"bb"), frame(b"ccc"), vec![0, 0]].concat();
    let mut reader = FrameReader::new(16);
    assert_eq!(reader.read_from(&mut stream.as_slice()).ok(), Some(stream.len()));
    assert_eq!(reader.next_frame(), Ok(Some(b"a".to_vec())));
    assert_eq!(reader.next_frame(), Ok(Some(b"bb".to_vec())));
    assert_eq!(reader.next_frame(), Ok(Some(b"ccc".to_vec())));
    assert_eq!(reader.next_frame(), Ok(None));
    assert_eq!(reader.buffered(), 2);
}

#[test]
fn a_timeout_mid_frame_loses_nothing() {
    let stream = frame(b"hello world");
    let mut source = Pieces::new(vec![stream[..3].to_vec(), stream[3..9].to_vec(), stream[9..].to_vec()]);
    let mut reader = FrameReader::new(64);
    let mut timeouts = 0;
    let got = loop {
        match reader.read_from(&mut source) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => timeouts += 1,
            other => assert!(matches!(other, Ok(n) if n > 0), "{other:?}"),
        }
        if let Some(frame) = reader.next_frame().expect("valid") {
            break frame;
        }
    };
    assert_eq!((got.as_slice(), timeouts), (&b"hello world"[..], 3));
}

#[test]
fn a_frame_of_the_maximum_length_is_accepted() {
    let stream = frame(&[7; 100]);
    let mut reader = FrameReader::new(100);
    reader.read_from(&mut stream.as_slice()).expect("read");
    assert_eq!(reader.next_frame(), Ok(Some(vec![7; 100])));
}

#[test]
fn an_oversized_length_is_an_error() {
    let stream = [frame(b"ok"), frame(&[0; 101])].concat();
    let mut reader = FrameReader::new(100);
    reader.read_from(&mut stream.as_slice()).expect("read");
    assert_eq!(reader.next_frame(), Ok(Some(b"ok".to_vec())));
    let e = DecodeError {
        what: "frame longer than the maximum",
        offset: 6,
    };
    assert_eq!(reader.next_frame(), Err(e.clone()));
    assert_eq!(reader.next_frame(), Err(e), "the error stays");
}

#[test]
fn a_negative_length_is_an_error() {
    let mut reader = FrameReader::new(100);
    reader.read_from(&mut &[0xFF, 0xFF, 0xFF, 0xFE, 0][..]).expect("read");
    let e = reader.next_frame().expect_err("negative");
    assert_eq!((e.what, e.offset), ("negative frame length", 0));
}

#[test]
fn a_huge_declared_length_allocates_only_what_arrived() {
    let mut reader = FrameReader::new(usize::MAX);
    let mut stream = &[0x40, 0, 0, 0, 1, 2, 3, 4, 5, 6][..]; // 1 GiB declared, 6 bytes sent
    assert_eq!(reader.read_from(&mut stream).ok(), Some(10));
    assert_eq!(reader.next_frame(), Ok(None));
    assert!(reader.buf.capacity() <= 10 + CHUNK, "{}", reader.buf.capacity());
}

#[test]
fn a_long_frame_grows_the_buffer_chunk_by_chunk_and_it_shrinks_after() {
    let body: Vec<u8> = (0..5 * CHUNK).map(|i| i as u8).collect();
    let stream = [frame(&body), frame(b"small")].concat();
    let mut source = stream.as_slice();
    let mut reader = FrameReader::new(8 * CHUNK);
    let mut frames = Vec::new();
    while reader.read_from(&mut source).expect("read") > 0 {
        assert!(
            reader.buf.capacity() <= reader.buffered() + 2 * CHUNK,
            "{}",
            reader.buf.capacity()
        );
        while let Some(frame) = reader.next_frame().expect("valid") {
            frames.push(frame);
        }
    }
    assert_eq!(frames, [body, b"small".to_vec()]);
    reader.read_from(&mut &b""[..]).expect("read");
    assert!(reader.buf.capacity() <= 2 * CHUNK, "{}", reader.buf.capacity());
}
