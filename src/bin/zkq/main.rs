//! `zkq`: inspect and operate queues on Apache ZooKeeper from the shell.
//!
//! Works on the classic recipe's queues (`qn-<seq>` nodes of raw bytes) and on
//! Apache Curator's (`queue-…` nodes holding an item frame); the layout is
//! detected from a queue's children. A queue whose children are all shards
//! `queue-<UUID>` (Curator's `QueueSharder`, zk-queue's sharded queues) is
//! sharded: `stats`, `peek` and `purge` cover every shard. `recipe` shows a
//! coordination recipe's path (locks, semaphores, latches, barriers). Errors are printed as one line
//! `zkq: <message>` on stderr, with exit code 1 (2 for usage errors).

mod common;
mod dead_letter;
mod four_letter;
mod locks;
mod purge;
mod put;
mod read;
mod recipe;
mod shards;
mod take;
mod watch;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// Inspect and operate distributed queues on Apache ZooKeeper.
#[derive(Debug, Parser)]
#[command(name = "zkq", version)]
struct Cli {
    /// ZooKeeper connect string (`host:port,...[/chroot]`).
    #[arg(long, global = true, env = "ZK_CONNECT", default_value = "127.0.0.1:2181")]
    connect: String,
    /// Session timeout, e.g. `10s`, `500ms`, `1m`; also bounds connecting
    /// and each request.
    #[arg(long, global = true, default_value = "10s", value_parser = common::parse_duration)]
    session_timeout: Duration,
    /// Digest credentials, `user:password`.
    #[arg(long, global = true)]
    auth: Option<String>,
    /// Machine-readable JSON output on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Put items (from arguments, else one per line of stdin).
    Put(put::PutArgs),
    /// Take (remove and print) up to N items; at most once. Items a
    /// lock-safe consumer holds are left alone (see `--lock-path`) unless
    /// `--force`.
    Take(take::TakeArgs),
    /// Show the first items in consumption order without removing them.
    Peek(read::PeekArgs),
    /// List item names in consumption order, a page at a time.
    Ls(read::LsArgs),
    /// Depth, age, priorities, due counts, locks and dead letters of a queue.
    Stats(read::StatsArgs),
    /// Delete every item of a queue (other children are kept).
    Purge(purge::QueuePurgeArgs),
    /// Print items as they are added and removed.
    Watch(watch::WatchArgs),
    /// Inspect, purge or requeue a dead-letter path.
    #[command(subcommand)]
    DeadLetter(dead_letter::DeadLetterCommand),
    /// Show a lock, read-write lock, semaphore, leader latch or barrier
    /// path: holders, leaders and waiters in order, with their ids, ages and
    /// sessions (marking those no longer connected, or gone).
    Recipe(recipe::RecipeArgs),
}

impl Command {
    /// The node paths given, checked before connecting.
    fn paths(&self) -> Vec<&str> {
        match self {
            Command::Put(args) => vec![args.path.as_str()],
            Command::Take(args) => [Some(&args.path), args.locks.lock_path.as_ref()]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect(),
            Command::Peek(args) => vec![args.path.as_str()],
            Command::Ls(args) => vec![args.path.as_str()],
            Command::Stats(args) => [
                Some(&args.path),
                args.lock_path.as_ref(),
                args.dead_letter_path.as_ref(),
            ]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect(),
            Command::Purge(args) => [Some(&args.purge.path), args.locks.lock_path.as_ref()]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect(),
            Command::Watch(args) => vec![args.path.as_str()],
            Command::DeadLetter(command) => command.paths(),
            Command::Recipe(args) => vec![args.path.as_str()],
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("zkq: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    for path in cli.command.paths() {
        zk_queue::path::validate(path)?;
    }
    let ctx = common::Context::connect(&cli.connect, cli.session_timeout, cli.auth.as_deref(), cli.json)?;
    let result = match cli.command {
        Command::Put(args) => put::run(&ctx, args),
        Command::Take(args) => take::run(&ctx, args),
        Command::Peek(args) => read::peek(&ctx, args),
        Command::Ls(args) => read::ls(&ctx, args),
        Command::Stats(args) => read::stats(&ctx, args),
        Command::Purge(args) => purge::run(&ctx, args),
        Command::Watch(args) => watch::run(&ctx, args),
        Command::DeadLetter(command) => dead_letter::run(&ctx, command),
        Command::Recipe(args) => recipe::run(&ctx, &cli.connect, cli.session_timeout, args),
    };
    ctx.client.close();
    result
}
