//! `zkq` on a sharded queue (Curator's `QueueSharder` layout): `stats`
//! counts each shard and the total, `peek` shows each shard's head, `purge`
//! empties every shard and keeps the shards.

use std::time::Duration;

use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer};

use super::{json, ok};
use crate::support::server::unique_path;
use crate::support::{client, eventually};

#[test]
fn cli_stats_peek_and_purge_cover_every_shard_of_a_sharded_queue() {
    let client = client();
    let path = unique_path("cli-sharded");
    let leader = unique_path("cli-sharded-leader");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(false)
        .build_sharded_queue(
            &leader,
            ShardPolicy::new().threshold(3).check_interval(Duration::from_secs(60)),
        )
        .unwrap();
    eventually(Duration::from_secs(30), "the sharder leads", || queue.is_leader());
    for i in 0..7 {
        queue.put(format!("item-{i}")).unwrap();
    }
    let shards = queue.shard_count();
    assert!(shards >= 3, "{shards} shards for 7 items at a threshold of 3");
    queue.close();

    let stats = json(&["stats", &path]);
    assert_eq!(stats["total"]["items"], 7, "{stats}");
    assert_eq!(stats["total"]["shards"], shards, "{stats}");
    let per_shard: u64 = stats["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["items"].as_u64().unwrap())
        .sum();
    assert_eq!(per_shard, 7, "{stats}");
    assert!(ok(&["stats", &path]).starts_with(&format!("sharded: {shards} shards\nitems: 7\n")));

    let peeked = json(&["peek", &path, "-n", "1"]);
    let heads = peeked.as_array().unwrap();
    assert_eq!(heads.len(), shards);
    for head in heads {
        let items = head["items"].as_array().unwrap();
        assert!(
            items.len() <= 1 && head["shard"].as_str().unwrap().starts_with("queue-"),
            "{peeked}"
        );
    }

    assert_eq!(json(&["purge", &path, "--yes"]), serde_json::json!({"deleted": 7}));
    let (left, _) = client.get_children(&path).unwrap();
    assert_eq!(left.len(), shards, "the shards stay");
    assert_eq!(json(&["stats", &path])["total"]["items"], 0);
}
