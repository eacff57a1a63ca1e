//! Finding PostgreSQL's server binaries and running them as a user PostgreSQL accepts.

use crate::ClusterError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Debian installs each major version's server binaries here.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// PostgreSQL's server binaries, and who runs them.
#[derive(Clone, Debug)]
pub struct PgBin {
    /// The directory holding `initdb`, `pg_ctl` and `psql`.
    pub dir: PathBuf,
    /// `(uid, gid)` of `nobody` when this process runs as root (initdb refuses root), else
    /// `None`: the commands run as this process's user.
    pub run_as: Option<(u32, u32)>,
}

impl PgBin {
    /// Finds the binaries: `$ENGRAM_PG_BIN` when set (and then only there), else
    /// `pg_config --bindir`, else the newest `/usr/lib/postgresql/<major>/bin`.
    ///
    /// Errors: [`ClusterError::NotInstalled`] naming where it looked; `Command` if `nobody`
    /// cannot be looked up while running as root.
    pub fn find() -> Result<PgBin, ClusterError> {
        let dir = find_dir(std::env::var_os("ENGRAM_PG_BIN").map(PathBuf::from))?;
        let run_as = if is_root() { Some(nobody()?) } else { None };
        Ok(PgBin { dir, run_as })
    }

    /// A command running the binary `name` (as `nobody` when we are root), with the
    /// environment's `PG*` variables removed so they cannot point it elsewhere.
    pub(crate) fn command(&self, name: &str) -> Command {
        let program = self.dir.join(name);
        let mut cmd = if self.run_as.is_some() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PG") {
                cmd.env_remove(key);
            }
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `cmd` to the end. Errors: [`ClusterError::Command`] with its output when it fails
    /// or cannot start.
    pub(crate) fn run(&self, what: &str, mut cmd: Command) -> Result<String, ClusterError> {
        let out = cmd.output().map_err(|e| ClusterError::Command {
            command: what.to_owned(),
            output: e.to_string(),
        })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(ClusterError::Command {
                command: what.to_owned(),
                output: text.trim().to_owned(),
            })
        }
    }

    /// Gives `path` to the user the binaries run as (a no-op when that is us).
    pub(crate) fn hand_over(&self, path: &Path) -> Result<(), ClusterError> {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(ClusterError::io(path))?;
        }
        Ok(())
    }
}

fn find_dir(explicit: Option<PathBuf>) -> Result<PathBuf, ClusterError> {
    let has_initdb = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = explicit {
        // An explicit choice that is wrong is an error, not a reason to pick another server.
        return if has_initdb(&dir) {
            Ok(dir)
        } else {
            Err(ClusterError::NotInstalled {
                searched: format!("{} (ENGRAM_PG_BIN)", dir.display()),
            })
        };
    }
    let mut searched = Vec::new();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_initdb(&dir) {
            return Ok(dir);
        }
        searched.push(dir.display().to_string());
    }
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            Some((major, e.path().join("bin")))
        })
        .collect();
    majors.sort();
    if let Some((_, dir)) = majors.into_iter().rev().find(|(_, d)| has_initdb(d)) {
        return Ok(dir);
    }
    searched.push(format!("{DEBIAN_ROOT}/*/bin"));
    Err(ClusterError::NotInstalled {
        searched: searched.join(", "),
    })
}

/// Whether this process runs as root: `/proc/self` belongs to the process's effective user.
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn nobody() -> Result<(u32, u32), ClusterError> {
    let id = |flag: &str| -> Result<u32, ClusterError> {
        let out = Command::new("id")
            .args([flag, "nobody"])
            .output()
            .map_err(|e| ClusterError::Command {
                command: "id nobody".into(),
                output: e.to_string(),
            })?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| ClusterError::Command {
                command: "id nobody".into(),
                output: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            })
    };
    Ok((id("-u")?, id("-g")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_explicit_directory_is_an_error_that_says_what_to_install() {
        let empty = tempfile::tempdir().unwrap();
        let err = find_dir(Some(empty.path().to_owned())).unwrap_err();
        assert!(matches!(err, ClusterError::NotInstalled { .. }));
        let text = err.to_string();
        assert!(text.contains("postgresql"), "{text}");
        assert!(text.contains("ENGRAM_PG_BIN"), "{text}");
    }

    #[test]
    fn the_installed_server_is_found() {
        let dir = find_dir(None).expect("PostgreSQL's server binaries are installed");
        assert!(dir.join("initdb").is_file());
    }
}
