//! Where one harness process runs: inside the sandbox, or — only for a tool the user allowed
//! to run unsandboxed, on a machine without a sandbox — in a plain process with a scrubbed
//! environment. Either way it gets a fresh temporary directory:
//!
//! ```text
//! engram-tool-XXXX/harness.py   the harness (read-only in the sandbox)
//! engram-tool-XXXX/out/         where the harness writes result.json
//! engram-tool-XXXX/work/        the scratch dir: HOME and working directory
//! ```

use engram_sandbox::{Bridge, Limits, Network, Policy, Sandbox};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The temporary directory of one call, removed when dropped.
pub(crate) struct Layout {
    dir: tempfile::TempDir,
}

impl Layout {
    /// Creates the directory with `harness` written into it.
    pub(crate) fn new(harness: &str) -> std::io::Result<Layout> {
        let dir = tempfile::Builder::new().prefix("engram-tool-").tempdir()?;
        std::fs::write(dir.path().join("harness.py"), harness)?;
        std::fs::create_dir(dir.path().join("out"))?;
        std::fs::create_dir(dir.path().join("work"))?;
        Ok(Layout { dir })
    }

    pub(crate) fn harness(&self) -> PathBuf {
        self.dir.path().join("harness.py")
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    pub(crate) fn result(&self) -> PathBuf {
        self.out().join("result.json")
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
}

/// How the harness process is confined.
pub(crate) enum Confinement<'a> {
    /// In the sandbox, with these permissions.
    Sandboxed {
        sandbox: &'a Sandbox,
        /// The interpreter's directories (prefix, site-packages), bound read-only.
        python_paths: &'a [PathBuf],
        limits: Limits,
        network: bool,
        bridge: Option<Bridge>,
    },
    /// A plain child process: scrubbed environment, temp dir as `HOME`, nothing more.
    Unsandboxed,
}

/// The variables the harness gets, beyond `HOME` and `PATH`.
const BASE_ENV: &[(&str, &str)] = &[
    ("LANG", "C.UTF-8"),
    ("PYTHONIOENCODING", "utf-8"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
];

/// The command that runs `python -I -B -X utf8 harness.py out/result.json` in `layout`.
pub(crate) fn command(
    python: &Path,
    layout: &Layout,
    confinement: Confinement<'_>,
) -> std::io::Result<Command> {
    // -I: ignore PYTHON* variables and user site-packages, keep the script dir off sys.path;
    // -B: write no .pyc; -X utf8: UTF-8 I/O whatever the locale.
    let args: Vec<OsString> = vec![
        "-I".into(),
        "-B".into(),
        "-X".into(),
        "utf8".into(),
        layout.harness().into(),
        layout.result().into(),
    ];
    let mut command = match confinement {
        Confinement::Sandboxed {
            sandbox,
            python_paths,
            limits,
            network,
            bridge,
        } => {
            let mut read_only = python_paths.to_vec();
            // The interpreter is usually inside its prefix; binding it again over a symlink
            // there (a virtualenv's bin/python) would fail, so only when it is not.
            if !python_paths.iter().any(|p| python.starts_with(p)) {
                read_only.push(python.to_path_buf());
            }
            read_only.push(layout.harness());
            let bin = python.parent().map(|p| p.display().to_string());
            let path = match bin {
                Some(bin) => format!("{bin}:/usr/local/bin:/usr/bin:/bin"),
                None => "/usr/local/bin:/usr/bin:/bin".to_owned(),
            };
            let mut env: Vec<(String, String)> = BASE_ENV
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            env.push(("PATH".into(), path));
            let policy = Policy {
                read_only,
                writable: vec![layout.out()],
                scratch: layout.work(),
                network: if network { Network::Full } else { Network::Off },
                bridge,
                limits,
                env,
            };
            sandbox
                .command(&policy, python, &args)
                .map_err(std::io::Error::other)?
        }
        Confinement::Unsandboxed => {
            let mut command = Command::new(python);
            command
                .args(&args)
                .env_clear()
                .env(
                    "PATH",
                    std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
                )
                .env("HOME", layout.work())
                .envs(BASE_ENV.iter().copied())
                .current_dir(layout.work())
                .kill_on_drop(true);
            #[cfg(windows)]
            if let Some(root) = std::env::var_os("SYSTEMROOT") {
                // Python on Windows cannot start without it.
                command.env("SYSTEMROOT", root);
            }
            command
        }
    };
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    Ok(command)
}
