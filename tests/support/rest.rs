//! A client of the REST API served in-process over real HTTP (the real router, a real port on
//! 127.0.0.1) against the scripted model, for the REST tests.

use crate::{open, serve};
use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use std::sync::Arc;

/// The bearer token the served API requires.
pub const TOKEN: &str = "test-token-0123456789";

/// The API on a fresh data directory, the scripted model, and an HTTP client.
pub struct RestApi {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client (send [`TOKEN`] as the bearer token).
    pub http: reqwest::Client,
    /// The scripted model agents made with [`RestApi::agent`] talk to.
    pub mock: MockLlm,
    _dir: tempfile::TempDir,
}

impl RestApi {
    /// Serves the API with [`TOKEN`] required, the model playing `script`.
    pub async fn start(script: Script) -> RestApi {
        let mock = MockLlm::start(script).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let engram = open(dir.path(), Arc::new(MemoryStore::default()));
        let config = ServerConfig::new(Auth::Token(SecretString::from(TOKEN)));
        let base = serve(engram, config).await;
        RestApi {
            base,
            http: reqwest::Client::new(),
            mock,
            _dir: dir,
        }
    }

    /// One request with the token: `(status, JSON body)` (a body that is not JSON comes back as
    /// a JSON string).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.expect("request");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Like [`call`](Self::call), asserting 200 and returning the body.
    pub async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.call(method.clone(), path, body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {v}");
        v
    }

    /// Creates an agent on the scripted model with `blocks` (`{label, value}` objects) and the
    /// other fields of `extra` (e.g. `tags`); returns its id.
    pub async fn agent(&self, name: &str, blocks: Vec<Value>, extra: Value) -> String {
        let mut body = json!({
            "name": name,
            "memory_blocks": blocks,
            "model": "openai/mock-small",
            "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                           "model_endpoint": self.mock.base_url(), "context_window": 32000}
        });
        if let (Some(b), Some(x)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(x.clone());
        }
        let v = self.ok(Method::POST, "/v1/agents/", Some(body)).await;
        v["id"].as_str().expect("agent id").to_owned()
    }
}
