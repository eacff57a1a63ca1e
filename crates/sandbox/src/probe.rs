//! Finding a working sandbox once, and making confined commands with it.

use crate::{Network, Policy, SandboxError, Unavailable, bwrap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tracing::{debug, warn};

/// The variable that names the `bwrap` program to use (default: `bwrap` on `PATH`).
pub const BWRAP_VAR: &str = "ENGRAM_BWRAP";

/// A sandbox that was seen to work on this machine: bubblewrap, `prlimit` and the compiled
/// seccomp filter. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Sandbox {
    bwrap: PathBuf,
    prlimit: PathBuf,
    seccomp: Arc<Vec<u8>>,
}

impl Sandbox {
    /// The machine's sandbox, found once per process and remembered (also the reason when
    /// there is none): `$ENGRAM_BWRAP`, else `bwrap` on `PATH`. Blocks while a test room is
    /// made (tens of milliseconds) on first use; async callers use `spawn_blocking`.
    pub fn detect() -> Result<Sandbox, Unavailable> {
        static FOUND: OnceLock<Result<Sandbox, Unavailable>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                let program = std::env::var_os(BWRAP_VAR).unwrap_or_else(|| "bwrap".into());
                let found = Sandbox::probe(&program);
                match &found {
                    Ok(s) => debug!(bwrap = %s.bwrap.display(), "sandbox available"),
                    Err(u) => warn!(reason = %u.reason, "no sandbox for tools"),
                }
                found
            })
            .clone()
    }

    /// Checks that `bwrap` (a name looked up on `PATH`, or a path) can make a room here by
    /// running `true` inside one with every flag a real room gets. Not cached.
    ///
    /// Errors: [`Unavailable`] saying what is missing and what to do — bubblewrap not
    /// installed, user namespaces disabled, `prlimit` missing, not Linux.
    pub fn probe(bwrap: &OsStr) -> Result<Sandbox, Unavailable> {
        if !cfg!(target_os = "linux") {
            return Err(unavailable(format!(
                "tools run in a bubblewrap sandbox, which exists only on Linux; on {} no sandbox is available yet",
                std::env::consts::OS
            )));
        }
        let bwrap_path = find_program(bwrap).ok_or_else(|| {
            unavailable(format!(
                "bubblewrap (`{}`) is not installed: install it (Debian/Ubuntu: `apt install bubblewrap`, Fedora: `dnf install bubblewrap`)",
                bwrap.to_string_lossy()
            ))
        })?;
        let prlimit = find_program("prlimit".as_ref()).ok_or_else(|| {
            unavailable(
                "util-linux's `prlimit` was not found on PATH; the sandbox needs it to set resource limits (Debian: `apt install util-linux`)",
            )
        })?;
        let seccomp = program_bytes()?;
        let sandbox = Sandbox {
            bwrap: bwrap_path,
            prlimit,
            seccomp: Arc::new(seccomp),
        };
        let scratch = tempfile_dir()?;
        let policy = Policy {
            scratch: scratch.clone(),
            network: Network::Off,
            ..Policy::default()
        };
        let truth = find_program("true".as_ref()).unwrap_or_else(|| "/usr/bin/true".into());
        let output = sandbox
            .std_command(&policy, truth.as_os_str(), &[])
            .map_err(|e| unavailable(e.to_string()))?
            .stdin(std::process::Stdio::null())
            .output();
        let _ = std::fs::remove_dir(&scratch);
        let output = output.map_err(|e| {
            unavailable(format!(
                "bubblewrap ({}) could not be started: {e}",
                sandbox.bwrap.display()
            ))
        })?;
        if output.status.success() {
            return Ok(sandbox);
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim();
        let namespaces = [
            "namespace",
            "uid map",
            "Operation not permitted",
            "Permission denied",
        ]
        .iter()
        .any(|needle| said.contains(needle));
        if said.contains("Unknown option") {
            return Err(unavailable(format!(
                "the installed bubblewrap ({}) is too old for Engram's sandbox, which needs 0.8 or newer ({said})",
                sandbox.bwrap.display()
            )));
        }
        Err(unavailable(if namespaces {
            format!(
                "bubblewrap cannot create namespaces here — user namespaces are disabled or restricted (bwrap: {said}); allow them (e.g. `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 an AppArmor profile for bwrap), or run inside a VM or container that permits them"
            )
        } else {
            format!(
                "bubblewrap could not make a sandbox here ({}): {said}",
                output.status
            )
        }))
    }

    /// The `bwrap` program this sandbox runs.
    pub fn bwrap(&self) -> &Path {
        &self.bwrap
    }

    /// A command that runs `program args` confined by `policy`. `program` must be an absolute
    /// path visible in the room (under `/usr`, or in `policy.read_only`). The command starts
    /// `bwrap` with a cleared environment and the seccomp filter on descriptor 3, and is killed
    /// when dropped; stdin, stdout and stderr are the caller's to set. Killing the spawned
    /// child (bubblewrap) ends every process in the room.
    ///
    /// bubblewrap dies with the *thread* that spawned it (`PR_SET_PDEATHSIG`), so spawn from a
    /// thread that outlives the call — a runtime worker or the waiting thread itself, not a
    /// pooled thread that may retire meanwhile.
    ///
    /// Errors: [`SandboxError`] for a missing scratch directory or a relative path.
    pub fn command(
        &self,
        policy: &Policy,
        program: impl AsRef<OsStr>,
        args: &[OsString],
    ) -> Result<tokio::process::Command, SandboxError> {
        let std = self.std_command(policy, program.as_ref(), args)?;
        let mut command = tokio::process::Command::from(std);
        command.kill_on_drop(true);
        Ok(command)
    }

    fn std_command(
        &self,
        policy: &Policy,
        program: &OsStr,
        args: &[OsString],
    ) -> Result<std::process::Command, SandboxError> {
        let arguments = bwrap::arguments(policy, &self.prlimit, program, args)?;
        let mut command = std::process::Command::new(&self.bwrap);
        command.args(arguments).env_clear();
        attach_seccomp(&mut command, &self.seccomp)?;
        Ok(command)
    }
}

/// Hands the filter to bubblewrap as descriptor 3: the read end of a pipe that already holds
/// all of it (a filter is a few hundred bytes, far below a pipe's buffer).
#[cfg(target_os = "linux")]
fn attach_seccomp(command: &mut std::process::Command, bytes: &[u8]) -> Result<(), SandboxError> {
    use command_fds::{CommandFdExt, FdMapping};
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(bytes)?;
    drop(writer);
    command
        .fd_mappings(vec![FdMapping {
            parent_fd: reader.into(),
            child_fd: bwrap::SECCOMP_FD,
        }])
        .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn attach_seccomp(_: &mut std::process::Command, _: &[u8]) -> Result<(), SandboxError> {
    Err(SandboxError::Seccomp("seccomp exists only on Linux".into()))
}

#[cfg(target_os = "linux")]
fn program_bytes() -> Result<Vec<u8>, Unavailable> {
    crate::seccomp::program().map_err(|e| {
        unavailable(format!(
            "the sandbox's seccomp filter cannot be built for this CPU: {e}"
        ))
    })
}

#[cfg(not(target_os = "linux"))]
fn program_bytes() -> Result<Vec<u8>, Unavailable> {
    Err(unavailable("seccomp exists only on Linux"))
}

fn unavailable(reason: impl Into<String>) -> Unavailable {
    Unavailable {
        reason: reason.into(),
    }
}

/// A fresh empty directory for the probe's room.
fn tempfile_dir() -> Result<PathBuf, Unavailable> {
    let dir = std::env::temp_dir().join(format!(
        "engram-sandbox-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir(&dir)
        .map_err(|e| unavailable(format!("no temporary directory for the sandbox: {e}")))?;
    Ok(dir)
}

/// `name` itself when it holds a `/`, else the first executable `PATH` entry of that name,
/// with symlinks resolved (so the room binds the real file).
fn find_program(name: &OsStr) -> Option<PathBuf> {
    let as_path = Path::new(name);
    let found = if as_path.components().count() > 1 {
        as_path.is_file().then(|| as_path.to_path_buf())
    } else {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        std::env::split_paths(&path)
            .map(|dir| dir.join(as_path))
            .find(|candidate| is_executable(candidate))
    }?;
    Some(std::fs::canonicalize(&found).unwrap_or(found))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}
