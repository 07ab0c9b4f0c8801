//! `zkq recipe`: a coordination recipe's path (lock, read-write lock,
//! semaphore, leader latch, barrier, double barrier): who holds, leads or
//! waits, in order, with their ids, ages and sessions.

use std::time::Duration;

use anyhow::{anyhow, bail};
use clap::Args;
use serde::Serialize;
use zk_queue::inspect::{arrange, ChildNode, Placed, RecipeKind, SessionSurvey, SEMAPHORE_LEASES, SEMAPHORE_LOCKS};
use zk_queue::path::join as child;

use crate::common::{now_ms, Context};
use crate::four_letter;

#[derive(Debug, Args)]
pub struct RecipeArgs {
    /// The recipe's path (a semaphore's: the parent of `leases` and `locks`).
    pub path: String,
    /// The recipe, instead of detecting it from the children's names: mutex,
    /// rwlock, semaphore, leader-latch, barrier, double-barrier. A barrier
    /// has no children, so it is never detected.
    #[arg(long)]
    kind: Option<RecipeKind>,
    /// How many hold a mutex or a semaphore at once (its owners' max leases,
    /// which the path does not record). Default: 1 for a mutex; a
    /// semaphore's lease nodes are shown as `lease` without it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    leases: Option<u32>,
    /// Skip asking the servers about sessions (four-letter words `srvr`,
    /// `dump`, `cons`, `mntr`).
    #[arg(long)]
    no_sessions: bool,
}

/// One node as shown.
#[derive(Serialize)]
pub struct NodeOutput {
    pub name: String,
    pub role: String,
    pub position: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    /// The UUID of a protected name `_c_<uuid>-`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected_id: Option<String>,
    /// The data as text if UTF-8, else in hex.
    pub data: String,
    pub data_encoding: &'static str,
    /// Milliseconds since the node was created (server clock).
    pub age_ms: i64,
    /// The owning session `0x…`; absent for a persistent node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// connected, disconnected, gone or unknown; absent for a persistent node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_state: Option<String>,
    /// A double barrier's `ready` that no present member entered before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// A recipe path as `zkq recipe` (and `zkq top`) show it.
#[derive(Serialize)]
pub struct RecipeOutput {
    pub path: String,
    pub kind: String,
    /// The max leases the roles assume (mutex, semaphore).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases: Option<u32>,
    /// A barrier: `set` or `cleared`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
    /// A barrier's own node while set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier: Option<NodeOutput>,
    /// The line: lock, lease, latch or member nodes, in order.
    pub nodes: Vec<NodeOutput>,
    /// A semaphore's mutex (`locks`), which one acquirer holds while it takes a lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locks: Option<Vec<NodeOutput>>,
    /// How the session states were found, or why they are unknown.
    pub sessions: String,
}

pub fn run(ctx: &Context, connect: &str, timeout: Duration, args: RecipeArgs) -> anyhow::Result<()> {
    let kind = match args.kind {
        Some(kind) => kind,
        None => detect(ctx, &args.path)?,
    };
    let read = read_recipe(ctx, &args.path, kind, args.leases)?;
    // Every node is read before the servers are asked about sessions, so a
    // session missing from the leader's list is gone since the read.
    let (survey, sessions) = if args.no_sessions {
        (SessionSurvey::default(), "not asked (--no-sessions)".to_owned())
    } else {
        four_letter::survey(connect, timeout)
    };
    let out = read.show(&survey, sessions);
    if ctx.json {
        return ctx.print_json(&out);
    }
    print(&out);
    Ok(())
}

/// A recipe path's nodes, read and placed, before their sessions are known.
pub struct RecipeRead {
    path: String,
    kind: RecipeKind,
    leases: Option<u32>,
    barrier: Option<ChildNode>,
    line: Vec<Placed>,
    locks: Option<Vec<Placed>>,
}

/// Reads the recipe of `kind` at `path` (`leases`: how many hold a mutex
/// or semaphore at once, if known).
pub fn read_recipe(ctx: &Context, path: &str, kind: RecipeKind, leases: Option<u32>) -> anyhow::Result<RecipeRead> {
    let leases = match kind {
        RecipeKind::Mutex => Some(leases.unwrap_or(1)),
        RecipeKind::Semaphore => leases,
        _ => None,
    };
    let max = leases.map(|n| n as usize);
    let mut barrier = None;
    let mut locks = None;
    let line = match kind {
        RecipeKind::Semaphore => {
            // The semaphore's own node must exist; its `leases` and `locks`
            // appear with the first acquirer.
            ctx.client.get_children(path)?;
            locks = Some(arrange(
                RecipeKind::Mutex,
                read_children(ctx, &child(path, SEMAPHORE_LOCKS), true)?,
                Some(1),
            ));
            arrange(kind, read_children(ctx, &child(path, SEMAPHORE_LEASES), true)?, max)
        }
        RecipeKind::Barrier => {
            barrier = read_node(ctx, path)?;
            let children = if barrier.is_some() {
                read_children(ctx, path, true)?
            } else {
                Vec::new()
            };
            arrange(kind, children, None)
        }
        _ => arrange(kind, read_children(ctx, path, false)?, max),
    };
    Ok(RecipeRead {
        path: path.to_owned(),
        kind,
        leases,
        barrier,
        line,
        locks,
    })
}

impl RecipeRead {
    /// The recipe as shown, its sessions' states from `survey` (found as
    /// `sessions` says).
    pub fn show(self, survey: &SessionSurvey, sessions: String) -> RecipeOutput {
        let now = now_ms();
        let show = |placed: Placed| output(placed, survey, now);
        let kind = self.kind;
        RecipeOutput {
            path: self.path,
            kind: kind.to_string(),
            leases: self.leases,
            state: (kind == RecipeKind::Barrier).then_some(if self.barrier.is_some() { "set" } else { "cleared" }),
            barrier: self
                .barrier
                .and_then(|node| arrange(RecipeKind::Barrier, vec![node], None).pop())
                .map(|placed| NodeOutput {
                    role: "barrier".to_owned(),
                    ..show(placed)
                }),
            nodes: self.line.into_iter().map(show).collect(),
            locks: self.locks.map(|l| l.into_iter().map(show).collect()),
            sessions,
        }
    }
}

/// The kind `path`'s children say; an error naming the path if none.
fn detect(ctx: &Context, path: &str) -> anyhow::Result<RecipeKind> {
    let (names, _) = ctx.client.get_children(path)?;
    RecipeKind::detect(&names).ok_or_else(|| {
        anyhow!(
            "{path} is not a recipe path: none of its {} children is named as a lock's, semaphore's, \
             leader latch's or double barrier's (a barrier has no children: --kind barrier)",
            names.len()
        )
    })
}

/// The node at `path`, or `None` if there is none.
fn read_node(ctx: &Context, path: &str) -> anyhow::Result<Option<ChildNode>> {
    match ctx.client.get_data(path) {
        Ok((data, stat)) => Ok(Some(ChildNode {
            name: path.rsplit('/').next().unwrap_or_default().to_owned(),
            data,
            stat,
        })),
        Err(e) if e.is_no_node() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The children of `path` with their data; a missing `path` is an error
/// unless `missing_is_empty`. Children deleted meanwhile are left out.
fn read_children(ctx: &Context, path: &str, missing_is_empty: bool) -> anyhow::Result<Vec<ChildNode>> {
    let names = match ctx.client.get_children(path) {
        Ok((names, _)) => names,
        Err(e) if e.is_no_node() && missing_is_empty => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let paths: Vec<String> = names.iter().map(|n| child(path, n)).collect();
    let mut nodes = Vec::with_capacity(names.len());
    for (chunk_names, chunk_paths) in names.chunks(1_000).zip(paths.chunks(1_000)) {
        for (name, read) in chunk_names.iter().zip(ctx.client.get_data_many(chunk_paths)?) {
            match read {
                Ok((data, stat)) => nodes.push(ChildNode {
                    name: name.clone(),
                    data,
                    stat,
                }),
                Err(e) if e.is_no_node() => {}
                Err(e) => bail!(e),
            }
        }
    }
    Ok(nodes)
}

fn output(placed: Placed, survey: &SessionSurvey, now: i64) -> NodeOutput {
    let owner = placed.node.stat.ephemeral_owner;
    let (data, data_encoding) = match String::from_utf8(placed.node.data) {
        Ok(text) => (text, "utf8"),
        Err(e) => (e.into_bytes().iter().map(|b| format!("{b:02x}")).collect(), "hex"),
    };
    NodeOutput {
        name: placed.node.name,
        role: placed.role.to_string(),
        position: placed.position,
        mode: placed.mode,
        sequence: placed.sequence,
        protected_id: placed.protected_id,
        data,
        data_encoding,
        age_ms: (now - placed.node.stat.ctime).max(0),
        session: (owner != 0).then(|| format!("0x{owner:x}")),
        session_state: survey.state(owner).map(|s| s.to_string()),
        stale: placed.stale,
    }
}

/// Prints a recipe as text.
pub fn print(out: &RecipeOutput) {
    let mut head = format!("{} {}", out.kind, out.path);
    if let Some(leases) = out.leases {
        head += &format!(" (leases {leases})");
    }
    if let Some(state) = out.state {
        head += &format!(": {state}");
    }
    println!("{head}");
    if let Some(node) = &out.barrier {
        print_node(node, "");
    }
    if let Some(locks) = &out.locks {
        println!("leases:");
        out.nodes.iter().for_each(|n| print_node(n, "  "));
        println!("locks:");
        locks.iter().for_each(|n| print_node(n, "  "));
    } else {
        out.nodes.iter().for_each(|n| print_node(n, ""));
    }
    println!("sessions: {}", out.sessions);
}

fn print_node(node: &NodeOutput, indent: &str) {
    let role = match node.mode {
        Some(mode) => format!("{}({mode})", node.role),
        None => node.role.clone(),
    };
    let mut line = format!("{indent}{}\t{role}\t{}", node.position, node.name);
    let data = if node.data_encoding == "hex" {
        format!("hex:{}", node.data)
    } else {
        node.data.escape_debug().to_string()
    };
    line += &format!("\tdata={data}\tage={}ms", node.age_ms);
    match (&node.session, &node.session_state) {
        (Some(session), Some(state)) => line += &format!("\tsession={session}({state})"),
        _ => line += "\tpersistent",
    }
    if node.stale {
        line += "\tstale";
    }
    println!("{line}");
}
