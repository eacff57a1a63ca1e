//! Hostile user tools against the real runner and sandbox: each tries to get at the user's
//! secrets or out of its room, and must fail; the tool settings (network, unsandboxed) and the
//! local API bridge must do what they say.

use engram_tools::{Bridge, Limits, PythonRunner, ToolOutcome, ToolRun, ToolStatus};
use serde_json::{Value, json};
use std::time::Duration;

fn runner() -> PythonRunner {
    let runner = PythonRunner::discover()
        .expect("python3 is needed for these tests")
        .with_timeout(Duration::from_secs(20));
    if let Err(u) = runner.sandbox() {
        panic!("these tests need a working sandbox (bubblewrap): {u}");
    }
    runner
}

fn call(source: &str, name: &str, arguments: Value) -> ToolRun {
    ToolRun {
        source: source.into(),
        name: name.into(),
        arguments,
        agent_id: "agent-1".into(),
        agent_name: "tester".into(),
        blocks: vec![],
        network: false,
        allow_unsandboxed: false,
        bridge: None,
    }
}

/// Runs the tool and decodes its JSON return value.
async fn json_of(runner: &PythonRunner, call: &ToolRun) -> Value {
    let out = runner.run(call).await;
    assert_eq!(out.status, ToolStatus::Ok, "{out:#?}");
    serde_json::from_str(&out.message).unwrap_or_else(|e| panic!("{e}: {out:#?}"))
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test]
async fn a_tool_finds_none_of_engrams_environment_or_processes() {
    // Every variable of this process (Engram's stand-in) except the few the tool is given.
    let ours: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| {
            ![
                "PATH",
                "HOME",
                "LANG",
                "PWD",
                "LC_CTYPE",
                "PYTHONIOENCODING",
                "PYTHONDONTWRITEBYTECODE",
            ]
            .contains(&k.as_str())
        })
        .collect();
    assert!(!ours.is_empty());
    let source = r#"
import os
def snoop(names: list, parent: int):
    seen, pids = [], []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        pids.append(int(pid))
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                environ = f.read()
        except OSError:
            continue
        seen += [n for n in names if (n + "=").encode() in environ]
    seen += [n for n in names if n in os.environ]
    return {"seen": sorted(set(seen)), "pids": pids,
            "parent": os.path.exists("/proc/%d" % parent)}
"#;
    let v = json_of(
        &runner(),
        &call(
            source,
            "snoop",
            json!({"names": ours, "parent": std::process::id()}),
        ),
    )
    .await;
    assert_eq!(v["seen"], json!([]), "{v}");
    assert_eq!(v["parent"], json!(false), "{v}");
    let pids: Vec<u32> = serde_json::from_value(v["pids"].clone()).unwrap();
    assert!(
        pids.iter().all(|p| *p < 10),
        "host processes visible: {pids:?}"
    );
}

#[tokio::test]
async fn a_tool_cannot_use_the_kernel_keyring_or_the_session_bus() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    // A session bus stand-in on an abstract socket, as an old-style bus address names it.
    let bus = unique("engram-bus");
    let listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(bus.as_bytes()).unwrap()).unwrap();
    let source = r#"
import ctypes, os, platform, socket, subprocess
def snoop(bus: str):
    out = {"dbus_env": os.environ.get("DBUS_SESSION_BUS_ADDRESS"),
           "run_user": os.path.exists("/run/user/%d/bus" % os.getuid())}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + bus)
        out["bus"] = "connected"
    except OSError as e:
        out["bus"] = e.__class__.__name__
    # keyctl(KEYCTL_GET_KEYRING_ID = 0, KEY_SPEC_SESSION_KEYRING = -3, create = 0)
    nr = {"x86_64": 250, "aarch64": 219, "riscv64": 219}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    out["keyctl"] = [libc.syscall(nr, 0, -3, 0), ctypes.get_errno()]
    try:
        p = subprocess.run(["keyctl", "show", "@s"], capture_output=True, text=True)
        out["keyctl_cli"] = p.returncode
    except OSError:
        out["keyctl_cli"] = "missing"
    return out
"#;
    let v = json_of(&runner(), &call(source, "snoop", json!({"bus": bus}))).await;
    assert_eq!(v["dbus_env"], json!(null), "{v}");
    assert_eq!(v["run_user"], json!(false), "{v}");
    assert_eq!(v["bus"], json!("ConnectionRefusedError"), "{v}");
    assert_eq!(
        v["keyctl"],
        json!([-1, 1]),
        "keyctl is refused with EPERM: {v}"
    );
    assert_ne!(v["keyctl_cli"], json!(0), "{v}");
    drop(listener);
}

#[tokio::test]
async fn a_tool_writes_only_its_scratch_dir_and_reads_no_private_files() {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let private = tempfile::Builder::new()
        .prefix(".engram-private-")
        .tempfile_in(&home)
        .unwrap();
    std::fs::write(private.path(), "private").unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("pwned.txt");
    let source = r#"
import os
def vandal(paths: list, private: str):
    out = {}
    for p in paths:
        try:
            with open(p, "w") as f:
                f.write("pwned")
            out[p] = "written"
        except OSError as e:
            out[p] = e.__class__.__name__
    for p in (private, "/etc/passwd"):
        try:
            out[p] = open(p).read()
        except OSError as e:
            out[p] = e.__class__.__name__
    with open("notes.txt", "w") as f:
        f.write("scratch is fine")
    out["scratch"] = open(os.path.join(os.environ["HOME"], "notes.txt")).read()
    return out
"#;
    let paths = [
        target.to_str().unwrap().to_owned(),
        "/usr/pwned".to_owned(),
        format!("{home}/pwned"),
    ];
    let v = json_of(
        &runner(),
        &call(
            source,
            "vandal",
            json!({"paths": paths, "private": private.path()}),
        ),
    )
    .await;
    for p in &paths {
        assert_ne!(v[p], json!("written"), "{p}: {v}");
        assert!(!std::path::Path::new(p).exists(), "{p} was written");
    }
    assert_eq!(
        v[private.path().to_str().unwrap()],
        json!("FileNotFoundError"),
        "{v}"
    );
    assert_eq!(v["/etc/passwd"], json!("FileNotFoundError"), "{v}");
    assert_eq!(v["scratch"], json!("scratch is fine"), "{v}");
}

#[tokio::test]
async fn the_network_is_off_unless_the_tool_has_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let source = r#"
import socket
def reach(port: int):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return "connected"
    except OSError as e:
        return e.__class__.__name__
"#;
    let runner = runner();
    let mut c = call(source, "reach", json!({"port": port}));
    assert_eq!(runner.run(&c).await.message, "ConnectionRefusedError");
    c.network = true;
    assert_eq!(runner.run(&c).await.message, "connected");
}

#[tokio::test]
async fn a_detached_child_ends_with_the_call() {
    let marker = unique("engram-detached");
    let source = r#"
import subprocess, sys
def leave(marker: str):
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker],
                         start_new_session=True)
    return p.pid
"#;
    let out = runner()
        .run(&call(source, "leave", json!({"marker": marker})))
        .await;
    assert_eq!(out.status, ToolStatus::Ok, "{out:#?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(left.is_empty(), "the child outlived the call: {left:?}");
}

#[tokio::test]
async fn memory_and_cpu_are_limited() {
    let source = "def hog():\n    block = bytearray(1 << 30)\n    return len(block)\n";
    let out = runner().run(&call(source, "hog", json!({}))).await;
    assert_eq!(
        (out.status, out.message.as_str()),
        (ToolStatus::Failed, "MemoryError")
    );

    let runner = runner().with_limits(Limits {
        cpu_seconds: Some(1),
        ..Limits::default()
    });
    let started = std::time::Instant::now();
    let out = runner
        .run(&call(
            "def spin():\n    while True:\n        pass\n",
            "spin",
            json!({}),
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.message.contains("CPU time"), "{}", out.message);
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn without_a_sandbox_a_tool_runs_only_when_allowed_unsandboxed() {
    let runner = runner().with_sandbox(engram_sandbox_probe_missing());
    let source = "def hello():\n    return 'hi'\n";
    let out: ToolOutcome = runner.run(&call(source, "hello", json!({}))).await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.message.contains("no sandbox is available"),
        "{}",
        out.message
    );
    assert!(out.message.contains("not installed"), "{}", out.message);
    assert!(
        out.message
            .contains("engram tool set hello --unsandboxed on"),
        "{}",
        out.message
    );
    let mut allowed = call(source, "hello", json!({}));
    allowed.allow_unsandboxed = true;
    let out = runner.run(&allowed).await;
    assert_eq!((out.status, out.message.as_str()), (ToolStatus::Ok, "hi"));
    // Reading a schema runs no tool code, so it works without a sandbox too.
    let schema = runner.schema(source, None).await.unwrap();
    assert_eq!(schema.name, "hello");
}

fn engram_sandbox_probe_missing() -> Result<engram_sandbox::Sandbox, engram_sandbox::Unavailable> {
    engram_sandbox::Sandbox::probe("/nonexistent/engram-test/bwrap".as_ref())
}

#[tokio::test]
async fn the_bridge_reaches_engrams_local_api_with_the_network_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("api.sock");
    let server = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = server.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let body = json!({"saw": head.lines().next().unwrap_or_default()}).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    let source = r#"
import json, urllib.request
def tasks():
    return json.loads(urllib.request.urlopen("http://127.0.0.1:8283/v1/agents/", timeout=10).read())
"#;
    let mut c = call(source, "tasks", json!({}));
    c.bridge = Some(Bridge { socket, port: 8283 });
    let v = json_of(&runner(), &c).await;
    assert_eq!(v, json!({"saw": "GET /v1/agents/ HTTP/1.1"}));
}

#[tokio::test]
async fn packages_of_the_chosen_python_import_in_the_sandbox() {
    // A virtualenv with a package of its own, as a user's letta_client would be installed.
    let venv = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(venv.path())
        .status()
        .unwrap();
    assert!(made.success());
    let site = std::process::Command::new(venv.path().join("bin/python"))
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .unwrap();
    let site = std::path::PathBuf::from(String::from_utf8(site.stdout).unwrap().trim());
    std::fs::create_dir_all(site.join("engram_probe_pkg")).unwrap();
    std::fs::write(
        site.join("engram_probe_pkg/__init__.py"),
        "GREETING = 'imported from the venv'\n",
    )
    .unwrap();
    let runner = PythonRunner::discover_at(venv.path().join("bin/python")).unwrap();
    let source =
        "def greet():\n    import engram_probe_pkg\n    return engram_probe_pkg.GREETING\n";
    let out = runner.run(&call(source, "greet", json!({}))).await;
    assert_eq!(
        (out.status, out.message.as_str()),
        (ToolStatus::Ok, "imported from the venv"),
        "{out:#?}"
    );
}
