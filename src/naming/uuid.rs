//! Random UUIDs as Java's `UUID.randomUUID().toString()` writes them, for
//! the node names Curator makes with them (protected names, queue shards).

/// A new random (version 4) UUID: lower-case hex in groups of 8, 4, 4, 4
/// and 12.
pub(crate) fn random_uuid() -> String {
    uuid_v4(fastrand::u128(..))
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
    }
}
