//! One cluster per test binary, shared by its test processes, each test in a database of its
//! own.
//!
//! The cluster lives in `$TMPDIR/engram-pg-<hash of the test binary's path>/`. Two lock files
//! there (flock, released by the kernel when a process ends, however it ends):
//! - `users`: every test process holds it shared for its whole life;
//! - `setup.lock`: held exclusively while a process checks for the cluster and starts it.
//!
//! The first process starts the cluster and a watcher (a small `bash` loop in its own session,
//! with no handle on the test's output) that stops the server and removes its files once it
//! could take `users` exclusively — no test process left — for [`IDLE_STOP`] in a row. It
//! holds that lock while it stops, so a test arriving meanwhile waits and then starts a new
//! cluster.

use crate::cluster::{self, boot, create_database, open_up, running};
use crate::{ClusterError, PgBin, TestDatabase};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a shared cluster outlives its last test process.
pub const IDLE_STOP: Duration = Duration::from_secs(3);

/// The watcher: stops the cluster once no test process has held `users` for `IDLE` seconds.
/// `$1` is the cluster's root, the rest the stop command.
const WATCHER: &str = r#"
root=$1; shift
echo $$ > "$root/watcher.pid"
exec 9<"$root/users"
idle=0
while sleep 1; do
  # The server went away by itself (killed): nothing left to watch.
  [ -f "$root/data/postmaster.pid" ] || { rm -f "$root/watcher.pid"; exit 0; }
  if flock -xn 9; then
    idle=$((idle + 1))
    if [ "$idle" -ge "$IDLE" ]; then
      "$@" >/dev/null 2>&1
      rm -rf "$root/data" "$root/run" "$root/port" "$root/watcher.pid"
      exit 0
    fi
    flock -u 9
  else
    idle=0
  fi
done
"#;

/// The name the watcher runs under (its `$0`), so a live one can be recognised.
const WATCHER_NAME: &str = "engram-pg-watcher";

struct Shared {
    bin: PgBin,
    root: PathBuf,
    port: u16,
    /// Held shared until this process ends.
    _users: File,
}

static SHARED: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

/// A new empty database in this test binary's shared cluster (started on first use).
///
/// # Panics
/// When there is no cluster to be had, with the reason: PostgreSQL not installed (what to
/// install), or the command that failed and the server log's tail. A test that needs
/// PostgreSQL fails without it; it is never skipped.
pub fn database() -> TestDatabase {
    try_database().unwrap_or_else(|e| panic!("this test needs PostgreSQL: {e}"))
}

/// Like [`database`], returning the error instead of panicking.
///
/// Errors: [`ClusterError`] as in [`crate::Cluster::start`], or `Command` when `CREATE
/// DATABASE` fails.
pub fn try_database() -> Result<TestDatabase, ClusterError> {
    let shared = shared()?;
    create_database(&shared.bin, &shared.root, shared.port)
}

fn shared() -> Result<Arc<Shared>, ClusterError> {
    let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = slot.as_ref() {
        return Ok(s.clone());
    }
    let s = Arc::new(join_or_start()?);
    *slot = Some(s.clone());
    Ok(s)
}

fn join_or_start() -> Result<Shared, ClusterError> {
    let bin = PgBin::find()?;
    let root = std::env::temp_dir().join(format!("engram-pg-{:016x}", binary_key()));
    std::fs::create_dir_all(&root).map_err(ClusterError::io(&root))?;
    open_up(&root)?;
    let users = lock_file(&root.join("users"))?;
    // Waits while a watcher stops an idle cluster.
    users
        .lock_shared()
        .map_err(ClusterError::io(root.join("users")))?;
    let setup = lock_file(&root.join("setup.lock"))?;
    setup
        .lock()
        .map_err(ClusterError::io(root.join("setup.lock")))?;
    let port_file = root.join("port");
    let known_port = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok());
    let port = match known_port {
        Some(port) if running(&bin, &root) => port,
        _ => {
            // Not running (first test, or the server was killed): start it (reusing its data
            // when a killed server left it).
            if running(&bin, &root) {
                cluster::stop(&bin, &root)?;
            }
            let port = boot(&bin, &root)?;
            std::fs::write(&port_file, port.to_string()).map_err(ClusterError::io(&port_file))?;
            port
        }
    };
    if !watcher_alive(&root) {
        start_watcher(&bin, &root)?;
    }
    drop(setup);
    Ok(Shared {
        bin,
        root,
        port,
        _users: users,
    })
}

fn lock_file(path: &Path) -> Result<File, ClusterError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(ClusterError::io(path))
}

/// FNV-1a of the test binary's path: each test binary gets its own cluster, and every
/// process of one binary finds the same one.
fn binary_key() -> u64 {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn watcher_alive(root: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(root.join("watcher.pid"))
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    else {
        return false;
    };
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(WATCHER_NAME))
}

fn start_watcher(bin: &PgBin, root: &Path) -> Result<(), ClusterError> {
    let pg_ctl = bin.dir.join("pg_ctl");
    let mut cmd = Command::new("setsid");
    cmd.args(["bash", "-c", WATCHER, WATCHER_NAME])
        .arg(root)
        .env("IDLE", IDLE_STOP.as_secs().to_string());
    if bin.run_as.is_some() {
        cmd.args(["runuser", "-u", "nobody", "--"]);
    }
    cmd.arg(pg_ctl)
        .arg("-D")
        .arg(root.join("data"))
        .args(["-m", "immediate", "-w", "stop"])
        // No handle on the test's output: nextest would wait for the watcher otherwise.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.spawn().map_err(|e| ClusterError::Command {
        command: "setsid bash (cluster watcher)".into(),
        output: e.to_string(),
    })?;
    // The watcher writes its pid first thing; wait for it so the next test does not start a
    // second one.
    for _ in 0..200 {
        if watcher_alive(root) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(ClusterError::Command {
        command: "setsid bash (cluster watcher)".into(),
        output: "the watcher did not start within a second".into(),
    })
}
