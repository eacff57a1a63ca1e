//! Downloads of the real SmolLM2 GGUF (`ENGRAM_TEST_GGUF`, fetched by `.ci/fetch-llm.sh`) from a
//! local HTTP server shaped like Hugging Face: `/resolve/…` answers with a redirect carrying
//! `X-Linked-Etag`, the file itself is served with `Range` support, and the server can break
//! off, slow down or serve damaged bytes.

use super::*;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap as Headers, StatusCode as Status, header};
use axum::response::Response;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The test GGUF's bytes and SHA-256, read once.
fn gguf() -> &'static (Arc<Vec<u8>>, String) {
    static GGUF: OnceLock<(Arc<Vec<u8>>, String)> = OnceLock::new();
    GGUF.get_or_init(|| {
        let path = std::env::var("ENGRAM_TEST_GGUF").unwrap_or_else(|_| {
            panic!("ENGRAM_TEST_GGUF is not set: run `bash .ci/fetch-llm.sh` and export its output (tests/run.sh does)")
        });
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let digest = hex(&Sha256::digest(&bytes));
        (Arc::new(bytes), digest)
    })
}

#[derive(Default)]
struct Hub {
    /// Whether the redirect states the file's digest.
    etag: bool,
    /// Requests of the file whose body breaks off after this many bytes (one each).
    break_after: Mutex<Vec<usize>>,
    /// Bytes per 10 ms once set (0: as fast as it goes).
    throttle: AtomicUsize,
    /// Serve the file with one byte changed.
    corrupt: AtomicBool,
    /// `Range` headers of file requests, in order.
    ranges: Mutex<Vec<Option<String>>>,
    /// Bytes of file bodies sent.
    sent: AtomicU64,
    /// Whether any request carried credentials.
    saw_auth: AtomicBool,
}

async fn resolve(State(hub): State<Arc<Hub>>, headers: Headers) -> Response {
    note_auth(&hub, &headers);
    let (bytes, digest) = gguf();
    let mut r = Response::builder()
        .status(Status::FOUND)
        .header(header::LOCATION, "/cdn/model.gguf")
        .header(LINKED_SIZE, bytes.len());
    if hub.etag {
        r = r.header(LINKED_ETAG, format!("\"{digest}\""));
    }
    r.body(Body::empty()).unwrap()
}

fn note_auth(hub: &Hub, headers: &Headers) {
    if headers.contains_key(header::AUTHORIZATION) || headers.contains_key(header::COOKIE) {
        hub.saw_auth.store(true, Ordering::SeqCst);
    }
}

async fn file(State(hub): State<Arc<Hub>>, headers: Headers) -> Response {
    note_auth(&hub, &headers);
    let (bytes, _) = gguf();
    let range = headers
        .get(header::RANGE)
        .map(|v| v.to_str().unwrap().to_owned());
    hub.ranges.lock().unwrap().push(range.clone());
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok())
        .unwrap_or(0);
    if start >= bytes.len() {
        return Response::builder()
            .status(Status::RANGE_NOT_SATISFIABLE)
            .body(Body::empty())
            .unwrap();
    }
    let len = bytes.len() - start;
    let cut = {
        let mut b = hub.break_after.lock().unwrap();
        (!b.is_empty()).then(|| b.remove(0))
    };
    let corrupt = hub.corrupt.load(Ordering::SeqCst);
    let hub2 = hub.clone();
    let bytes = bytes.clone();
    let chunks = async_stream(bytes, start, cut, corrupt, hub2);
    let mut r = Response::builder()
        .header(header::CONTENT_LENGTH, len)
        .header(header::ACCEPT_RANGES, "bytes");
    r = if start > 0 {
        r.status(Status::PARTIAL_CONTENT).header(
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{}", start + len - 1, start + len),
        )
    } else {
        r.status(Status::OK)
    };
    r.body(Body::from_stream(chunks)).unwrap()
}

/// The body from `start`, 64 kB at a time, throttled, damaged or broken off as the hub says.
fn async_stream(
    bytes: Arc<Vec<u8>>,
    start: usize,
    cut: Option<usize>,
    corrupt: bool,
    hub: Arc<Hub>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::unfold(start, move |at| {
        let bytes = bytes.clone();
        let hub = hub.clone();
        async move {
            if at >= bytes.len() {
                return None;
            }
            if cut.is_some_and(|c| at - start >= c) {
                // Let what was sent reach the client before the connection breaks.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Some((Err(std::io::Error::other("pulled the plug")), usize::MAX));
            }
            let throttle = hub.throttle.load(Ordering::SeqCst);
            let step = if throttle > 0 { throttle } else { 1 << 16 };
            let end = (at + step).min(bytes.len());
            let end = cut.map_or(end, |c| end.min(start + c));
            if throttle > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let mut chunk = bytes[at..end].to_vec();
            if corrupt && at <= 1000 && 1000 < end {
                chunk[1000 - at] ^= 0xff;
            }
            hub.sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            Some((Ok(chunk), end))
        }
    })
}

async fn start(hub: Hub) -> (String, Arc<Hub>) {
    let hub = Arc::new(hub);
    let app = axum::Router::new()
        .route(
            "/org/model/resolve/main/model.gguf",
            axum::routing::get(resolve),
        )
        .route("/cdn/model.gguf", axum::routing::get(file))
        .with_state(hub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), hub)
}

fn hub_url(base: &str) -> String {
    format!("{base}/org/model/resolve/main/model.gguf")
}

fn target(dir: &Path, url: String, sha256: Expected) -> Target {
    Target {
        url,
        dest: dir.join("model.gguf"),
        bytes: None,
        sha256,
    }
}

#[tokio::test]
async fn the_digest_the_hub_serves_is_checked_and_the_file_lands_private() {
    let (base, hub) = start(Hub {
        etag: true,
        ..Hub::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), hub_url(&base), Expected::Served);
    let seen = Mutex::new(Vec::new());
    let got = download(
        &client().unwrap(),
        &t,
        &|n, total| seen.lock().unwrap().push((n, total)),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let (bytes, digest) = gguf();
    assert_eq!(got.sha256, *digest);
    assert_eq!(got.bytes, bytes.len() as u64);
    assert_eq!(sha256_file(&t.dest).await.unwrap().0, *digest);
    assert!(!part_path(&t.dest).exists());
    let seen = seen.into_inner().unwrap();
    assert!(
        seen.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress went back"
    );
    assert!(
        seen.iter().all(|(_, t)| *t == Some(bytes.len() as u64)),
        "the total comes from X-Linked-Size"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&t.dest).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the model file is the user's only");
    }
    assert!(
        !hub.saw_auth.load(Ordering::SeqCst),
        "credentials were sent"
    );
}

#[tokio::test]
async fn a_file_without_a_digest_is_refused_before_anything_is_written() {
    let (base, hub) = start(Hub::default()).await;
    let dir = tempfile::tempdir().unwrap();
    for url in [hub_url(&base), format!("{base}/cdn/model.gguf")] {
        let t = target(dir.path(), url, Expected::Served);
        let err = download(
            &client().unwrap(),
            &t,
            &|_, _| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, DownloadError::NoDigest { .. }), "{err}");
        assert!(err.to_string().contains("X-Linked-Etag"), "{err}");
        assert!(!t.dest.exists() && !part_path(&t.dest).exists());
    }
    assert!(
        hub.sent.load(Ordering::SeqCst) < gguf().0.len() as u64 / 2,
        "the body was not read on"
    );
}

#[tokio::test]
async fn a_damaged_file_is_refused_and_deleted() {
    let (base, hub) = start(Hub {
        etag: true,
        ..Hub::default()
    })
    .await;
    hub.corrupt.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    // Against the served digest and against a pinned one alike.
    for expected in [Expected::Served, Expected::Pinned(gguf().1.clone())] {
        let t = target(dir.path(), hub_url(&base), expected);
        let err = download(
            &client().unwrap(),
            &t,
            &|_, _| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        match &err {
            DownloadError::Checksum { expected, got, .. } => {
                assert_eq!(expected, &gguf().1);
                assert_ne!(got, expected);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("deleted"), "{err}");
        assert!(!t.dest.exists() && !part_path(&t.dest).exists());
    }
}

#[tokio::test]
async fn an_interrupted_download_resumes_with_a_range_request() {
    let (base, hub) = start(Hub {
        etag: true,
        break_after: Mutex::new(vec![40_000_000]),
        ..Hub::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), hub_url(&base), Expected::Served);
    let err = download(
        &client().unwrap(),
        &t,
        &|_, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, DownloadError::Transfer { .. }), "{err}");
    assert!(!t.dest.exists(), "an unverified file got its final name");
    let kept = std::fs::metadata(part_path(&t.dest)).unwrap().len();
    assert!(kept > 0 && kept <= 40_000_000, "kept {kept} bytes");
    let got = download(
        &client().unwrap(),
        &t,
        &|_, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(got.sha256, gguf().1);
    assert_eq!(
        hub.ranges.lock().unwrap().last().unwrap(),
        &Some(format!("bytes={kept}-"))
    );
    let total = gguf().0.len() as u64;
    assert!(
        hub.sent.load(Ordering::SeqCst) < total + 1_000_000,
        "the second request sent only the rest"
    );
}

#[tokio::test]
async fn a_cancelled_download_keeps_its_part_and_resumes() {
    let (base, hub) = start(Hub {
        etag: true,
        ..Hub::default()
    })
    .await;
    // 64 kB per 10 ms: about 6 MB/s, slow enough to cancel halfway.
    hub.throttle.store(1 << 16, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), hub_url(&base), Expected::Served);
    let cancel = CancellationToken::new();
    let err = download(
        &client().unwrap(),
        &t,
        &|n, _| {
            if n > 2_000_000 {
                cancel.cancel();
            }
        },
        &cancel,
    )
    .await
    .unwrap_err();
    let DownloadError::Cancelled { have, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(std::fs::metadata(part_path(&t.dest)).unwrap().len(), have);
    assert!(!t.dest.exists());
    hub.throttle.store(0, Ordering::SeqCst);
    let got = download(
        &client().unwrap(),
        &t,
        &|_, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(got.sha256, gguf().1);
    assert_eq!(
        hub.ranges.lock().unwrap().last().unwrap(),
        &Some(format!("bytes={have}-"))
    );
}

#[tokio::test]
async fn a_complete_part_is_verified_without_fetching_again() {
    let (base, hub) = start(Hub {
        etag: true,
        ..Hub::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), hub_url(&base), Expected::Served);
    std::fs::write(part_path(&t.dest), gguf().0.as_slice()).unwrap();
    let got = download(
        &client().unwrap(),
        &t,
        &|_, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(got.sha256, gguf().1);
    assert_eq!(hub.sent.load(Ordering::SeqCst), 0);
}

#[test]
fn served_digests_are_sha256_only() {
    let mut h = HeaderMap::new();
    let d = "B179C9523D0E6A0F98A330C7562B682750A6F8C8C15E5BC70EA373728110DB53";
    h.insert(LINKED_ETAG, format!("W/\"{d}\"").parse().unwrap());
    assert_eq!(served_sha256(&h), Some(d.to_lowercase()));
    // A Git blob id (SHA-1) of a file outside LFS is no SHA-256.
    h.insert(
        LINKED_ETAG,
        "\"0123456789abcdef0123456789abcdef01234567\""
            .parse()
            .unwrap(),
    );
    assert_eq!(served_sha256(&h), None);
    assert_eq!(served_sha256(&HeaderMap::new()), None);
}
