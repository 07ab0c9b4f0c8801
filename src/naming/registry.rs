//! The consumer registry of a queue: `<queue>.consumers`, whose children
//! `_c_<UUID>-consumer-<sequence>` are this crate's consumers of the queue
//! (see the queue module's documentation).

use super::parse_sequence;

/// What a registry path ends with, after the queue's path.
pub(crate) const REGISTRY_SUFFIX: &str = ".consumers";

/// The lock name of a registration (after its protected prefix).
pub(crate) const REGISTRATION: &str = "consumer-";

/// What a registry node holds, before the queue's path.
pub(crate) const REGISTRY_MARK: &str = "zk-queue consumers of ";

/// The registry path of the queue at `queue_path`.
pub(crate) fn registry_of(queue_path: &str) -> String {
    format!("{queue_path}{REGISTRY_SUFFIX}")
}

/// Whether a registry child is a consumer's registration.
pub(crate) fn is_registration(name: &str) -> bool {
    name.rfind(REGISTRATION)
        .is_some_and(|at| parse_sequence(&name[at..], REGISTRATION).is_some())
}
