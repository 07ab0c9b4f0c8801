//! Properties the fuzz targets check, through the crate's public API
//! (`zk_queue::inspect`): not only that nothing panics, but that what the
//! decoders accept means what it should.

use std::time::{SystemTime, UNIX_EPOCH};

use zk_queue::fuzzing::decode_any_reply;
use zk_queue::inspect::{decode_item, order, DecodedItem, ItemName, Kind, Layout};
use zk_queue::inspect::FrameError;

const KINDS: [Kind; 4] = [Kind::Plain, Kind::Priority, Kind::Delay, Kind::Id];
const LAYOUTS: [Layout; 2] = [Layout::Classic, Layout::Curator];

/// Curator's `ItemSerializer` frame of `records`, written independently of
/// the crate's encoder: version `0x00010001`, per record `0x01` and a
/// big-endian `i32` length, then `0x02`.
pub fn encode(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![0x00, 0x01, 0x00, 0x01];
    for record in records {
        out.push(0x01);
        out.extend_from_slice(&(record.len() as i32).to_be_bytes());
        out.extend_from_slice(record);
    }
    out.push(0x02);
    out
}

/// The decoder on `data` as a node's bytes, and on a frame built from it:
/// - classic items are the raw bytes, always;
/// - a Curator item that decodes is exactly one canonical frame followed by
///   anything: re-encoding its records gives the bytes read, which decode to
///   the same records; what follows is read as the trailer the crate's
///   module doc lays out (checked by an independent reader, checksum
///   included), and anything else after `ZKQ` is reported as damage and
///   reads as nothing recorded;
/// - a version 3 trailer of any fields, built independently, reads back
///   exactly, and a flipped bit or a cut in it is reported, never misread;
/// - every strict prefix of a frame is refused with a lowercase message;
/// - records of any content survive encode → decode, also with bytes after
///   the end marker.
pub fn check_frame(data: &[u8]) {
    let classic = decode_item(Layout::Classic, data).expect("classic items always decode");
    assert_eq!(classic.records, [data.to_vec()]);
    assert_eq!(classic.attempts, 0);

    match decode_item(Layout::Curator, data) {
        Ok(item) => {
            let frame = encode(&item.records);
            assert_eq!(data.get(..frame.len()), Some(&frame[..]), "not the canonical frame");
            let again = decode_item(Layout::Curator, &frame).expect("a re-encoded frame decodes");
            assert_eq!((again.records, again.attempts), (item.records.clone(), 0));
            let rest = &data[frame.len()..];
            let expected = expected_trailer(rest);
            let found = Recorded::of(&item);
            match expected {
                Some(recorded) => assert_eq!((found, &item.trailer_error), (recorded, &None)),
                None => {
                    assert!(item.trailer_error.is_some(), "a damaged trailer went unreported: {rest:?}");
                    assert_eq!(found, Recorded::default(), "a damaged trailer reads as nothing");
                }
            }
            for cut in [0, frame.len() / 2, frame.len() - 1] {
                refused(&frame[..cut]);
            }
        }
        Err(e) => check_message(&e),
    }

    let records = split_records(data);
    let frame = encode(&records);
    let item = decode_item(Layout::Curator, &frame).expect("a frame of any records decodes");
    assert_eq!((&item.records, item.attempts), (&records, 0));
    let mut with_tail = frame.clone();
    with_tail.extend_from_slice(data);
    let item = decode_item(Layout::Curator, &with_tail).expect("bytes after the end marker are ignored");
    assert_eq!(item.records, records);
    refused(&frame[..frame.len() - 1]);
    check_built_trailer(&frame, data);
}

/// What a trailer recorded, as [`decode_item`] reports it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Recorded {
    attempts: u32,
    put_at: Option<i64>,
    not_before: Option<i64>,
    /// Died at, source, original name, reason.
    death: Option<(i64, String, String, String)>,
}

impl Recorded {
    fn of(item: &DecodedItem) -> Recorded {
        Recorded {
            attempts: item.attempts,
            put_at: item.put_at.map(millis),
            not_before: item.not_before.map(millis),
            death: item.death.as_ref().map(|d| {
                (
                    millis(d.died_at),
                    d.source.clone(),
                    d.original_name.clone(),
                    d.reason.clone(),
                )
            }),
        }
    }
}

fn millis(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_millis() as i64,
        Err(before) => -(before.duration().as_millis() as i64),
    }
}

/// The trailer in `rest` (the bytes after a frame) as the module doc of
/// `codec::trailer` lays it out, read independently: `Some` of what it
/// records (nothing without the magic), `None` if it is damaged.
fn expected_trailer(rest: &[u8]) -> Option<Recorded> {
    let u32_at = |at: usize| rest.get(at..at + 4).map(|b| u32::from_be_bytes(b.try_into().unwrap()));
    match rest {
        [b'Z', b'K', b'Q', version, ..] => match version {
            1 if rest.len() == 8 => Some(Recorded {
                attempts: u32_at(4)?,
                ..Recorded::default()
            }),
            // The second version carries a 16-byte put token after the count.
            2 if rest.len() == 24 => Some(Recorded {
                attempts: u32_at(4)?,
                ..Recorded::default()
            }),
            3 if rest.len() >= 13 => {
                let (body, crc) = rest.split_at(rest.len() - 4);
                if crc32(body).to_be_bytes() != crc {
                    return None;
                }
                parse_v3(&body[4..])
            }
            _ => None,
        },
        _ => Some(Recorded::default()),
    }
}

/// The fields of a version 3 trailer after its version byte; `None` unless
/// they are exactly the layout.
fn parse_v3(mut body: &[u8]) -> Option<Recorded> {
    fn take<'a>(body: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (body.get(..n)?, body.get(n..)?);
        *body = rest;
        Some(head)
    }
    let int = |bytes: &[u8]| bytes.iter().fold(0i128, |n, b| (n << 8) | i128::from(*b));
    let mut out = Recorded {
        attempts: int(take(&mut body, 4)?) as u32,
        ..Recorded::default()
    };
    let fields = take(&mut body, 1)?[0];
    if fields > 0x0F {
        return None;
    }
    if fields & 1 != 0 {
        take(&mut body, 16)?;
    }
    if fields & 2 != 0 {
        out.put_at = Some(int(take(&mut body, 8)?) as i64);
    }
    if fields & 4 != 0 {
        out.not_before = Some(int(take(&mut body, 8)?) as i64);
    }
    if fields & 8 != 0 {
        let at = int(take(&mut body, 8)?) as i64;
        let mut text = || -> Option<String> {
            let len = int(take(&mut body, 2)?) as usize;
            String::from_utf8(take(&mut body, len)?.to_vec()).ok()
        };
        let (source, name, reason) = (text()?, text()?, text()?);
        out.death = Some((at, source, name, reason));
    }
    body.is_empty().then_some(out)
}

/// CRC-32 (IEEE), table-driven, written apart from the crate's.
fn crc32(bytes: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|n| (0..8).fold(n, |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 }))
        .collect();
    !bytes
        .iter()
        .fold(!0u32, |c, b| table[((c ^ u32::from(*b)) & 0xFF) as usize] ^ (c >> 8))
}

/// A version 3 trailer built from `data` (fields chosen by its bytes),
/// written independently of the crate's encoder, after `frame`: the decoder
/// reads back exactly its fields, and any single flipped bit or cut of it is
/// reported as damage, never read as other values.
fn check_built_trailer(frame: &[u8], data: &[u8]) {
    let fields = data.first().copied().unwrap_or(0) & 0x0F;
    let number = |at: usize| (0..8).fold(0i64, |n, i| (n << 8) | i64::from(data.get(at + i).copied().unwrap_or(0)));
    let text = |from: usize| {
        let bytes = data.get(from..).unwrap_or_default();
        String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned()
    };
    let mut want = Recorded {
        attempts: number(1) as u32,
        ..Recorded::default()
    };
    let mut trailer = b"ZKQ\x03".to_vec();
    trailer.extend_from_slice(&want.attempts.to_be_bytes());
    trailer.push(fields);
    if fields & 1 != 0 {
        trailer.extend_from_slice(&(number(9) as u128).to_be_bytes());
    }
    if fields & 2 != 0 {
        want.put_at = Some(number(17));
        trailer.extend_from_slice(&number(17).to_be_bytes());
    }
    if fields & 4 != 0 {
        want.not_before = Some(number(25));
        trailer.extend_from_slice(&number(25).to_be_bytes());
    }
    if fields & 8 != 0 {
        let (source, name, reason) = (text(33), text(40), text(47));
        trailer.extend_from_slice(&number(3).to_be_bytes());
        for t in [&source, &name, &reason] {
            trailer.extend_from_slice(&(t.len() as u16).to_be_bytes());
            trailer.extend_from_slice(t.as_bytes());
        }
        want.death = Some((number(3), source, name, reason));
    }
    let crc = crc32(&trailer);
    trailer.extend_from_slice(&crc.to_be_bytes());
    let node = [frame, &trailer].concat();
    let item = decode_item(Layout::Curator, &node).expect("a frame with a trailer decodes");
    assert_eq!((Recorded::of(&item), &item.trailer_error), (want, &None));
    let flip = usize::from(data.get(1).copied().unwrap_or(0)) % trailer.len();
    let mut bad = node.clone();
    bad[frame.len() + flip] ^= 1 << (data.get(2).copied().unwrap_or(0) % 8);
    let item = decode_item(Layout::Curator, &bad).expect("a damaged trailer leaves the records");
    if flip >= 3 {
        assert!(item.trailer_error.is_some(), "flipped bit at {flip} unnoticed");
    }
    if item.trailer_error.is_some() || flip < 3 {
        assert_eq!(Recorded::of(&item), Recorded::default());
    }
    let cut = frame.len() + 4 + usize::from(data.get(3).copied().unwrap_or(0)) % (trailer.len() - 4);
    let item = decode_item(Layout::Curator, &node[..cut]).expect("a cut trailer leaves the records");
    assert!(item.trailer_error.is_some(), "cut at {cut} unnoticed");
}

fn refused(bytes: &[u8]) {
    match decode_item(Layout::Curator, bytes) {
        Ok(item) => panic!("a strict prefix of a frame decoded: {bytes:?} -> {item:?}"),
        Err(e) => check_message(&e),
    }
}

fn check_message(e: &FrameError) {
    let message = e.to_string();
    assert!(
        message.chars().next().is_some_and(char::is_lowercase) && !message.ends_with('.'),
        "{message}"
    );
}

/// Reads `data` as records, each a length byte and up to that many bytes.
fn split_records(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let (record, rest) = rest.split_at(usize::from(len).min(rest.len()));
        records.push(record.to_vec());
        data = rest;
    }
    records
}

/// The name parser and the consumption order on `data` read as names (one
/// per line), and on names built from numbers taken from `data`:
/// - a name parses under exactly the layout [`Layout::of_name`] gives, with
///   the fields of its kind;
/// - [`order`] keeps exactly the items of the layout and sorts them the same
///   whatever order they were listed in, and sorting again changes nothing;
/// - names as the server and Curator write them parse back to the numbers
///   they were built from, and sort by them.
pub fn check_names(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let names: Vec<&str> = text.split('\n').take(64).collect();
    for name in &names {
        check_name(name);
    }
    for layout in LAYOUTS {
        for kind in KINDS {
            check_order(&names, layout, kind);
        }
    }
    check_built_names(data);
}

fn check_name(name: &str) {
    let parsed = ItemName::parse(name, None);
    let Some(layout) = Layout::of_name(name) else {
        assert_eq!(parsed, None, "{name:?}");
        for layout in LAYOUTS {
            assert_eq!(ItemName::parse(name, Some(layout)), None, "{name:?}");
        }
        return;
    };
    let item = parsed.unwrap_or_else(|| panic!("{name:?} is a {layout:?} name but does not parse"));
    assert_eq!((item.name.as_str(), item.layout), (name, layout));
    assert_eq!(ItemName::parse(name, Some(layout)).as_ref(), Some(&item));
    for other in LAYOUTS.into_iter().filter(|l| *l != layout) {
        assert_eq!(ItemName::parse(name, Some(other)), None, "{name:?}");
    }
    match layout {
        Layout::Classic => {
            assert!(item.sequence.is_some(), "{name:?}");
            assert_eq!(item.kind, Kind::Plain);
            assert_eq!((item.priority, item.due, &item.id), (None, None, &None), "{name:?}");
        }
        Layout::Curator => {
            assert_eq!(item.kind, Kind::of_name(name), "{name:?}");
            assert!(item.priority.is_none() || item.kind == Kind::Priority, "{name:?}");
            assert_eq!(item.priority.is_some(), item.kind == Kind::Priority, "{name:?}");
            assert_eq!(item.due.is_some(), item.kind == Kind::Delay, "{name:?}");
            assert_eq!(item.id.is_some(), item.kind == Kind::Id, "{name:?}");
        }
    }
}

/// The creation-order key of a classic sequence, as documented: the 32-bit
/// counter read as unsigned; longer sequences as they are.
fn creation_key(sequence: Option<i64>) -> Option<u64> {
    let sequence = sequence?;
    match i32::try_from(sequence) {
        Ok(small) => Some(u64::from(small as u32)),
        Err(_) => u64::try_from(sequence).ok(),
    }
}

fn check_order(names: &[&str], layout: Layout, kind: Kind) {
    let sorted = order(names, layout, kind);
    let items = names
        .iter()
        .filter(|n| ItemName::parse(n, Some(layout)).is_some())
        .count();
    assert_eq!(sorted.len(), items, "{layout:?} {kind:?} {names:?}");
    for item in &sorted {
        assert_eq!(ItemName::parse(&item.name, Some(layout)).as_ref(), Some(item));
    }
    let reversed: Vec<&str> = names.iter().rev().copied().collect();
    let again = order(&reversed, layout, kind);
    let resorted_names: Vec<&str> = sorted.iter().map(|i| i.name.as_str()).collect();
    let resorted = order(&resorted_names, layout, kind);
    match layout {
        // A total order over names.
        Layout::Curator => {
            assert_eq!(again, sorted, "{kind:?} {names:?}");
            assert_eq!(resorted, sorted, "{kind:?} {names:?}");
        }
        // By creation order; names of the same counter value (`qn-9` and
        // `qn-0000000009`) keep their listing order.
        Layout::Classic => {
            let keys = |items: &[ItemName]| items.iter().map(|i| creation_key(i.sequence)).collect::<Vec<_>>();
            assert!(keys(&sorted).windows(2).all(|w| w[0] <= w[1]), "{names:?}");
            assert_eq!(keys(&again), keys(&sorted), "{names:?}");
            assert_eq!(resorted, sorted, "{names:?}");
        }
    }
}

/// Reads a big-endian integer from `data` at `at`, zero-padded.
fn int(data: &[u8], at: usize, len: usize) -> u64 {
    (0..len).fold(0, |n, i| (n << 8) | u64::from(data.get(at + i).copied().unwrap_or(0)))
}

fn check_built_names(data: &[u8]) {
    let priority = int(data, 0, 4) as u32 as i32;
    let other_priority = int(data, 4, 4) as u32 as i32;
    let seq = int(data, 8, 4) as u32 as i32;
    let other_seq = int(data, 12, 4) as u32 as i32;
    let epoch = (int(data, 16, 8) as i64).max(1);
    let other_epoch = (int(data, 24, 8) as i64).max(1);

    // The server's `%010d`, which Rust's `{:010}` matches for negative values too.
    let priority_name = |p: i32, s: i32| format!("queue-{}{:08X}{s:010}", if p >= 0 { '1' } else { '0' }, p as u32);
    let delay_name = |e: i64, s: i32| format!("queue-|{e:08X}|{s:010}");

    let item = parsed(&priority_name(priority, seq));
    assert_eq!(
        (item.kind, item.priority, item.sequence),
        (Kind::Priority, Some(priority), Some(i64::from(seq)))
    );
    let item = parsed(&delay_name(epoch, seq));
    assert_eq!(
        (item.kind, item.due, item.sequence),
        (Kind::Delay, Some(epoch), Some(i64::from(seq)))
    );
    let item = parsed(&format!("queue-{seq:010}"));
    assert_eq!((item.kind, item.sequence), (Kind::Plain, Some(i64::from(seq))));
    let item = parsed(&format!("qn-{seq:010}"));
    assert_eq!((item.layout, item.sequence), (Layout::Classic, Some(i64::from(seq))));

    // An id as Curator stores it: `/` and `|` replaced. All-hex ids read as
    // due times (documented), so they are left out.
    let id: String = String::from_utf8_lossy(data.get(32..).unwrap_or_default())
        .chars()
        .map(|c| if c == '/' || c == '|' { '_' } else { c })
        .collect();
    if !id.is_empty() && !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        let item = parsed(&format!("queue-|{id}|{seq:010}"));
        assert_eq!(
            (item.kind, item.id.as_deref(), item.sequence),
            (Kind::Id, Some(id.as_str()), Some(i64::from(seq)))
        );
    }

    // Priority names sort by priority, then by sequence (as strings: Curator's order).
    let a = priority_name(priority, seq);
    let b = priority_name(other_priority, other_seq);
    let first = order(&[&b, &a], Layout::Curator, Kind::Priority)[0].priority;
    if priority != other_priority {
        assert_eq!(first, Some(priority.min(other_priority)), "{a} {b}");
    }
    // Delay names sort by due time, then by creation order.
    let a = delay_name(epoch, seq);
    let b = delay_name(other_epoch, other_seq);
    let first = &order(&[&b, &a], Layout::Curator, Kind::Delay)[0];
    let expected = ((epoch, seq as u32), a.as_str())
        .min(((other_epoch, other_seq as u32), b.as_str()))
        .1;
    assert_eq!(first.name, expected, "{a} {b}");
    // Classic names sort by creation order across the counter's sign wrap.
    let (a, b) = (format!("qn-{seq:010}"), format!("qn-{other_seq:010}"));
    let first = &order(&[&b, &a], Layout::Classic, Kind::Plain)[0];
    let expected = ((seq as u32), a.as_str()).min(((other_seq as u32), b.as_str())).1;
    if seq != other_seq {
        assert_eq!(first.name, expected, "{a} {b}");
    }
}

fn parsed(name: &str) -> ItemName {
    ItemName::parse(name, None).unwrap_or_else(|| panic!("{name:?} does not parse"))
}

/// The ZooKeeper protocol decoders (`zk_queue::fuzzing::decode_any_reply`:
/// the reply header, the body as every kind of reply, as a watch event, as a
/// connect response, and the frame reader) on `data`, and on replies built
/// from it:
/// - nothing panics on any bytes, and the frames read from a stream do not
///   depend on how it is cut into reads (the hook checks that itself);
/// - a get-data reply carrying `data` as the node's bytes, written
///   independently of the crate's encoder, decodes;
/// - a stream of that reply, `data` as a frame, and `data` as raw bytes is
///   read without panicking, whatever `data` declares.
pub fn check_reply(data: &[u8]) {
    decode_any_reply(data);
    let reply = get_data_reply(data);
    assert!(decode_any_reply(&reply), "a get-data reply does not decode");
    let stream = [length_prefixed(&reply), length_prefixed(data), data.to_vec()].concat();
    decode_any_reply(&stream);
}

/// A reply frame (without its length prefix): a `ReplyHeader` (xid 1, zxid
/// 2, err 0) and a `GetDataResponse` with `data` and a stat of bytes taken
/// from `data`.
fn get_data_reply(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&2i64.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&(data.len() as i32).to_be_bytes());
    out.extend_from_slice(data);
    // Stat: six longs and five ints of any value.
    out.extend((0..68).map(|i| data.get(i).copied().unwrap_or(i as u8)));
    out
}

/// `bytes` after their big-endian `i32` length.
fn length_prefixed(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}
