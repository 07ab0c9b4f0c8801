//! zk-queue's performance report: the server's own ceiling, then every queue
//! kind end to end against it, drain scaling, and a consumer's peak memory.
//!
//! `cargo run --release --example bench -- [flags]` (`--help` lists them).
//! The same benchmark as `zkq bench` (feature `cli`): this example only
//! parses the flags and runs the shared implementation in
//! `src/bin/zkq/bench/`, which documents the measurements.

#[path = "../../src/bin/zkq/bench/mod.rs"]
mod bench;

use std::process::ExitCode;

use clap::Parser;

/// zk-queue benchmark: server ceiling, queue cases, drain scaling and memory.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    /// ZooKeeper connect string [default: ZK_CONNECT, else an embedded server started here]
    #[arg(long)]
    connect: Option<String>,
    /// Print one JSON document instead of tables
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    bench: bench::Args,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let host = bench::Host {
        connect: cli.connect,
        json: cli.json,
        child_args: &[],
    };
    match bench::run(&cli.bench, &host) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
