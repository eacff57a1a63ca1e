//! The first-use download against a local HTTP server serving model files.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use engram_embed::catalog::{LocalModelSpec, ModelFile};
use engram_embed::fetch::{self, FetchError};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Served {
    files: HashMap<String, Vec<u8>>,
    /// Requests whose body breaks off halfway (the first N requests of `model.safetensors`).
    break_first: AtomicUsize,
    /// Whether `Range` is honoured.
    ranges: bool,
    /// `Range` headers seen, in order.
    seen_ranges: Mutex<Vec<Option<String>>>,
    /// Every request, for files served or not.
    requests: AtomicUsize,
}

async fn serve_file(
    State(s): State<Arc<Served>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    s.requests.fetch_add(1, Ordering::SeqCst);
    let Some(bytes) = s.files.get(&name).cloned() else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap();
    };
    let range = headers
        .get(header::RANGE)
        .map(|v| v.to_str().unwrap().to_owned());
    s.seen_ranges.lock().unwrap().push(range.clone());
    let start = match (&range, s.ranges) {
        (Some(r), true) => r
            .trim_start_matches("bytes=")
            .trim_end_matches('-')
            .parse::<usize>()
            .unwrap(),
        _ => 0,
    };
    let body = bytes[start..].to_vec();
    let status = if start > 0 {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let len = body.len();
    let breaks = name == "model.safetensors"
        && s.break_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
    let stream_body = if breaks {
        // Half the bytes, then the connection fails: the client sees a short body.
        let half = body[..len / 2].to_vec();
        // The pause lets the first half reach the client before the connection breaks.
        let fail = futures::stream::once(async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            Err(std::io::Error::other("pulled the plug"))
        });
        Body::from_stream(futures::stream::iter([Ok::<_, std::io::Error>(half)]).chain(fail))
    } else {
        Body::from(body)
    };
    Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, len)
        .body(stream_body)
        .unwrap()
}

fn sha(bytes: &[u8]) -> &'static str {
    let d = Sha256::digest(bytes);
    Box::leak(
        d.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
            .into_boxed_str(),
    )
}

/// Three files standing in for a model; the big one is 300 kB of varied bytes.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    vec![
        ("config.json", b"{\"hidden_size\": 4}".to_vec()),
        ("tokenizer.json", b"{\"tokens\": []}".to_vec()),
        ("model.safetensors", big),
    ]
}

fn spec_for(files: &[(&'static str, Vec<u8>)], tamper: bool) -> &'static LocalModelSpec {
    let f = |i: usize| {
        let (name, bytes) = &files[i];
        ModelFile {
            name,
            bytes: bytes.len() as u64,
            sha256: if tamper && i == 2 {
                sha(b"other")
            } else {
                sha(bytes)
            },
        }
    };
    Box::leak(Box::new(LocalModelSpec {
        name: "test-model",
        base_url: "unused",
        dimension: 4,
        files: [f(0), f(1), f(2)],
    }))
}

async fn start(served: Served) -> (String, Arc<Served>) {
    let served = Arc::new(served);
    let app = axum::Router::new()
        .route("/m/{name}", axum::routing::get(serve_file))
        .with_state(served.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/m"), served)
}

fn served(ranges: bool, break_first: usize) -> Served {
    Served {
        files: files()
            .into_iter()
            .map(|(n, b)| (n.to_owned(), b))
            .collect(),
        break_first: AtomicUsize::new(break_first),
        ranges,
        ..Default::default()
    }
}

#[tokio::test]
async fn files_arrive_verified_with_progress_up_to_the_total() {
    let files = files();
    let spec = spec_for(&files, false);
    let (base, _) = start(served(true, 0)).await;
    let dir = tempfile::tempdir().unwrap();
    let seen = Mutex::new(Vec::new());
    fetch::fetch(spec, &base, dir.path(), &|p| seen.lock().unwrap().push(p))
        .await
        .unwrap();
    for (name, bytes) in &files {
        assert_eq!(&std::fs::read(dir.path().join(name)).unwrap(), bytes);
    }
    let seen = seen.into_inner().unwrap();
    let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    assert!(
        seen.windows(2).all(|w| w[0].done <= w[1].done),
        "progress went back"
    );
    assert_eq!(seen.last().unwrap().done, total);
    assert!(seen.iter().all(|p| p.total == total));
    assert!(fetch::is_complete(spec, dir.path()));
}

#[tokio::test]
async fn a_checksum_mismatch_is_refused_and_nothing_is_kept() {
    let files = files();
    let spec = spec_for(&files, true);
    let (base, _) = start(served(true, 0)).await;
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            FetchError::Checksum {
                file: "model.safetensors",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(!dir.path().join("model.safetensors").exists());
    assert!(!dir.path().join("model.safetensors.part").exists());
    assert!(!fetch::is_complete(spec, dir.path()));
}

#[tokio::test]
async fn an_interrupted_download_resumes_where_it_stopped() {
    let files = files();
    let spec = spec_for(&files, false);
    let (base, server) = start(served(true, 1)).await;
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Transfer { .. }), "{err}");
    assert!(
        !dir.path().join("model.safetensors").exists(),
        "an unverified file got its final name"
    );
    let part = std::fs::metadata(dir.path().join("model.safetensors.part"))
        .unwrap()
        .len();
    assert!(part > 0, "nothing kept to resume from");
    fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("model.safetensors")).unwrap(),
        files[2].1
    );
    let ranges = server.seen_ranges.lock().unwrap().clone();
    assert_eq!(ranges.last().unwrap(), &Some(format!("bytes={part}-")));
}

#[tokio::test]
async fn a_server_that_ignores_ranges_gets_a_clean_restart() {
    let files = files();
    let spec = spec_for(&files, false);
    let (base, _) = start(served(false, 1)).await;
    let dir = tempfile::tempdir().unwrap();
    fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap_err();
    fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("model.safetensors")).unwrap(),
        files[2].1
    );
}

#[tokio::test]
async fn a_server_sending_more_than_the_pinned_size_is_cut_off() {
    let files = files();
    let spec = spec_for(&files, false);
    // The server's weights are twice as long as the pinned file.
    let mut s = served(true, 0);
    let doubled = [files[2].1.clone(), files[2].1.clone()].concat();
    s.files.insert("model.safetensors".into(), doubled);
    let (base, _) = start(s).await;
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::fetch(spec, &base, dir.path(), &|_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Transfer { .. }), "{err}");
    assert!(err.to_string().contains("more than"), "{err}");
    assert!(!dir.path().join("model.safetensors").exists());
    assert!(!dir.path().join("model.safetensors.part").exists());
}

/// An offline machine: the download is refused. A hundred uses of the model (a bulk import of
/// passages) make one attempt, answered from memory after it; a retry by hand tries again.
#[tokio::test]
async fn a_refused_download_is_tried_once_then_backs_off() {
    let refused = Served::default();
    let (url, served) = start(refused).await;
    let cache = tempfile::tempdir().unwrap();
    let model = engram_embed::LocalEmbeddings::new(
        spec_for(&files(), false),
        engram_embed::WeightsSource::Download {
            cache_dir: cache.path().join("test-model"),
            base_url: url,
        },
        std::time::Duration::from_secs(300),
        None,
    );
    for _ in 0..100 {
        assert!(model.encoder().await.is_err());
    }
    let attempts = served.requests.load(Ordering::SeqCst);
    assert_eq!(attempts, 1, "the download was tried {attempts} times");
    model.unload();
    assert!(model.encoder().await.is_err());
    let again = served.requests.load(Ordering::SeqCst);
    assert!(again > attempts, "a retry by hand tries again");
}
