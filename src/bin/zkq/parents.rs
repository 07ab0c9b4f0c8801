//! `zkq stats` of a node that is not a queue: the queues among its
//! children, each with its count.
//!
//! Each child is classified as `zkq` classifies any node
//! ([`crate::node`]); the children that are queues (an empty child counts
//! as an empty queue) or sharded queues are listed. Lock directories, other
//! nodes and the consumer registries beside queues (`<queue>.consumers`)
//! are only counted.

use anyhow::bail;
use serde::Serialize;
use zk_queue::inspect::consumer_registry;
use zk_queue::path::join as child;

use crate::common::{list, Context};
use crate::node::{self, Node};

#[derive(Serialize)]
struct ChildQueue {
    name: String,
    path: String,
    /// `classic` or `curator`.
    layout: String,
    /// `plain`, `priority`, `delay` or `id`; `sharded` for a sharded queue.
    kind: String,
    items: usize,
}

#[derive(Serialize)]
struct ParentStats {
    path: String,
    queues: Vec<ChildQueue>,
    /// Children that are not queues (lock directories, registries, other
    /// nodes).
    other_children: usize,
}

/// Prints the queues among `children` of `path`; an error if none is one.
pub fn stats(ctx: &Context, path: &str, children: &[String]) -> anyhow::Result<()> {
    let registries: Vec<String> = children.iter().map(|c| consumer_registry(&child(path, c))).collect();
    let mut queues = Vec::new();
    for name in children {
        let queue_path = child(path, name);
        if registries.contains(&queue_path) {
            continue;
        }
        let node = match node::classify(ctx, &queue_path) {
            Ok(node) => node,
            // Deleted since the parent was listed.
            Err(e)
                if e.downcast_ref::<zk_queue::Error>()
                    .is_some_and(zk_queue::Error::is_no_node) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let (layout, kind, items) = match node {
            Node::Queue(listing) => (
                listing.layout.to_string(),
                listing.kind.to_string(),
                listing.items.len(),
            ),
            Node::Sharded(shards) => {
                let mut items = 0;
                for shard in &shards {
                    items += list(ctx, &child(&queue_path, shard))?.items.len();
                }
                ("curator".to_owned(), "sharded".to_owned(), items)
            }
            Node::LockDirectory { .. } | Node::NotAQueue(_) => continue,
        };
        queues.push(ChildQueue {
            name: name.clone(),
            path: queue_path,
            layout,
            kind,
            items,
        });
    }
    if queues.is_empty() {
        bail!(
            "{}; nor is any of its children",
            node::not_a_queue(path, &Node::NotAQueue(children.to_vec()))
        );
    }
    let report = ParentStats {
        path: path.to_owned(),
        other_children: children.len() - queues.len(),
        queues,
    };
    if ctx.json {
        return ctx.print_json(&report);
    }
    println!(
        "{} is not a queue; {} of its {} children are:",
        report.path,
        report.queues.len(),
        children.len()
    );
    for queue in &report.queues {
        println!("{}\titems={}\t{} {}", queue.name, queue.items, queue.layout, queue.kind);
    }
    Ok(())
}
