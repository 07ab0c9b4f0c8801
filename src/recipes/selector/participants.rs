//! Who is in line at a selector's leader path, in order, with their ids
//! (Curator's `getParticipants` and `getLeader`).

use super::LeaderSelector;
use crate::error::Result;
use crate::recipes::leader::read_participants;
use crate::recipes::Participant;

impl LeaderSelector {
    /// Every participant in line, Rust or Java, in the order they lead, the
    /// leader first, with its id (Curator's `getParticipants`), as the
    /// server lists them now.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// for participant in selector.participants()? {
    ///     println!("{} {}", participant.id, if participant.is_leader { "leads" } else { "waits" });
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A connection error once the client's retry policy gives up; an empty
    /// list if the leader path does not exist.
    pub fn participants(&self) -> Result<Vec<Participant>> {
        let sorted = self.shared.mutex.participant_nodes()?;
        read_participants(&self.shared.client, &self.shared.path, sorted)
    }

    /// The participant that leads (its node comes first), if any (Curator's
    /// `getLeader`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// if let Some(leader) = selector.leader()? {
    ///     println!("{} leads", leader.id);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    pub fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants()?.into_iter().next())
    }
}
