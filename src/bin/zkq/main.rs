//! `zkq`: inspect and operate queues on Apache ZooKeeper from the shell.
//!
//! Works on the classic recipe's queues (`qn-<seq>` nodes of raw bytes) and on
//! Apache Curator's (`queue-…` nodes holding an item frame); the layout is
//! detected from a queue's children. A queue whose children are all shards
//! `queue-<UUID>` (Curator's `QueueSharder`, zk-queue's sharded queues) is
//! sharded: `stats`, `peek` and `purge` cover every shard. `recipe` shows a
//! coordination recipe's path (locks, semaphores, latches, barriers). Errors are printed as one line
//! `zkq: <message>` on stderr, with exit code 1 (2 for usage errors); under
//! `--json` as one object `{"error": "<message>"}` on stdout instead.
//!
//! What a node is (a queue, a sharded queue, a lock directory or none of
//! these) is decided once, in [`node`].

mod common;
mod dead_letter;
mod four_letter;
mod locks;
mod node;
mod parents;
mod purge;
mod put;
mod read;
mod recipe;
mod shards;
mod stats;
mod take;
mod top;
mod watch;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// Inspect and operate distributed queues on Apache ZooKeeper.
#[derive(Debug, Parser)]
#[command(name = "zkq", version)]
struct Cli {
    /// ZooKeeper connect string (`host:port,...[/chroot]`). Defaults to the
    /// environment variable `ZK_CONNECT`, then `127.0.0.1:2181`.
    #[arg(long, global = true)]
    connect: Option<String>,
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
    /// Put items (from arguments, else one per line of stdin), only into a
    /// queue: refuses a lock directory, a consumer registry, a sharded
    /// queue's parent, and, unless `--force`, a node whose children are not
    /// items, or what the queue's kind would misorder.
    Put(put::PutArgs),
    /// Take (remove and print) up to N items; at most once. Items a
    /// lock-safe consumer holds are left alone (see `--lock-path`) unless
    /// `--force`.
    Take(take::TakeArgs),
    /// Show the first items in consumption order without removing them
    /// (an error for a node that is not a queue).
    Peek(read::PeekArgs),
    /// List item names in consumption order, a page at a time (an error for
    /// a node that is not a queue).
    Ls(read::LsArgs),
    /// Depth, age, priorities, due counts, locks (flagging stale ones) and
    /// dead letters of a queue; of a parent of queues, each queue's count.
    Stats(stats::StatsArgs),
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
    /// A live view of the queues under a path (depth, put and take rates,
    /// oldest item, items due later, locked items, consumers, dead letters)
    /// and its locks, semaphores, latches and double barriers (holders and
    /// waiters in order); `--once` prints the figures once.
    Top(top::TopArgs),
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
            Command::Top(args) => vec![args.path.as_str()],
        }
    }
}

/// The connect string used without `--connect` and `ZK_CONNECT`.
const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let json = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            common::print_error(json, &format!("{err:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Prints a usage error (or the help or version asked for) and returns its
/// exit code; under `--json` a usage error is an `{"error": ...}` object.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let asked = matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let mut text = err.render().to_string();
    let hint = hint(err);
    if let Some(hint) = hint {
        // Right under the error's first line.
        let at = text.find('\n').unwrap_or(text.len());
        text.insert_str(at, &format!("\n  tip: {hint}"));
    }
    if !asked && std::env::args_os().any(|arg| arg == "--json") {
        // The error's lines before the usage, on one line.
        let message = text
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        let message = message.trim_start_matches("error: ").to_owned();
        common::print_error(true, &message);
        return ExitCode::from(2);
    }
    if hint.is_some() {
        eprint!("{text}");
    } else {
        let _ = err.print();
    }
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
}

/// A hint for a subcommand that is not one: `requeue`, which is a
/// subcommand of `dead-letter`.
fn hint(err: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    match err.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(name)) if name == "requeue" => {
            Some("dead letters go back to a queue with `zkq dead-letter requeue <DEAD_LETTER_PATH> --to <QUEUE>`")
        }
        _ => None,
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    for path in cli.command.paths() {
        zk_queue::path::validate(path)?;
    }
    let connect = cli
        .connect
        .clone()
        .or_else(|| std::env::var("ZK_CONNECT").ok().filter(|c| !c.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_owned());
    let ctx = common::Context::connect(&connect, cli.session_timeout, cli.auth.as_deref(), cli.json)?;
    let result = match cli.command {
        Command::Put(args) => put::run(&ctx, args),
        Command::Take(args) => take::run(&ctx, args),
        Command::Peek(args) => read::peek(&ctx, args),
        Command::Ls(args) => read::ls(&ctx, args),
        Command::Stats(args) => stats::run(&ctx, args),
        Command::Purge(args) => purge::run(&ctx, args),
        Command::Watch(args) => watch::run(&ctx, args),
        Command::DeadLetter(command) => dead_letter::run(&ctx, command),
        Command::Recipe(args) => recipe::run(&ctx, &connect, cli.session_timeout, args),
        Command::Top(args) => top::run(&ctx, args),
    };
    ctx.client.close();
    result
}
