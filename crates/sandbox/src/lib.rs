//! A room for untrusted code: a [`Policy`] in, a confined process out.
//!
//! Engram runs user tools (Python functions from agent files, the model's suggestions, the
//! user's own) and, later, stdio MCP servers. None of them may see Engram's process, its
//! environment, the keychain or the session bus, write outside a scratch directory, outlive
//! the call, or reach the network unless the user allowed it (DESIGN.md §8b). This crate turns
//! what a program may do into a [`tokio::process::Command`] that enforces it, the way OpenAI's
//! Codex CLI keeps its sandbox in a crate of its own (`codex-rs/linux-sandbox`).
//!
//! On Linux the confinement is [bubblewrap](https://github.com/containers/bubblewrap) (`bwrap`,
//! what Flatpak runs on) — no hand-written namespace code, and no `unsafe` here:
//! - new user, PID, mount, IPC, UTS, cgroup and (unless [`Network::Full`]) network namespaces:
//!   Engram's `/proc/<pid>/environ` does not exist in the room, abstract Unix sockets (an
//!   old-style D-Bus address) are out of reach, and only loopback is up;
//! - a root of its own: `/usr` and the system libraries read-only, a few `/etc` files the
//!   loader, TLS and (with network) DNS need, the policy's read-only paths, its writable paths
//!   and the scratch directory (also `HOME` and the working directory), a private `/tmp` and
//!   minimal `/dev` and `/proc`; not `/home`, `/root`, `/run` (the session bus socket), nor
//!   `/etc/passwd`;
//! - no capabilities, no further user namespaces, a new session (no terminal injection), an
//!   environment of exactly the policy's variables, `SIGKILL` for the room when its parent dies;
//! - a seccomp filter that refuses the kernel keyring calls (`keyctl`, `add_key`,
//!   `request_key`): a child inherits its parent's session keyring, and namespaces do not hide
//!   it (see [`seccomp`]);
//! - resource limits (CPU seconds, address space, processes, file size) set by util-linux
//!   `prlimit` inside the room right before the program starts; hard limits too, so the
//!   program cannot raise them again (see [`Limits`]).
//!
//! When the room's first process (bubblewrap's PID 1) ends, the kernel kills every process in
//! its PID namespace, so whatever a program started (also with `setsid`) ends with the call.
//! Callers kill the `bwrap` child they spawned on timeout; that is enough.
//!
//! Elsewhere (macOS, Windows) there is no sandbox yet: [`Sandbox::detect`] says why, and the
//! caller decides whether to run unconfined (only when the user said so).

mod bwrap;
mod probe;
pub mod seccomp;

pub use bwrap::{BRIDGE_PORT_VAR, BRIDGE_SOCKET_PATH, BRIDGE_SOCKET_VAR};
pub use probe::Sandbox;

use std::path::PathBuf;

/// A small forwarder, in Python, that a harness inside the room runs before user code: it
/// listens on `127.0.0.1:$ENGRAM_BRIDGE_PORT` (the room's own loopback) and relays each
/// connection to the Unix socket at `$ENGRAM_BRIDGE_SOCKET`. Call `engram_bridge_start()`; it
/// does nothing when the variables are unset, and returns the listening port or `None`.
pub const BRIDGE_PY: &str = include_str!("bridge.py");

/// What a confined program may read, write and reach, and how much it may use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Host paths bound read-only at the same path inside the room (files or directories),
    /// beyond the system ones: the interpreter's prefix and site-packages, the program's files.
    /// Paths that do not exist are skipped.
    pub read_only: Vec<PathBuf>,
    /// Host directories bound read-write at the same path (e.g. where a harness leaves its
    /// result). Keep it empty unless something must come back out besides the scratch dir.
    pub writable: Vec<PathBuf>,
    /// The scratch directory: writable, bound at the same path, the program's `HOME` and
    /// working directory. It must exist.
    pub scratch: PathBuf,
    /// Whether the room shares the host's network.
    pub network: Network,
    /// Engram's local API, reachable inside the room over a Unix socket (see [`Bridge`]).
    pub bridge: Option<Bridge>,
    /// Resource limits applied before the program starts.
    pub limits: Limits,
    /// The program's whole environment (nothing is inherited), as `(name, value)` pairs.
    /// `HOME` is set to the scratch directory unless given here.
    pub env: Vec<(String, String)>,
}

/// Network access of a confined program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// A network namespace of its own with only loopback: nothing outside the room answers
    /// (except the [`Bridge`], when the policy has one).
    #[default]
    Off,
    /// The host's network namespace: the internet, local services on 127.0.0.1, and abstract
    /// Unix sockets. Only for programs the user allowed to go online.
    Full,
}

/// Engram's own local API inside the room: the host's Unix socket `socket` is bound at
/// [`BRIDGE_SOCKET_PATH`], and [`BRIDGE_SOCKET_VAR`] / [`BRIDGE_PORT_VAR`] tell a harness to
/// forward `127.0.0.1:port` to it ([`BRIDGE_PY`]). The socket's server decides what a
/// connection may do (e.g. a credential scoped to one agent); the room adds no other route out.
/// With [`Network::Full`] the socket is bound but the forwarding variables are not set: a
/// forwarder there would listen on the host's loopback, open to every local process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bridge {
    /// The host's Unix socket of Engram's API.
    pub socket: PathBuf,
    /// The TCP port that code in the room connects to on 127.0.0.1 (e.g. 8283, so
    /// `letta_client` with its usual base URL works unchanged).
    pub port: u16,
}

/// Resource limits, applied with `prlimit` inside the room (soft and hard limit alike, so the
/// program cannot raise them). `None` leaves a limit as inherited.
///
/// `max_processes` is `RLIMIT_NPROC`, which Linux counts per user (within the room's user
/// namespace) and does not enforce for root: when Engram itself runs as root the limit is set
/// but has no effect. The wall-clock timeout is the caller's (kill the child).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU time, in seconds (`RLIMIT_CPU`; the program gets `SIGXCPU`, a second later
    /// `SIGKILL`). A program killed by `SIGXCPU` makes bubblewrap exit with status
    /// [`CPU_EXCEEDED_STATUS`].
    pub cpu_seconds: Option<u64>,
    /// Virtual address space, in bytes (`RLIMIT_AS`; allocations past it fail).
    pub address_space_bytes: Option<u64>,
    /// Processes and threads of the user (`RLIMIT_NPROC`; see above).
    pub max_processes: Option<u64>,
    /// Largest file the program may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: Option<u64>,
    /// Size of the room's private `/tmp` (a tmpfs), in bytes.
    pub tmp_bytes: Option<u64>,
}

impl Default for Limits {
    /// 60 CPU seconds, 1 GiB of address space, 64 processes, 64 MiB files, 64 MiB of `/tmp`.
    fn default() -> Self {
        Limits {
            cpu_seconds: Some(60),
            address_space_bytes: Some(1 << 30),
            max_processes: Some(64),
            file_size_bytes: Some(64 << 20),
            tmp_bytes: Some(64 << 20),
        }
    }
}

/// The exit status of `bwrap` when the program died of `SIGXCPU` (128 + 24): it used up its
/// CPU time.
pub const CPU_EXCEEDED_STATUS: i32 = 128 + 24;

/// Why no sandbox can be made here, and what the user can do about it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Unavailable {
    /// E.g. "bubblewrap (bwrap) is not installed: install it with `apt install bubblewrap`".
    pub reason: String,
}

/// Why a command could not be built from a policy.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The scratch directory is missing or not a directory.
    #[error("the sandbox's scratch directory {0} does not exist")]
    NoScratch(PathBuf),
    /// A path in the policy is not absolute (bubblewrap binds only absolute paths).
    #[error("sandbox paths must be absolute: {0}")]
    RelativePath(PathBuf),
    /// The seccomp filter could not be compiled or written.
    #[error("the sandbox's seccomp filter could not be prepared: {0}")]
    Seccomp(String),
    /// Creating the filter's file failed.
    #[error("the sandbox could not be prepared: {0}")]
    Io(#[from] std::io::Error),
}
