//! Delivery metadata that rides after an item frame's end marker.
//!
//! Curator's reader stops at the frame's end marker and ignores what follows,
//! and Curator copies a node's bytes unchanged when it requeues it. So this
//! crate keeps its per-item metadata there, invisible to Curator peers. Three
//! versions exist; readers accept all of them:
//!
//! ```text
//! b"ZKQ" 0x01   magic and trailer version
//! u32           failed deliveries so far (big-endian)
//!
//! b"ZKQ" 0x02   magic and trailer version
//! u32           failed deliveries so far (big-endian)
//! u128          the put's token (big-endian), unique per put
//!
//! b"ZKQ" 0x03   magic and trailer version
//! u32           failed deliveries so far
//! u8            which optional fields follow, in this order:
//!   0x01  u128    the put's token
//!   0x02  i64     the item's first put, epoch milliseconds
//!   0x04  i64     not before, epoch milliseconds (a redelivery's back-off)
//!   0x08          why the item was set aside (dead letters):
//!           i64     when, epoch milliseconds
//!           str     the queue path it was taken from
//!           str     its node name there
//!           str     the reason (the consumer's last error)
//! u32           CRC-32 (IEEE) of every trailer byte before it
//!
//! str = u16 length n, then n bytes of UTF-8; every integer is big-endian
//! ```
//!
//! A put writes version 2 (its token lets a producer whose create reply was
//! lost find out whether the create was applied, by reading back the newest
//! items); a requeue, a release and a move to the dead-letter path write
//! version 3. A frame without a trailer (written by Curator, or bytes after
//! the end marker that do not start with `ZKQ`) has had no failed delivery
//! and carries nothing else.
//!
//! Trailers are read strictly: each must end exactly where the node's data
//! ends; version 3 must also match its checksum, set no unknown field bit,
//! and hold UTF-8 texts. A trailer that starts with `ZKQ` and breaks any of
//! that (or has an unknown version) is damaged: the item's records still
//! decode as they are (a trailer never makes an item undecodable), its
//! metadata reads as absent (no failed delivery, no back-off, no story), and
//! the damage is reported as a [`TrailerError`] rather than read as values it
//! does not hold. The checksum catches any damage of up to 32 bits in a row,
//! so a version 3 trailer is never misread through a flipped bit.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Magic of every trailer, before its version byte.
const MAGIC: [u8; 3] = *b"ZKQ";

/// Bytes of a version 1 and a version 2 trailer.
const LEN_V1: usize = 4 + 4;
const LEN_V2: usize = LEN_V1 + 16;

/// Field bits of a version 3 trailer.
const HAS_TOKEN: u8 = 0x01;
const HAS_PUT_AT: u8 = 0x02;
const HAS_NOT_BEFORE: u8 = 0x04;
const HAS_DEATH: u8 = 0x08;
const KNOWN_FIELDS: u8 = HAS_TOKEN | HAS_PUT_AT | HAS_NOT_BEFORE | HAS_DEATH;

/// Bytes of an empty version 3 trailer: magic, version, attempts, flags, CRC.
const MIN_LEN_V3: usize = 4 + 4 + 1 + 4;

/// The longest text a trailer stores; longer texts are cut (at a character
/// boundary).
pub(crate) const MAX_TEXT: usize = u16::MAX as usize;

/// What a trailer records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// Failed deliveries so far.
    pub(crate) attempts: u32,
    /// The put's token, if the producer wrote one.
    pub(crate) token: Option<u128>,
    /// The item's first put, epoch milliseconds; kept across requeues.
    pub(crate) put_at: Option<i64>,
    /// Not to be delivered before this, epoch milliseconds.
    pub(crate) not_before: Option<i64>,
    /// Why the item was moved to a dead-letter path.
    pub(crate) death: Option<Death>,
}

/// Why an item was moved to a dead-letter path, as recorded in it.
///
/// Read with [`inspect::decode_item`](crate::inspect::decode_item) or
/// [`DeadLetters::list`](crate::admin::DeadLetters::list).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// for letter in zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?.list()? {
///     if let Some(death) = &letter.death {
///         println!("{} from {}/{}: {}", letter.name.name, death.source, death.original_name, death.reason);
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Death {
    /// The consumer's last error, cut to 4 KiB.
    pub reason: String,
    /// When it was moved, by the consumer's clock (millisecond precision).
    pub died_at: SystemTime,
    /// The path of the queue it was taken from.
    pub source: String,
    /// Its node name in that queue when it died (a requeued item has a new
    /// node name on every requeue).
    pub original_name: String,
}

/// Why the bytes after an item frame are a damaged trailer. Offsets count
/// bytes from the start of the node's data. The item's records are not
/// affected; its metadata reads as absent.
///
/// ```
/// use zk_queue::inspect::TrailerError;
/// let err = TrailerError::Checksum { offset: 12 };
/// assert_eq!(err.to_string(), "item trailer at byte 12 fails its checksum");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrailerError {
    /// A version this crate does not know (written by a newer one).
    UnknownVersion {
        /// The version byte.
        version: u8,
        /// Offset of the trailer.
        offset: usize,
    },
    /// The trailer ends before its last field.
    Truncated {
        /// Offset of the trailer.
        offset: usize,
    },
    /// The checksum does not match the trailer's bytes.
    Checksum {
        /// Offset of the trailer.
        offset: usize,
    },
    /// The field bits name a field this crate does not know.
    UnknownFields {
        /// The field bits.
        fields: u8,
        /// Offset of the field bits.
        offset: usize,
    },
    /// A text is not UTF-8.
    NotUtf8 {
        /// Offset of the text's length.
        offset: usize,
    },
    /// Bytes follow the last field.
    TrailingBytes {
        /// Offset of the first such byte.
        offset: usize,
    },
}

impl fmt::Display for TrailerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrailerError::UnknownVersion { version, offset } => {
                write!(f, "item trailer at byte {offset} has unknown version {version}")
            }
            TrailerError::Truncated { offset } => write!(f, "item trailer at byte {offset} is cut short"),
            TrailerError::Checksum { offset } => write!(f, "item trailer at byte {offset} fails its checksum"),
            TrailerError::UnknownFields { fields, offset } => {
                write!(f, "unknown item trailer fields {fields:#04x} at byte {offset}")
            }
            TrailerError::NotUtf8 { offset } => write!(f, "item trailer text at byte {offset} is not utf-8"),
            TrailerError::TrailingBytes { offset } => {
                write!(f, "unexpected bytes after the item trailer at byte {offset}")
            }
        }
    }
}

impl std::error::Error for TrailerError {}

/// The number of bytes an encoded frame of these records occupies.
pub(crate) fn frame_len(records: &[&[u8]]) -> usize {
    // version, then opcode + length + bytes per record, then the end marker
    4 + records.iter().map(|r| 5 + r.len()).sum::<usize>() + 1
}

/// The trailer in the bytes after a frame of `frame_len` bytes; the default
/// (nothing recorded) if there is none.
///
/// # Errors
/// A [`TrailerError`] for a damaged trailer (see the module doc).
pub(crate) fn read(data: &[u8], frame_len: usize) -> Result<Trailer, TrailerError> {
    let rest = data.get(frame_len..).unwrap_or_default();
    let Some((&version, body)) = rest.strip_prefix(&MAGIC[..]).and_then(<[u8]>::split_first) else {
        return Ok(Trailer::default());
    };
    let truncated = TrailerError::Truncated { offset: frame_len };
    match version {
        1 | 2 => {
            let len = if version == 1 { LEN_V1 } else { LEN_V2 };
            if rest.len() < len {
                return Err(truncated);
            }
            let mut reader = Reader::new(body, frame_len + 4);
            let attempts = reader.u32()?;
            let token = if version == 2 { Some(reader.u128()?) } else { None };
            reader.end()?;
            Ok(Trailer {
                attempts,
                token,
                ..Trailer::default()
            })
        }
        3 => {
            if rest.len() < MIN_LEN_V3 {
                return Err(truncated);
            }
            let (checked, crc) = rest.split_at(rest.len() - 4);
            if crc32(checked).to_be_bytes() != crc {
                return Err(TrailerError::Checksum { offset: frame_len });
            }
            read_v3(&checked[4..], frame_len + 4)
        }
        version => Err(TrailerError::UnknownVersion {
            version,
            offset: frame_len,
        }),
    }
}

/// The fields of a version 3 trailer whose checksum matched: `body` starts
/// at byte `offset` of the node's data, after the version byte.
fn read_v3(body: &[u8], offset: usize) -> Result<Trailer, TrailerError> {
    let mut reader = Reader::new(body, offset);
    let attempts = reader.u32()?;
    let fields_at = reader.offset();
    let fields = reader.u8()?;
    if fields & !KNOWN_FIELDS != 0 {
        return Err(TrailerError::UnknownFields {
            fields,
            offset: fields_at,
        });
    }
    let has = |bit: u8| fields & bit != 0;
    let token = if has(HAS_TOKEN) { Some(reader.u128()?) } else { None };
    let put_at = if has(HAS_PUT_AT) { Some(reader.i64()?) } else { None };
    let not_before = if has(HAS_NOT_BEFORE) { Some(reader.i64()?) } else { None };
    let death = if has(HAS_DEATH) {
        let died_at = from_epoch_millis(reader.i64()?);
        let source = reader.text()?;
        let original_name = reader.text()?;
        let reason = reader.text()?;
        Some(Death {
            reason,
            died_at,
            source,
            original_name,
        })
    } else {
        None
    };
    reader.end()?;
    Ok(Trailer {
        attempts,
        token,
        put_at,
        not_before,
        death,
    })
}

/// Reads big-endian fields off a trailer's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Offset of `bytes[0]` in the node's data.
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Reader<'a> {
        Reader { bytes, at: 0, base }
    }

    fn offset(&self) -> usize {
        self.base + self.at
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], TrailerError> {
        let end = self.at + N;
        let bytes = self
            .bytes
            .get(self.at..end)
            .ok_or(TrailerError::Truncated { offset: self.offset() })?;
        self.at = end;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, TrailerError> {
        Ok(self.take::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, TrailerError> {
        self.take().map(u32::from_be_bytes)
    }

    fn i64(&mut self) -> Result<i64, TrailerError> {
        self.take().map(i64::from_be_bytes)
    }

    fn u128(&mut self) -> Result<u128, TrailerError> {
        self.take().map(u128::from_be_bytes)
    }

    fn text(&mut self) -> Result<String, TrailerError> {
        let at = self.offset();
        let len = usize::from(u16::from_be_bytes(self.take()?));
        let bytes = self
            .bytes
            .get(self.at..self.at + len)
            .ok_or(TrailerError::Truncated { offset: at })?;
        self.at += len;
        String::from_utf8(bytes.to_vec()).map_err(|_| TrailerError::NotUtf8 { offset: at })
    }

    fn end(&self) -> Result<(), TrailerError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(TrailerError::TrailingBytes { offset: self.offset() })
        }
    }
}

/// Appends a version 3 trailer recording `trailer` to a frame.
pub(crate) fn append(frame: &mut Vec<u8>, trailer: &Trailer) {
    let start = frame.len();
    frame.extend_from_slice(&MAGIC);
    frame.push(3);
    frame.extend_from_slice(&trailer.attempts.to_be_bytes());
    let fields = [
        (trailer.token.is_some(), HAS_TOKEN),
        (trailer.put_at.is_some(), HAS_PUT_AT),
        (trailer.not_before.is_some(), HAS_NOT_BEFORE),
        (trailer.death.is_some(), HAS_DEATH),
    ]
    .iter()
    .filter(|(present, _)| *present)
    .fold(0, |bits, (_, bit)| bits | bit);
    frame.push(fields);
    if let Some(token) = trailer.token {
        frame.extend_from_slice(&token.to_be_bytes());
    }
    for millis in [trailer.put_at, trailer.not_before].into_iter().flatten() {
        frame.extend_from_slice(&millis.to_be_bytes());
    }
    if let Some(death) = &trailer.death {
        frame.extend_from_slice(&epoch_millis(death.died_at).to_be_bytes());
        for text in [&death.source, &death.original_name, &death.reason] {
            let text = cut(text, MAX_TEXT);
            frame.extend_from_slice(&(text.len() as u16).to_be_bytes());
            frame.extend_from_slice(text.as_bytes());
        }
    }
    let crc = crc32(&frame[start..]);
    frame.extend_from_slice(&crc.to_be_bytes());
}

/// Appends a version 2 trailer: no failed delivery, and the put's `token`.
pub(crate) fn append_token(frame: &mut Vec<u8>, token: u128) {
    frame.extend_from_slice(&MAGIC);
    frame.push(2);
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(&token.to_be_bytes());
}

/// The token of a node's data holding a frame, if it has one.
pub(crate) fn token_of(data: &[u8]) -> Option<u128> {
    let records = crate::codec::decode_frame(data).ok()?;
    read(data, frame_len(&records)).ok()?.token
}

/// The not-before time of a node's data holding a frame, if it has one.
pub(crate) fn not_before_of(data: &[u8]) -> Option<i64> {
    let records = crate::codec::decode_frame(data).ok()?;
    read(data, frame_len(&records)).ok()?.not_before
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Milliseconds since the Unix epoch (negative before it, saturating).
pub(crate) fn epoch_millis(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The moment `millis` milliseconds after the Unix epoch (before it if
/// negative), saturating at what `SystemTime` can hold.
pub(crate) fn from_epoch_millis(millis: i64) -> SystemTime {
    let span = Duration::from_millis(millis.unsigned_abs());
    let moved = if millis >= 0 {
        UNIX_EPOCH.checked_add(span)
    } else {
        UNIX_EPOCH.checked_sub(span)
    };
    moved.unwrap_or(UNIX_EPOCH)
}

/// CRC-32 (IEEE 802.3, as zlib's `crc32`).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
#[path = "trailer_tests.rs"]
mod tests;
