//! Who is in line at a selector's leader path, in order, with their ids
//! (Curator's `getParticipants` and `getLeader`).

use super::LeaderSelector;
use crate::client::Opts;
use crate::error::{Error, Result};
use crate::path;
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
        let client = &self.shared.client;
        let sorted = self.shared.mutex.participant_nodes()?;
        let paths: Vec<String> = sorted.iter().map(|name| path::join(&self.shared.path, name)).collect();
        let reads = client.read_many_with(&paths, Opts::new())?;
        let mut participants = Vec::with_capacity(sorted.len());
        for (node, read) in sorted.into_iter().zip(reads) {
            let data = match read {
                Ok((data, _)) => data,
                // Left since the listing.
                Err(Error::NoNode { .. }) => continue,
                Err(e) => return Err(e),
            };
            participants.push(Participant {
                id: String::from_utf8_lossy(&data).into_owned(),
                node,
                is_leader: participants.is_empty(),
            });
        }
        Ok(participants)
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
