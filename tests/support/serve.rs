//! A real `engram serve` process for the memory benchmarks: started on a data directory,
//! its address read from its first line, its resident memory read from `/proc`, killed on drop.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

/// A number from the environment variable `name`, or `default` when it is unset or not a number.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `engram serve --port 0 --no-auth` over the data directory `home`, running until dropped.
pub struct Served {
    child: Child,
    /// The server's process id.
    pub pid: u32,
    /// Its base URL, e.g. `http://127.0.0.1:41234`.
    pub base: String,
}

impl Served {
    /// Starts the server with the extra environment `vars` and waits for its "listening on"
    /// line. Panics if it exits first.
    pub fn start(home: &Path, vars: &[(&str, &std::ffi::OsStr)]) -> Self {
        let mut child = crate::cli_command(home)
            .args(["serve", "--port", "0", "--no-auth"])
            .envs(vars.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start engram serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = loop {
            let line = lines.next().expect("engram serve exited early").unwrap();
            if let Some(u) = line.strip_prefix("listening on ") {
                break u.trim().to_owned();
            }
        };
        Self {
            pid: child.id(),
            child,
            base,
        }
    }

    /// The server's memory now, from `/proc/<pid>/status`.
    pub fn memory(&self) -> Memory {
        memory_of(self.pid).expect("the server is running")
    }
}

/// The memory of process `pid` now, from `/proc/<pid>/status`; `None` when it is gone.
pub fn memory_of(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    Some(Memory {
        rss: field("VmRSS:"),
        anon: field("RssAnon:"),
        file: field("RssFile:"),
    })
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process's resident memory in MB (`/proc` reports kB).
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// `VmRSS`: all resident pages.
    pub rss: f64,
    /// `RssAnon`: the heap and stacks, what the process really holds.
    pub anon: f64,
    /// `RssFile`: file-backed pages (the binary's code), which the kernel can drop.
    pub file: f64,
}
