//! Listing a provider's models (`GET {base}/models`), for "test connection" and the model picker.

use crate::transport::Transport;
use crate::types::{ModelInfo, ProviderConfig, ProviderError, ProviderKind};
use serde_json::Value;

/// Fields in which servers state a model's context window, in tokens: OpenRouter
/// (`context_length`), LM Studio (`max_context_length`), vLLM (`max_model_len`), Anthropic
/// (`max_input_tokens`), llama.cpp (`meta.n_ctx_train`), others (`context_window`).
const CONTEXT_FIELDS: &[&str] = &[
    "/context_window",
    "/context_length",
    "/max_context_length",
    "/max_model_len",
    "/max_input_tokens",
    "/meta/n_ctx_train",
];

/// Anthropic pages its list; this many per page (its maximum).
const ANTHROPIC_PAGE: u32 = 1000;

/// The models `config`'s provider offers, in the server's order. Doubles as a connection test:
/// a wrong key fails with `Auth`, a stopped server with `Unreachable`.
pub async fn list_models(config: &ProviderConfig) -> Result<Vec<ModelInfo>, ProviderError> {
    let transport = Transport::new(config)?;
    let bad = |what: String| transport.ctx.bad_response(&what);
    match config.kind {
        ProviderKind::OpenAi => parse_models(&transport.get_json("models").await?).map_err(bad),
        ProviderKind::Anthropic => {
            let mut models = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let path = match &after {
                    None => format!("models?limit={ANTHROPIC_PAGE}"),
                    Some(id) => format!(
                        "models?limit={ANTHROPIC_PAGE}&after_id={}",
                        percent_encode(id)
                    ),
                };
                let page = transport.get_json(&path).await?;
                let listed = parse_models(&page).map_err(bad)?;
                let more = page
                    .get("has_more")
                    .and_then(|m| m.as_bool())
                    .unwrap_or(false);
                let last = page
                    .get("last_id")
                    .and_then(|l| l.as_str())
                    .map(str::to_owned);
                let empty = listed.is_empty();
                models.extend(listed);
                match last {
                    Some(id) if more && !empty && after.as_deref() != Some(id.as_str()) => {
                        after = Some(id)
                    }
                    _ => break,
                }
            }
            Ok(models)
        }
    }
}

/// `{"data": [{"id", …}]}` (both APIs); a bare array is taken too (some local servers).
pub(crate) fn parse_models(answer: &Value) -> Result<Vec<ModelInfo>, String> {
    let data = answer
        .get("data")
        .or_else(|| answer.get("models"))
        .unwrap_or(answer)
        .as_array()
        .ok_or("no `data` array in the model list")?;
    Ok(data
        .iter()
        .filter_map(|m| {
            let id = m.get("id").and_then(|i| i.as_str())?.to_owned();
            let context_window = CONTEXT_FIELDS
                .iter()
                .find_map(|f| m.pointer(f).and_then(|v| v.as_u64()))
                .and_then(|n| u32::try_from(n).ok());
            Some(ModelInfo { id, context_window })
        })
        .collect())
}

/// `s` safe for a query value (RFC 3986 unreserved characters kept).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn context_windows_are_read_where_servers_put_them() {
        let models = parse_models(&json!({"data": [
            {"id": "a", "context_length": 8192},
            {"id": "b", "max_model_len": 4096},
            {"id": "c", "meta": {"n_ctx_train": 2048}},
            {"id": "d"},
            {"object": "no id"},
        ]}))
        .unwrap();
        let got: Vec<_> = models
            .iter()
            .map(|m| (m.id.as_str(), m.context_window))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Some(8192)),
                ("b", Some(4096)),
                ("c", Some(2048)),
                ("d", None)
            ]
        );
        assert!(parse_models(&json!({"x": 1})).is_err());
        assert_eq!(percent_encode("claude 3/x"), "claude%203%2Fx");
    }
}
