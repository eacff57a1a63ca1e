//! A [`Policy`] as bubblewrap arguments: the room's namespaces, its file system, its
//! environment, and the `prlimit` wrapper that sets the resource limits.

use crate::{Limits, Network, Policy, SandboxError};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Where the bridge's host socket appears inside the room.
pub const BRIDGE_SOCKET_PATH: &str = "/run/engram/api.sock";
/// The variable that tells a harness where the bridge socket is (set only with a bridge).
pub const BRIDGE_SOCKET_VAR: &str = "ENGRAM_BRIDGE_SOCKET";
/// The variable that tells a harness which loopback port to forward (set only with a bridge).
pub const BRIDGE_PORT_VAR: &str = "ENGRAM_BRIDGE_PORT";

/// The descriptor number bubblewrap reads the seccomp filter from.
pub(crate) const SECCOMP_FD: i32 = 3;

/// The `PATH` a program gets when the policy sets none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Top-level directories that hold programs and libraries: bound read-only, or recreated as
/// the same symlink on merged-`/usr` systems.
const SYSTEM_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// `/etc` files every program may need (the loader's cache, TLS roots, time zone, the
/// `alternatives` symlinks some of `/usr/bin` points through, `localhost` in `hosts`).
/// Not `passwd`, `shadow`, `group` or anything with credentials.
const ETC_ALWAYS: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/hosts",
    "/etc/nsswitch.conf",
];

/// `/etc` files for name resolution, bound only when the room has the network.
const ETC_NETWORK: &[&str] = &["/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf"];

/// The namespace and hardening flags every room gets (the availability probe uses the same).
pub(crate) fn core_flags(network: Network) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "engram-sandbox",
        "--clearenv",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    if network == Network::Full {
        args.push("--share-net".into());
    }
    args
}

/// The whole `bwrap` argument list for `program args` under `policy`, with `prlimit` (the
/// host path found at detection, bound read-only) in front of the program.
pub(crate) fn arguments(
    policy: &Policy,
    prlimit: &Path,
    program: &OsStr,
    args: &[OsString],
) -> Result<Vec<OsString>, SandboxError> {
    if !policy.scratch.is_dir() {
        return Err(SandboxError::NoScratch(policy.scratch.clone()));
    }
    for p in policy
        .read_only
        .iter()
        .chain(&policy.writable)
        .chain(std::iter::once(&policy.scratch))
    {
        if !p.is_absolute() {
            return Err(SandboxError::RelativePath(p.clone()));
        }
    }
    let mut out = core_flags(policy.network);
    out.extend(["--seccomp".into(), SECCOMP_FD.to_string().into()]);

    // The file system, in mount order: later binds land inside earlier ones.
    out.extend(["--proc", "/proc", "--dev", "/dev"].map(OsString::from));
    if let Some(bytes) = policy.limits.tmp_bytes {
        out.extend(["--size".into(), bytes.to_string().into()]);
    }
    out.extend(["--tmpfs", "/tmp"].map(OsString::from));
    bind(&mut out, "--ro-bind", Path::new("/usr"));
    for dir in SYSTEM_DIRS {
        let dir = Path::new(dir);
        match std::fs::read_link(dir) {
            Ok(target) => {
                out.extend(["--symlink".into(), target.into(), dir.into()]);
            }
            Err(_) if dir.is_dir() => bind(&mut out, "--ro-bind", dir),
            Err(_) => {}
        }
    }
    let etc_network: &[&str] = if policy.network == Network::Full {
        ETC_NETWORK
    } else {
        &[]
    };
    for file in ETC_ALWAYS.iter().chain(etc_network) {
        bind(&mut out, "--ro-bind-try", Path::new(file));
    }
    bind(&mut out, "--ro-bind", prlimit);
    for p in &policy.read_only {
        bind(&mut out, "--ro-bind-try", p);
    }
    for p in &policy.writable {
        bind(&mut out, "--bind", p);
    }
    bind(&mut out, "--bind", &policy.scratch);
    if let Some(bridge) = &policy.bridge {
        // A socket on a read-only mount still accepts connections; the room cannot replace it.
        out.extend([
            "--ro-bind".into(),
            bridge.socket.clone().into(),
            BRIDGE_SOCKET_PATH.into(),
        ]);
    }
    // The room's own root (a tmpfs holding the mount points) is read-only too, so nothing but
    // the scratch dir, the writable paths and /tmp takes a write.
    out.extend(["--remount-ro", "/"].map(OsString::from));
    out.extend(["--chdir".into(), policy.scratch.clone().into()]);

    // The environment: exactly the policy's, plus HOME, PATH and the bridge's variables.
    let mut env: Vec<(String, OsString)> = policy
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.into()))
        .collect();
    let has = |env: &[(String, OsString)], key: &str| env.iter().any(|(k, _)| k == key);
    if !has(&env, "HOME") {
        env.push(("HOME".into(), policy.scratch.clone().into()));
    }
    if !has(&env, "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    // With the host's network a forwarder would listen on the host's loopback, open to every
    // local process: the room then gets the socket only, and reaches the API the usual way.
    if let Some(bridge) = policy
        .bridge
        .as_ref()
        .filter(|_| policy.network == Network::Off)
    {
        env.push((BRIDGE_SOCKET_VAR.into(), BRIDGE_SOCKET_PATH.into()));
        env.push((BRIDGE_PORT_VAR.into(), bridge.port.to_string().into()));
    }
    for (k, v) in env {
        out.extend(["--setenv".into(), k.into(), v]);
    }

    out.push("--".into());
    out.push(prlimit.into());
    out.extend(prlimit_flags(&policy.limits));
    out.push("--".into());
    out.push(program.into());
    out.extend(args.iter().cloned());
    Ok(out)
}

/// `prlimit` options for `limits`: each sets the soft and the hard limit, and core dumps are
/// always off (a dump could carry whatever the program read). CPU time gets a hard limit one
/// second past the soft one, so the program first dies of `SIGXCPU` (exit status 152 through
/// bubblewrap: the caller can say why) and `SIGKILL` follows only if it ignores that.
fn prlimit_flags(limits: &Limits) -> Vec<OsString> {
    let mut flags = vec![OsString::from("--core=0")];
    if let Some(cpu) = limits.cpu_seconds {
        flags.push(format!("--cpu={cpu}:{}", cpu.saturating_add(1)).into());
    }
    let mut add = |name: &str, value: Option<u64>| {
        if let Some(v) = value {
            flags.push(format!("--{name}={v}").into());
        }
    };
    add("as", limits.address_space_bytes);
    add("nproc", limits.max_processes);
    add("fsize", limits.file_size_bytes);
    flags
}

fn bind(out: &mut Vec<OsString>, how: &str, path: &Path) {
    let path: PathBuf = path.into();
    out.extend([how.into(), path.clone().into(), path.into()]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bridge;

    fn joined(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_network_is_shared_only_when_full_and_dns_files_come_with_it() {
        let scratch = tempfile::tempdir().unwrap();
        let mut policy = Policy {
            scratch: scratch.path().into(),
            ..Policy::default()
        };
        let off =
            joined(&arguments(&policy, Path::new("/usr/bin/prlimit"), "x".as_ref(), &[]).unwrap());
        assert!(!off.contains("--share-net"), "{off}");
        assert!(!off.contains("resolv.conf"), "{off}");
        assert!(off.contains("--unshare-all"), "{off}");
        policy.network = Network::Full;
        let full =
            joined(&arguments(&policy, Path::new("/usr/bin/prlimit"), "x".as_ref(), &[]).unwrap());
        assert!(full.contains("--share-net"), "{full}");
        assert!(full.contains("/etc/resolv.conf"), "{full}");
    }

    #[test]
    fn limits_env_and_bridge_become_arguments() {
        let scratch = tempfile::tempdir().unwrap();
        let policy = Policy {
            scratch: scratch.path().into(),
            env: vec![("LANG".into(), "C.UTF-8".into())],
            bridge: Some(Bridge {
                socket: "/run/user/1/engram.sock".into(),
                port: 8283,
            }),
            ..Policy::default()
        };
        let args = joined(
            &arguments(
                &policy,
                Path::new("/usr/bin/prlimit"),
                "/usr/bin/python3".as_ref(),
                &["-c".into(), "pass".into()],
            )
            .unwrap(),
        );
        assert!(args.contains("--clearenv"), "{args}");
        assert!(args.contains("--setenv LANG C.UTF-8"), "{args}");
        let home = format!("--setenv HOME {}", scratch.path().display());
        assert!(args.contains(&home), "{args}");
        assert!(args.contains("--setenv ENGRAM_BRIDGE_PORT 8283"), "{args}");
        assert!(
            args.contains("--ro-bind /run/user/1/engram.sock /run/engram/api.sock"),
            "{args}"
        );
        assert!(
            args.ends_with(
                "-- /usr/bin/prlimit --core=0 --cpu=60:61 --as=1073741824 --nproc=64 --fsize=67108864 -- /usr/bin/python3 -c pass"
            ),
            "{args}"
        );
        assert!(!args.contains("/home"), "{args}");
        assert!(!args.contains("/etc/passwd"), "{args}");

        // With the host's network: the socket, but no forwarder on the host's loopback.
        let full = Policy {
            network: Network::Full,
            ..policy
        };
        let args =
            joined(&arguments(&full, Path::new("/usr/bin/prlimit"), "x".as_ref(), &[]).unwrap());
        assert!(args.contains("/run/engram/api.sock"), "{args}");
        assert!(!args.contains("ENGRAM_BRIDGE_PORT"), "{args}");
    }

    #[test]
    fn a_missing_scratch_or_a_relative_path_is_refused() {
        let policy = Policy {
            scratch: "/nonexistent/engram-scratch".into(),
            ..Policy::default()
        };
        let err = arguments(&policy, Path::new("/usr/bin/prlimit"), "x".as_ref(), &[]).unwrap_err();
        assert!(matches!(err, SandboxError::NoScratch(_)), "{err}");
        let scratch = tempfile::tempdir().unwrap();
        let policy = Policy {
            scratch: scratch.path().into(),
            read_only: vec!["relative/dir".into()],
            ..Policy::default()
        };
        let err = arguments(&policy, Path::new("/usr/bin/prlimit"), "x".as_ref(), &[]).unwrap_err();
        assert!(matches!(err, SandboxError::RelativePath(_)), "{err}");
    }
}
