//! Setting up the tools' Python runs pip, and pip runs the install code of what it installs
//! with the user's rights: a server without a token (`--no-auth`, reachable by every local
//! program) refuses it, and a requirement can never be a pip option (`--index-url`, `-e URL`).
//! Real REST server on 127.0.0.1, real data directory.

use engram_server::{Auth, ServerConfig};
use engram_service::TOOL_VENV_DIR;
use engram_suite::Home;
use serde_json::{Value, json};

#[tokio::test]
async fn a_server_without_a_token_does_not_set_up_python() {
    let home = Home::new();
    let venv = home.path().join(TOOL_VENV_DIR);
    let Home { dir, engram } = home;
    let base = engram_suite::serve(engram, ServerConfig::new(Auth::Disabled)).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/app/set_up_tool_python"))
        .json(&json!({"requirement": "letta-client"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body.to_string().contains("needs the API token"), "{body}");
    assert!(!venv.exists(), "nothing was created");
    drop(dir);
}

#[test]
fn a_requirement_cannot_be_a_pip_option() {
    let home = Home::new();
    for bad in [
        "--index-url=https://packages.example/simple",
        "-e git+https://example.com/x.git",
        " -r /etc/requirements.txt",
        "  ",
    ] {
        let err = home
            .engram
            .tools()
            .set_up_python(Some(bad), &mut |_| {})
            .unwrap_err();
        assert!(
            matches!(err, engram_core::Error::Invalid(_)),
            "{bad}: {err:?}"
        );
    }
    assert!(
        !home.path().join(TOOL_VENV_DIR).exists(),
        "nothing was created"
    );
}
