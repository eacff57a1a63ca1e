//! Hostile programs in a real room, trying to get out: secrets in the parent's environment and
//! `/proc`, the kernel keyring, the session bus, files outside the scratch dir, the network,
//! processes that try to outlive the room, and more memory or CPU than allowed.

use crate::support;

use engram_sandbox::{Network, Sandbox};
use serde_json::json;
use std::time::Duration;
use support::{is_helper, policy, reexec, run_python, unique};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_canary_in_the_parents_environment_is_nowhere_in_the_room() {
    let canary = unique("sk-canary");
    // A parent with an API key in its environment, as Engram may have.
    let v = reexec("canary_helper", &[], &[("OPENAI_API_KEY", &canary)]);
    assert_eq!(
        v["parent_has_it"],
        json!(true),
        "the helper saw the canary: {v}"
    );
    assert_eq!(v["found"], json!([]), "the canary leaked: {v}");
    assert_eq!(v["env"], json!([]), "{v}");
    assert_eq!(v["parent_visible"], json!(false), "{v}");
    // A PID namespace of its own: bubblewrap's init and the program, nothing of the host.
    let pids: Vec<u32> = serde_json::from_value(v["pids"].clone()).unwrap();
    assert!(
        pids.iter().all(|p| *p < 10),
        "host processes are visible: {pids:?}"
    );
}

#[tokio::test]
#[ignore = "run by a_canary_in_the_parents_environment_is_nowhere_in_the_room"]
async fn canary_helper() {
    if !is_helper("canary_helper") {
        return;
    }
    let canary = std::env::var("OPENAI_API_KEY").unwrap();
    // The canary in two halves, so no command line in the room holds it whole.
    let (a, b) = canary.split_at(canary.len() / 2);
    let script = r#"
import os, sys, json
canary = (sys.argv[1] + sys.argv[2]).encode()
found, pids = [], []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    pids.append(int(pid))
    for part in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (pid, part), "rb") as f:
                if canary in f.read():
                    found.append("/proc/%s/%s" % (pid, part))
        except OSError:
            pass
env_hit = [k for k, v in os.environ.items() if canary.decode() in v]
print(json.dumps({"found": found, "env": env_hit, "pids": sorted(pids),
                  "parent_visible": os.path.exists("/proc/%s" % sys.argv[3])}))
"#;
    let scratch = tempfile::tempdir().unwrap();
    let parent = std::process::id().to_string();
    let ran = run_python(&policy(&scratch), script, &[a, b, &parent], &[], LONG).await;
    let mut v = ran.json();
    v["parent_has_it"] = json!(true);
    println!("ROOM:{v}");
}

#[test]
fn the_session_keyring_of_the_parent_is_out_of_reach() {
    // A parent with a session keyring of its own holding a key, as the kernel keyring store
    // keeps Engram's keys.
    let v = reexec("keyring_helper", &["keyctl", "session", "-"], &[]);
    assert_eq!(
        v["outside"], v["secret"],
        "the parent can read its key: {v}"
    );
    let room = v["room"].to_string();
    let secret = v["secret"].as_str().unwrap();
    assert!(!room.contains(secret), "the key leaked: {room}");
    assert_eq!(v["room"]["syscall"][0], json!(-1), "{v}");
    assert_eq!(
        v["room"]["syscall"][1],
        json!(1),
        "keyctl is refused with EPERM: {v}"
    );
}

#[tokio::test]
#[ignore = "run by the_session_keyring_of_the_parent_is_out_of_reach"]
async fn keyring_helper() {
    if !is_helper("keyring_helper") {
        return;
    }
    let name = unique("engram-canary");
    let secret = unique("secret");
    let added = std::process::Command::new("keyctl")
        .args(["add", "user", &name, &secret, "@s"])
        .output()
        .expect("keyctl (keyutils) is needed for this test");
    assert!(added.status.success(), "{added:?}");
    let id = String::from_utf8(added.stdout).unwrap().trim().to_owned();
    let outside = std::process::Command::new("keyctl")
        .args(["print", &format!("%user:{name}")])
        .output()
        .unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let script = r#"
import ctypes, json, platform, subprocess, sys
name, key_id = sys.argv[1], int(sys.argv[2])
out = {}
for args in (["print", "%user:" + name], ["print", str(key_id)], ["show", "@s"]):
    try:
        p = subprocess.run(["keyctl"] + args, capture_output=True, text=True)
        out[" ".join(args)] = [p.returncode, p.stdout]
    except OSError as e:
        out[" ".join(args)] = [-1, str(e)]
# The system call itself, without the keyctl program: keyctl(KEYCTL_READ = 11, id, buf, len).
nr = {"x86_64": 250, "aarch64": 219, "riscv64": 219}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
n = libc.syscall(nr, 11, key_id, buf, 256)
out["syscall"] = [n, ctypes.get_errno(), buf.raw[:max(n, 0)].decode(errors="replace")]
print(json.dumps(out))
"#;
    let ran = run_python(&policy(&scratch), script, &[&name, &id], &[], LONG).await;
    let v = json!({
        "secret": secret,
        "outside": String::from_utf8_lossy(&outside.stdout).trim(),
        "room": ran.json(),
    });
    println!("ROOM:{v}");
}

#[tokio::test]
async fn the_session_bus_is_unreachable_by_path_and_by_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    // An abstract socket, the kind an old-style DBUS_SESSION_BUS_ADDRESS names.
    let name = unique("engram-bus");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let script = r#"
import json, os, socket, sys
out = {"dbus_env": os.environ.get("DBUS_SESSION_BUS_ADDRESS"),
       "run_user": os.path.exists("/run/user"), "run_dbus": os.path.exists("/run/dbus")}
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + sys.argv[1])
    out["abstract"] = "connected"
except OSError as e:
    out["abstract"] = e.__class__.__name__
print(json.dumps(out))
"#;
    let mut p = policy(&scratch);
    let ran = run_python(&p, script, &[&name], &[], LONG).await;
    let v = ran.json();
    assert_eq!(v["dbus_env"], json!(null), "{v}");
    assert_eq!(v["run_user"], json!(false), "{v}");
    assert_eq!(v["run_dbus"], json!(false), "{v}");
    assert_eq!(v["abstract"], json!("ConnectionRefusedError"), "{v}");

    // With the host's network the abstract namespace is shared: the README says so.
    p.network = Network::Full;
    let ran = run_python(&p, script, &[&name], &[], LONG).await;
    assert_eq!(ran.json()["abstract"], json!("connected"), "{ran:?}");
}

#[tokio::test]
async fn nothing_outside_the_scratch_dir_can_be_written_or_read() {
    let scratch = tempfile::tempdir().unwrap();
    // A directory of the user's that is not the scratch dir.
    let outside = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    // A private file of the user's, in their home directory.
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let private = tempfile::Builder::new()
        .prefix(".engram-private-")
        .tempfile_in(&home)
        .unwrap();
    std::fs::write(private.path(), "private").unwrap();
    let script = r#"
import json, os, sys
out = {}
for target in sys.argv[1:4]:
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write("pwned")
        out[target] = "written"
    except OSError as e:
        out[target] = e.__class__.__name__
for target in ("/etc/passwd", "/etc/shadow", sys.argv[4], "/home"):
    try:
        if os.path.isdir(target):
            os.listdir(target)
        else:
            open(target).read()
        out[target] = "read"
    except OSError as e:
        out[target] = e.__class__.__name__
with open(os.path.join(os.environ["HOME"], "mine.txt"), "w") as f:
    f.write("kept")
out["cwd"] = os.getcwd()
print(json.dumps(out))
"#;
    let in_outside = outside.path().join("pwned.txt");
    let in_home = std::path::Path::new(&home).join(unique(".engram-pwned"));
    let ran = run_python(
        &policy(&scratch),
        script,
        &[
            in_outside.to_str().unwrap(),
            "/usr/engram-pwned",
            in_home.to_str().unwrap(),
            private.path().to_str().unwrap(),
        ],
        &[],
        LONG,
    )
    .await;
    let v = ran.json();
    assert!(!in_outside.exists(), "wrote outside the scratch dir: {v}");
    assert!(!in_home.exists(), "wrote into the home dir: {v}");
    assert!(!std::path::Path::new("/usr/engram-pwned").exists());
    // Not even into the room's own file system (only the scratch dir and /tmp take writes).
    assert_ne!(v["/usr/engram-pwned"], json!("written"), "{v}");
    assert_ne!(v[in_home.to_str().unwrap()], json!("written"), "{v}");
    let private = private.path().to_str().unwrap();
    for secret in ["/etc/passwd", "/etc/shadow", private, "/home"] {
        assert_eq!(v[secret], json!("FileNotFoundError"), "{secret}: {v}");
    }
    assert_eq!(v["cwd"], json!(scratch.path().to_str().unwrap()));
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("mine.txt")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn the_network_is_off_unless_the_policy_says_full() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let scratch = tempfile::tempdir().unwrap();
    let script = r#"
import json, socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print(json.dumps("connected"))
except OSError as e:
    print(json.dumps(e.__class__.__name__))
"#;
    let mut p = policy(&scratch);
    let ran = run_python(&p, script, &[&port], &[], LONG).await;
    assert_eq!(ran.json(), json!("ConnectionRefusedError"), "{ran:?}");
    p.network = Network::Full;
    let ran = run_python(&p, script, &[&port], &[], LONG).await;
    assert_eq!(ran.json(), json!("connected"), "{ran:?}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the host saw the connection");
}

#[tokio::test]
async fn a_detached_child_dies_with_the_room() {
    let scratch = tempfile::tempdir().unwrap();
    // The child leaves its session and process group, then writes a file two seconds later.
    let script = r#"
import json, subprocess, sys
p = subprocess.Popen([sys.executable, "-c",
    "import time; time.sleep(2); open('late.txt', 'w').write('still alive')"],
    start_new_session=True)
print(json.dumps(p.pid))
if sys.argv[1] == "hang":
    import time
    time.sleep(60)
"#;
    // The program returns at once, leaving the child behind.
    let ran = run_python(&policy(&scratch), script, &["return"], &[], LONG).await;
    assert!(ran.status.unwrap().success(), "{ran:?}");
    // The program hangs and is killed at its timeout, like a tool call.
    let ran = run_python(
        &policy(&scratch),
        script,
        &["hang"],
        &[],
        Duration::from_secs(1),
    )
    .await;
    assert!(ran.timed_out, "{ran:?}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        !scratch.path().join("late.txt").exists(),
        "a child outlived the room"
    );
}

#[tokio::test]
async fn memory_and_cpu_are_limited() {
    let scratch = tempfile::tempdir().unwrap();
    let script = r#"
import json, resource
out = {"as": resource.getrlimit(resource.RLIMIT_AS),
       "nproc": resource.getrlimit(resource.RLIMIT_NPROC)}
try:
    block = bytearray(1 << 30)
    out["gib"] = "allocated"
except MemoryError:
    out["gib"] = "MemoryError"
try:
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    out["raise"] = "raised"
except (ValueError, OSError) as e:
    out["raise"] = e.__class__.__name__
print(json.dumps(out))
"#;
    let ran = run_python(&policy(&scratch), script, &[], &[], LONG).await;
    let v = ran.json();
    assert_eq!(v["gib"], json!("MemoryError"), "{v}");
    assert_eq!(v["as"], json!([1u64 << 30, 1u64 << 30]), "{v}");
    assert_eq!(v["nproc"], json!([64, 64]), "{v}");
    assert_eq!(
        v["raise"],
        json!("ValueError"),
        "hard limits cannot be raised: {v}"
    );

    // One CPU second, then SIGXCPU, long before the 30 s wall clock.
    let mut p = policy(&scratch);
    p.limits.cpu_seconds = Some(1);
    let started = std::time::Instant::now();
    let ran = run_python(&p, "while True: pass", &[], &[], LONG).await;
    assert!(!ran.timed_out, "{ran:?}");
    assert!(!ran.status.unwrap().success(), "{ran:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_bridge_reaches_the_local_api_socket_and_nothing_else() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("api.sock");
    let server = tokio::net::UnixListener::bind(&socket).unwrap();
    // A tiny HTTP server on the Unix socket, standing in for Engram's API.
    tokio::spawn(async move {
        loop {
            let (mut conn, _) = server.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("?").to_owned();
                let body = format!("{{\"path\": \"{path}\"}}");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    let outside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let outside_port = outside.local_addr().unwrap().port().to_string();

    let scratch = tempfile::tempdir().unwrap();
    let mut p = policy(&scratch);
    p.bridge = Some(engram_sandbox::Bridge {
        socket: socket.clone(),
        port: 8283,
    });
    let script = format!(
        "{}\n{}",
        engram_sandbox::BRIDGE_PY,
        r#"
import json, socket, sys, urllib.request
port = engram_bridge_start()
out = {"port": port}
out["api"] = json.loads(urllib.request.urlopen("http://127.0.0.1:8283/v1/agents/", timeout=10).read())
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    out["other"] = "connected"
except OSError as e:
    out["other"] = e.__class__.__name__
print(json.dumps(out))
"#
    );
    let ran = run_python(&p, &script, &[&outside_port], &[], LONG).await;
    let v = ran.json();
    assert_eq!(v["port"], json!(8283), "{v}");
    assert_eq!(v["api"], json!({"path": "/v1/agents/"}), "{v}");
    assert_eq!(v["other"], json!("ConnectionRefusedError"), "{v}");
}

#[test]
fn a_missing_bubblewrap_is_reported_with_what_to_do() {
    let err = Sandbox::probe("/nonexistent/engram/bwrap".as_ref()).unwrap_err();
    assert!(err.reason.contains("not installed"), "{}", err.reason);
    assert!(
        err.reason.contains("apt install bubblewrap"),
        "{}",
        err.reason
    );
    // `false` exists but makes no room.
    let err = Sandbox::probe("false".as_ref()).unwrap_err();
    assert!(
        err.reason.contains("could not make a sandbox"),
        "{}",
        err.reason
    );
}

#[test]
fn a_real_session_bus_is_out_of_reach() {
    if std::process::Command::new("dbus-run-session")
        .arg("--version")
        .output()
        .is_err()
    {
        // The abstract-socket and /run/user checks above still run; this one needs a bus.
        eprintln!("dbus-run-session is not installed; skipping the live bus check");
        return;
    }
    // A parent on a live session bus (where the Secret Service would answer).
    let v = reexec("bus_helper", &["dbus-run-session", "--"], &[]);
    assert_eq!(
        v["outside"],
        json!("connected"),
        "the parent reaches its bus: {v}"
    );
    assert_ne!(v["room"]["connect"], json!("connected"), "{v}");
    assert_eq!(v["room"]["env"], json!(null), "{v}");
}

#[tokio::test]
#[ignore = "run by a_real_session_bus_is_out_of_reach"]
async fn bus_helper() {
    if !is_helper("bus_helper") {
        return;
    }
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").unwrap();
    // The same connection attempt outside and inside: parse `unix:path=…` or `unix:abstract=…`.
    let script = r#"
import json, os, socket, sys
def connect(address):
    for part in address.split(";"):
        kv = dict(p.split("=", 1) for p in part.split(":", 1)[1].split(",") if "=" in p)
        target = kv.get("path") or ("\0" + kv["abstract"] if "abstract" in kv else None)
        if target is None:
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(target)
            return "connected"
        except OSError as e:
            return e.__class__.__name__
    return "no usable address"
print(json.dumps({"connect": connect(sys.argv[1]),
                  "env": os.environ.get("DBUS_SESSION_BUS_ADDRESS")}))
"#;
    let (exe, _) = support::python();
    let outside = std::process::Command::new(&exe)
        .args(["-I", "-c", script, &address])
        .output()
        .unwrap();
    let outside: serde_json::Value =
        serde_json::from_slice(&outside.stdout).unwrap_or(json!({"connect": "no output"}));
    let scratch = tempfile::tempdir().unwrap();
    let ran = run_python(&policy(&scratch), script, &[&address], &[], LONG).await;
    let v = json!({"outside": outside["connect"], "room": ran.json(), "address": address});
    println!("ROOM:{v}");
}
