//! Servers on this machine are reached directly, whatever proxy the environment names: reqwest
//! takes `HTTP_PROXY`/`ALL_PROXY` without exempting loopback, so a conversation meant for a
//! local model server (or an MCP server's requests, with their token) would go to the proxy. The real
//! `engram` binary with proxy variables set, the scripted model and the `mock-mcp` HTTP server
//! on 127.0.0.1, and a "proxy" that records whatever reaches it.

use engram_mock_llm::{MockLlm, Script};
use engram_suite::{cli_agent, cli_command, stdout_ok};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TCP server that records the first bytes of every connection and answers 502.
async fn recording_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                record
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = socket
                    .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// `engram ARGS` with every proxy variable pointing at `proxy`.
fn engram_via(home: &std::path::Path, proxy: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = cli_command(home);
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env(var, proxy);
    }
    cmd.env_remove("NO_PROXY").env_remove("no_proxy");
    cmd.args(args).output().expect("run engram")
}

#[tokio::test(flavor = "multi_thread")]
async fn local_model_and_mcp_servers_are_reached_without_the_environments_proxy() {
    let (proxy, seen) = recording_proxy().await;
    let mock = MockLlm::start(Script::Brain).await;
    let mcp = engram_mcp::mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);

    let out = tokio::task::spawn_blocking({
        let (home, proxy, agent) = (home.path().to_owned(), proxy.clone(), agent.to_string());
        move || {
            engram_via(
                &home,
                &proxy,
                &["chat", &agent, "--message", "my name is Bob"],
            )
        }
    })
    .await
    .unwrap();
    assert!(stdout_ok(&out).contains("Bob"));

    // (The CLI's test keychain lives in one process, so the server is added without a token;
    // what matters is where its requests go.)
    let url = mcp.url();
    let out = tokio::task::spawn_blocking({
        let (home, proxy) = (home.path().to_owned(), proxy.clone());
        move || {
            stdout_ok(&engram_via(
                &home,
                &proxy,
                &["mcp", "add", "web", "--url", &url],
            ));
            engram_via(&home, &proxy, &["mcp", "test", "web"])
        }
    })
    .await
    .unwrap();
    assert!(stdout_ok(&out).contains("web__add"));
    assert!(
        !mcp.seen_authorizations().is_empty(),
        "the server was reached"
    );

    let seen = seen.lock().unwrap();
    assert!(
        seen.is_empty(),
        "the proxy got {} connection(s): {:?}",
        seen.len(),
        seen.first()
    );
}
