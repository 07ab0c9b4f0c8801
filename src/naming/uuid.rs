//! Random UUIDs as Java's `UUID.randomUUID().toString()` writes them, for
//! the node names Curator makes with them (protected names, queue shards).

/// A new random (version 4) UUID: lower-case hex in groups of 8, 4, 4, 4
/// and 12.
pub(crate) fn random_uuid() -> String {
    uuid_v4(fastrand::u128(..))
}

/// Whether `text` is a UUID as Java writes it: 36 characters, hex digits
/// with dashes after the 8th, 12th, 16th and 20th.
pub(crate) fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// The version 4 UUID made of `bits` (its version and variant bits set).
fn uuid_v4(bits: u128) -> String {
    let bits = (bits & !(0xF << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_has_java_s_layout_with_version_4_and_the_ietf_variant() {
        assert_eq!(uuid_v4(0), "00000000-0000-4000-8000-000000000000");
        assert_eq!(uuid_v4(u128::MAX), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let uuid = random_uuid();
        assert_eq!(uuid.len(), 36);
        assert_ne!(random_uuid(), uuid);
        assert!(is_uuid(&uuid) && is_uuid("0F1E2D3C-4B5A-4978-8695-a4b3c2d1e0f0"));
        assert!(!is_uuid("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f") && !is_uuid("0f1e2d3c4b5a-4978-8695-a4b3c2d1e0f0-"));
    }
}
