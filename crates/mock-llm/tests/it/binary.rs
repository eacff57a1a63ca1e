//! The `mock-llm` binary: startup line, port file, control endpoints.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::common::*;
use serde_json::{Value, json};

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_serves_queue_script_with_control_endpoints() {
    let dir = std::env::temp_dir().join(format!("mock-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port_file = dir.join("port");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mock-llm"))
        .args(["--port", "0", "--script", "queue", "--print-port-file"])
        .arg(&port_file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Kill(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("bad first line {line:?}"))
        .to_string();
    let port: u16 = std::fs::read_to_string(&port_file)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(base, format!("http://127.0.0.1:{port}/v1"));
    let root = base.trim_end_matches("/v1");

    let queued: Value = post(root, "/_mock/push", &json!([
        {"type": "tool_calls", "calls": [{"name": "send_message", "arguments": {"message": "hi"}}, {"name": "x", "arguments": "{bad", "id": "c9"}]},
        {"type": "error", "status": 429, "body": {"error": {"message": "slow down"}}, "retry_after": 3},
    ]))
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(queued["queued"], 2);
    let v: Value = chat_json(&base, &simple_body(false)).await;
    let calls = &v["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls[0]["function"]["arguments"], "{\"message\":\"hi\"}");
    assert_eq!(calls[1]["function"]["arguments"], "{bad");
    assert_eq!(calls[1]["id"], "c9");
    let res = post(&base, "/chat/completions", &simple_body(false)).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "3");
    let v: Value = chat_json(&base, &simple_body(false)).await;
    assert_eq!(v["choices"][0]["message"]["content"], "ok");
    assert_eq!(
        post(root, "/_mock/push", &json!({"type": "nonsense"}))
            .await
            .status(),
        400
    );

    let requests: Value = client()
        .get(format!("{root}/_mock/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(requests.as_array().unwrap().len(), 3);
    assert_eq!(requests[0]["authorization"], "Bearer sk-test");
    let violations: Value = client()
        .get(format!("{root}/_mock/violations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(violations, json!([]));
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
}
