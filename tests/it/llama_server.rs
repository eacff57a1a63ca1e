//! llama.cpp's own `llama-server` (built from source by .ci/fetch-llama-server.sh; tests/run.sh
//! sets `ENGRAM_LLAMA_SERVER`) serving the same GGUF as the built-in model's tests, used the way
//! a user runs a local server: as an OpenAI-compatible provider with no key. Agents of both
//! loop styles hold the ten-message conversation; every message ends with a reply or a clear
//! error in bounded time, and the server's own log shows that no request Engram sent was
//! refused as invalid.

use crate::local_model::{converse_with, gguf, sam};
use engram_core::{AgentId, LlmConfig, LoopStyle};
use engram_service::ProviderSetup;
use engram_suite::Home;
use engram_suite::llama_server::LlamaServer;

/// Sets the server up as a keyless provider and creates an agent of `style` on it, its
/// answers capped at 48 tokens and decoded greedily, as the built-in model's tests do.
async fn agent(home: &Home, server: &LlamaServer, style: LoopStyle) -> AgentId {
    let info = home
        .engram
        .providers()
        .set(ProviderSetup {
            name: "llamacpp".into(),
            base_url: Some(server.base_url()),
            ..ProviderSetup::default()
        })
        .expect("a provider without a key");
    assert!(!info.key_set, "no key was given or needed");
    let mut llm = LlmConfig::new("llamacpp/smollm2");
    llm.context_window = 4096;
    llm.max_tokens = Some(48);
    llm.temperature = Some(0.0);
    home.engram
        .agents()
        .create(sam(llm, style))
        .await
        .expect("create agent")
        .agent
        .id
}

async fn converse(style: LoopStyle) {
    // One thread, as the built-in model's tests: the rest of the suite runs beside.
    let server = LlamaServer::start(&gguf(), 1).await;
    let home = Home::new();
    let agent = agent(&home, &server, style).await;
    converse_with(&home, &agent, &format!("llama-server {style:?}")).await;
    let statuses = server.chat_statuses();
    assert!(
        statuses.len() >= 10,
        "every message reached the server: {statuses:?}\n{}",
        server.log_text()
    );
    assert!(
        statuses.iter().all(|s| *s == 200),
        "a request was refused: {statuses:?}\n{}",
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_loop_agent_holds_a_conversation_on_llama_server() {
    converse(LoopStyle::ToolLoop).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_classic_agent_holds_a_conversation_on_llama_server() {
    converse(LoopStyle::Classic).await;
}
