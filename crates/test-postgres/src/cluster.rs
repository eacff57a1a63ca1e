//! One cluster in one directory: `initdb`, `pg_ctl start` on a free port, `CREATE DATABASE`,
//! `pg_ctl stop`.
//!
//! Layout under the cluster's root: `data/` (the cluster, owned by the user the server runs
//! as) and `run/` (its unix socket and `server.log`). The server listens on `127.0.0.1` only.
//! Durability is off (`fsync`, `synchronous_commit`, `full_page_writes`): a test cluster is
//! thrown away, and it makes commits cost microseconds.

use crate::{ClusterError, PgBin, TestDatabase};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The superuser made by `initdb`; tests connect as it without a password.
pub(crate) const SUPERUSER: &str = "postgres";

/// A private test cluster, stopped and removed when dropped.
#[derive(Debug)]
pub struct Cluster {
    bin: PgBin,
    port: u16,
    // Dropped after `Drop::drop` has stopped the server.
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Makes and starts a cluster in a new temp dir (about 0.7 s: `initdb` then `pg_ctl
    /// start`).
    ///
    /// Errors: [`ClusterError::NotInstalled`] without PostgreSQL; `Io` or `Command` (with the
    /// server log's tail) when a step fails.
    pub fn start() -> Result<Cluster, ClusterError> {
        let bin = PgBin::find()?;
        let dir = tempfile::Builder::new()
            .prefix("engram-pg-")
            .tempdir()
            .map_err(ClusterError::io(std::env::temp_dir()))?;
        open_up(dir.path())?;
        let port = boot(&bin, dir.path())?;
        Ok(Cluster { bin, port, dir })
    }

    /// The TCP port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new empty database in this cluster.
    ///
    /// Errors: [`ClusterError::Command`] when `CREATE DATABASE` fails (the server is down).
    pub fn database(&self) -> Result<TestDatabase, ClusterError> {
        create_database(&self.bin, self.dir.path(), self.port)
    }

    /// Stops the server (`pg_ctl stop -m fast`): open connections are cut, committed data is
    /// kept for [`restart`](Self::restart). (A crash would lose the last commits: durability
    /// is off in test clusters.)
    ///
    /// Errors: [`ClusterError::Command`] when `pg_ctl` fails (e.g. it is already stopped).
    pub fn stop(&self) -> Result<(), ClusterError> {
        stop_mode(&self.bin, self.dir.path(), "fast")
    }

    /// Starts the stopped server again on the same port, with its data.
    ///
    /// Errors: [`ClusterError::Command`] with the server log's tail.
    pub fn restart(&self) -> Result<(), ClusterError> {
        start_on(&self.bin, self.dir.path(), self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Already stopped is fine; the temp dir goes either way.
        let _ = stop(&self.bin, self.dir.path());
    }
}

/// Lets the server's user reach files under `root` (root itself stays ours).
pub(crate) fn open_up(root: &Path) -> Result<(), ClusterError> {
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755))
        .map_err(ClusterError::io(root))
}

fn data_dir(root: &Path) -> PathBuf {
    root.join("data")
}

fn run_dir(root: &Path) -> PathBuf {
    root.join("run")
}

/// Makes the cluster under `root` if it is not there yet (a half-made one from a killed
/// `initdb` is made again) and starts it on a free port. Returns the port.
pub(crate) fn boot(bin: &PgBin, root: &Path) -> Result<u16, ClusterError> {
    let data = data_dir(root);
    if !data.join("PG_VERSION").is_file() {
        if data.exists() {
            std::fs::remove_dir_all(&data).map_err(ClusterError::io(&data))?;
        }
        for dir in [data.clone(), run_dir(root)] {
            std::fs::create_dir_all(&dir).map_err(ClusterError::io(&dir))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .map_err(ClusterError::io(&dir))?;
            bin.hand_over(&dir)?;
        }
        let mut initdb = bin.command("initdb");
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "--auth=trust", "--no-sync"])
            .args(["-E", "UTF8", "--locale=C.UTF-8"]);
        bin.run("initdb", initdb)?;
    }
    // A port picked free can be taken before the server binds it; try a few.
    let mut last = None;
    for _ in 0..5 {
        let port = free_port(root)?;
        match start_on(bin, root, port) {
            Ok(()) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("tried at least once"))
}

fn free_port(root: &Path) -> Result<u16, ClusterError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(ClusterError::io(root))?;
    Ok(listener
        .local_addr()
        .map_err(ClusterError::io(root))?
        .port())
}

/// `pg_ctl start` on `port`, waiting until the server accepts connections.
pub(crate) fn start_on(bin: &PgBin, root: &Path, port: u16) -> Result<(), ClusterError> {
    let run = run_dir(root);
    let log = run.join("server.log");
    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=200",
        run.display()
    );
    let mut ctl = bin.command("pg_ctl");
    ctl.arg("-D")
        .arg(data_dir(root))
        .arg("-l")
        .arg(&log)
        .args(["-w", "-t", "60", "-o", &options, "start"]);
    bin.run("pg_ctl start", ctl).map_err(|e| match e {
        ClusterError::Command { command, output } => ClusterError::Command {
            command,
            output: format!("{output}\nserver log:\n{}", tail(&log, 20)),
        },
        other => other,
    })?;
    Ok(())
}

/// `pg_ctl stop -m immediate`: for a cluster thrown away next.
pub(crate) fn stop(bin: &PgBin, root: &Path) -> Result<(), ClusterError> {
    stop_mode(bin, root, "immediate")
}

fn stop_mode(bin: &PgBin, root: &Path, mode: &str) -> Result<(), ClusterError> {
    let mut ctl = bin.command("pg_ctl");
    ctl.arg("-D")
        .arg(data_dir(root))
        .args(["-m", mode, "-w", "stop"]);
    bin.run("pg_ctl stop", ctl).map(drop)
}

/// Whether the server of the cluster under `root` runs (`pg_ctl status`).
pub(crate) fn running(bin: &PgBin, root: &Path) -> bool {
    let mut ctl = bin.command("pg_ctl");
    ctl.arg("-D").arg(data_dir(root)).arg("status");
    data_dir(root).join("PG_VERSION").is_file() && bin.run("pg_ctl status", ctl).is_ok()
}

/// `CREATE DATABASE` with a name no other test of this cluster's life uses (process id, a
/// counter, the clock).
pub(crate) fn create_database(
    bin: &PgBin,
    root: &Path,
    port: u16,
) -> Result<TestDatabase, ClusterError> {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "t_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut psql = bin.command("psql");
    psql.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
        .args(["-p", &port.to_string(), "-U", SUPERUSER, "-d", "postgres"])
        .args(["-c", &format!("CREATE DATABASE \"{name}\"")]);
    bin.run("CREATE DATABASE", psql).map_err(|e| match e {
        ClusterError::Command { command, output } => ClusterError::Command {
            command,
            output: format!(
                "{output}\nserver log:\n{}",
                tail(&run_dir(root).join("server.log"), 20)
            ),
        },
        other => other,
    })?;
    Ok(TestDatabase {
        name,
        host: "127.0.0.1".into(),
        port,
        user: SUPERUSER.into(),
    })
}

/// The last `n` lines of a log file (or why it could not be read).
fn tail(path: &Path, n: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("({}: {e})", path.display()),
    }
}
