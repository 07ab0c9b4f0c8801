//! The `prometheus` example as a child process, and its `/metrics` page
//! read over plain HTTP.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::support::{eventually, example_exe};

/// How long the example may take to reach a step: to start its listener,
/// store the jobs or consume them (a loaded machine's pace, not a bound of
/// the code's).
const STEP: Duration = Duration::from_secs(60);

/// The running example; killed if the test ends before it exits.
pub struct Example {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    port: u16,
}

impl Example {
    /// Starts the example against `connect`, with `args` after the port's,
    /// and waits until its listener is up.
    pub fn start(connect: &str, args: &[&str]) -> Example {
        let port = free_port();
        let mut child = Command::new(example_exe("prometheus"))
            .args(["--port", &port.to_string(), "--wait"])
            .args(args)
            .env("ZK_CONNECT", connect)
            .env_remove("METRICS_PORT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the prometheus example starts");
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("prometheus example (stderr): {line}");
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                eprintln!("prometheus example: {line}");
                let _ = tx.send(line);
            }
        });
        let mut example = Example {
            child,
            stdin,
            lines,
            port,
        };
        example.line_starting("metrics at");
        example
    }

    /// Waits for the example's next line starting with `prefix` and returns
    /// it (earlier lines are skipped).
    pub fn line_starting(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(e) => panic!("the example printed no line starting {prefix:?} ({e})"),
            }
        }
    }

    /// Sends the example a line: the go-ahead it waits for.
    pub fn go_on(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(b"\n")
            .and_then(|()| stdin.flush())
            .expect("writing to the example");
    }

    /// Lets the example exit and waits for it.
    pub fn finish(mut self) -> ExitStatus {
        self.go_on();
        self.stdin = None;
        let mut status = None;
        eventually(STEP, "the example exits", || {
            status = self.child.try_wait().expect("waiting for the example");
            status.is_some()
        });
        status.expect("an exit status")
    }

    /// The samples of `/metrics` now.
    pub fn scrape(&self) -> Scrape {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).expect("connecting to /metrics");
        stream.set_read_timeout(Some(STEP)).unwrap();
        let request = format!(
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).expect("sending the request");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("reading the response");
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        assert!(head.starts_with("HTTP/1.1 200"), "scrape answered {head}");
        Scrape::parse(body)
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    listener.local_addr().unwrap().port()
}

/// The samples of one scrape: each series (name and labels, as written) and
/// its value. A response whose body is chunked has chunk sizes on lines of
/// their own, which are not samples and are skipped.
#[derive(Debug)]
pub struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    pub fn parse(body: &str) -> Scrape {
        let samples = body
            .lines()
            .filter(|line| line.starts_with("zk_queue_"))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                Some((series.to_owned(), value.parse().ok()?))
            })
            .collect();
        Scrape(samples)
    }

    /// The value of series `name` with exactly `labels` (in the order the
    /// exporter writes them), if it was exported.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let series = if labels.is_empty() {
            name.to_owned()
        } else {
            format!("{name}{{{}}}", labels.join(","))
        };
        self.0.get(&series).copied()
    }

    /// Like [`get`](Self::get), panicking if the series is missing.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no series {name} {labels:?} in {:#?}", self.0))
    }
}
