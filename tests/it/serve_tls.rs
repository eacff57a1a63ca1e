//! `engram serve` over HTTPS, as a real process: a self-signed certificate kept in the data
//! directory (the same fingerprint after a restart), clients that pin it get through with the
//! token and others do not, plain HTTP to the port gets nothing, and listening beyond loopback
//! needs TLS, the token and the names clients use — requests naming another host are refused.

use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Stdio};

/// A running `engram serve` and what it printed.
struct Https {
    child: Child,
    port: u16,
    fingerprint: String,
    token: String,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(home: &Path, args: &[&str]) -> Https {
    let mut child = engram_suite::cli_command(home)
        .args(["serve", "--port", "0", "--show-token"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = |prefix: &str| {
        let line = lines.next().expect("engram serve exited early").unwrap();
        line.strip_prefix(prefix)
            .unwrap_or_else(|| panic!("expected {prefix:?}, got {line:?}"))
            .to_owned()
    };
    let addr = next("listening on https://");
    let fingerprint = next("certificate sha256: ");
    let token = next("token: ");
    let port = addr.rsplit(':').next().unwrap().parse().unwrap();
    Https {
        child,
        port,
        fingerprint,
        token,
    }
}

/// The certificate `engram serve` made, as PEM, and its SHA-256 as `AB:CD:…`.
fn made_certificate(home: &Path) -> (Vec<u8>, String) {
    let pem = std::fs::read(home.join("tls/cert.pem")).unwrap();
    let text = String::from_utf8(pem.clone()).unwrap();
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    let hex: Vec<String> = Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    (pem, hex.join(":"))
}

/// A client that trusts exactly `pem`, reaching `names` at 127.0.0.1:`port`.
fn pinned(pem: &[u8], names: &[&str], port: u16) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(pem).unwrap()])
        .no_proxy();
    for name in names {
        builder = builder.resolve(name, ([127, 0, 0, 1], port).into());
    }
    builder.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_pinned_self_signed_certificate() {
    let home = tempfile::tempdir().unwrap();
    let server = serve(home.path(), &["--tls-self-signed"]);
    let (pem, fingerprint) = made_certificate(home.path());
    assert_eq!(server.fingerprint, fingerprint);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(home.path().join("tls/key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is the user's alone: {mode:o}");
    }

    let url = format!("https://localhost:{}/v1/agents/", server.port);
    let client = pinned(&pem, &[], server.port);
    let ok = client
        .get(&url)
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.json::<serde_json::Value>().await.unwrap(),
        serde_json::json!([])
    );
    let no_token = client.get(&url).send().await.unwrap();
    assert_eq!(no_token.status(), 401);

    // A client trusting the usual authorities does not get through.
    let stranger = reqwest::Client::builder().no_proxy().build().unwrap();
    let refused = stranger.get(&url).bearer_auth(&server.token).send().await;
    assert!(refused.is_err(), "{refused:?}");

    // Plain HTTP to the port: no HTTP answer.
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    tcp.write_all(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );

    // The pair is kept: the same fingerprint after a restart.
    drop(server);
    let again = serve(home.path(), &["--tls-self-signed"]);
    assert_eq!(again.fingerprint, fingerprint);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_loopback_only_with_tls_the_token_and_the_names_clients_use() {
    let home = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], why: &str| {
        let out = engram_suite::cli_command(home.path())
            .args(["serve", "--port", "0"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    };
    refused(&["--host", "0.0.0.0"], "--tls-self-signed");
    refused(&["--name", "engram.test"], "--name is for serving over TLS");
    refused(&["--host", "0.0.0.0", "--tls-self-signed"], "--name");
    refused(
        &[
            "--host",
            "0.0.0.0",
            "--tls-self-signed",
            "--name",
            "engram.test",
            "--no-auth",
        ],
        "--no-auth",
    );
    assert!(
        !home.path().join("tls").exists(),
        "no certificate made for a refused start"
    );

    let server = serve(
        home.path(),
        &[
            "--host",
            "0.0.0.0",
            "--tls-self-signed",
            "--name",
            "engram.test",
        ],
    );
    let (pem, _) = made_certificate(home.path());
    let client = pinned(&pem, &["engram.test"], server.port);
    let by_name = client
        .get(format!("https://engram.test:{}/v1/agents/", server.port))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(by_name.status(), 200);
    let page = client
        .get(format!("https://engram.test:{}/v1/agents/", server.port))
        .bearer_auth(&server.token)
        .header("Origin", format!("https://engram.test:{}", server.port))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "a page served under the name");

    // Another name pointed at the server (DNS rebinding) is refused before the token counts.
    let any_cert = reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .resolve("evil.example", ([127, 0, 0, 1], server.port).into())
        .no_proxy()
        .build()
        .unwrap();
    let rebound = any_cert
        .get(format!("https://evil.example:{}/v1/agents/", server.port))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let body = rebound.text().await.unwrap();
    assert!(body.contains("engram.test"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_hold_up_no_more_than_the_handshake_cap() {
    use engram_server::tls::{TlsIdentity, TlsListener};
    let home = tempfile::tempdir().unwrap();
    let identity =
        TlsIdentity::self_signed(&home.path().join("tls"), &["localhost".to_owned()]).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let listener = TlsListener::new(tcp, &identity).with_max_handshakes(2);
    let engram = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    let config = engram_server::ServerConfig::new(engram_server::Auth::Disabled);
    tokio::spawn(engram_server::serve_tls(
        listener,
        engram,
        config,
        std::future::pending(),
    ));
    let (pem, _) = made_certificate(home.path());
    let client = pinned(&pem, &[], port);
    let url = format!("https://localhost:{port}/v1/health");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);

    // Two connections that never say a word take both handshake slots: a real client waits.
    let silent: Vec<_> = (0..2)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut waiting = tokio::spawn({
        // A new client: the first one would reuse its kept-alive connection.
        let (client, url) = (pinned(&pem, &[], port), url.clone());
        async move { client.get(&url).send().await.map(|r| r.status()) }
    });
    let early = tokio::time::timeout(std::time::Duration::from_secs(1), &mut waiting).await;
    assert!(
        early.is_err(),
        "answered while the slots were taken: {early:?}"
    );

    // They go away: the waiting client is served (well before the handshake deadline).
    drop(silent);
    let status = tokio::time::timeout(std::time::Duration::from_secs(8), waiting)
        .await
        .expect("served once the slots were free")
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
}
