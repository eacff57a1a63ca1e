//! The seed lab conversation (shared/seeds/000): facts land in the `human` block once each,
//! the parallel tool calls are both answered, and every request the model saw was valid.

use engram_core::{LoopStyle, RunEvent, StopReason};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::Home;

async fn lab(style: LoopStyle) {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, style).await;

    let (out, events) = home.chat(&agent, "my name is Bob").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{out:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::MemoryChanged { block, .. } if block.label == "human"))
    );
    assert_eq!(home.block(&agent, "human"), "Name: Bob");

    let (out, _) = home.chat(&agent, "what is my name?").await;
    let reply = reply_text(&out, style);
    assert!(reply.contains("Bob"), "reply: {reply}");

    let before = mock.chat_requests().len();
    let (out, _) = home
        .chat(&agent, "my best friend is Alya and she loves cherry pie")
        .await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    // One response carried both calls; the next request answered both.
    let parallel = out
        .messages
        .iter()
        .find(|m| m.tool_calls.len() == 2)
        .expect("two parallel tool calls");
    let answered: Vec<_> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    for call in &parallel.tool_calls {
        assert!(answered.contains(&call.id), "call {} unanswered", call.id);
    }
    assert!(mock.chat_requests().len() > before + 1);

    let (out, _) = home.chat(&agent, "who is my best friend?").await;
    let reply = reply_text(&out, style);
    assert!(reply.contains("Alya"), "reply: {reply}");

    let human = home.block(&agent, "human");
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines,
        ["Name: Bob", "Best friend: Alya", "Alya loves cherry pie"],
        "human block: {human:?}"
    );
    assert!(
        mock.violations().is_empty(),
        "invalid requests: {:#?}",
        mock.violations()
    );
}

fn reply_text(out: &engram_suite::RunOutcome, style: LoopStyle) -> String {
    let response = engram_service::letta::response(out, style);
    response["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["message_type"] == "assistant_message")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn lab_conversation_in_the_tool_loop() {
    lab(LoopStyle::ToolLoop).await;
}

#[tokio::test]
async fn lab_conversation_in_the_classic_loop() {
    lab(LoopStyle::Classic).await;
}

#[tokio::test]
async fn repeating_a_fact_does_not_duplicate_it() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    for _ in 0..3 {
        home.chat(&agent, "my name is Bob").await;
    }
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn lab_conversation_over_the_anthropic_api() {
    use engram_providers::ProviderKind;
    use engram_service::ProviderSetup;

    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    home.engram
        .providers()
        .set(ProviderSetup {
            name: "anthropic".into(),
            kind: Some(ProviderKind::Anthropic),
            base_url: Some(mock.base_url()),
            api_key: Some("sk-ant-test-key".to_owned().into()),
            ..ProviderSetup::default()
        })
        .unwrap();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            let llm = a.llm.as_mut().unwrap();
            llm.model = "anthropic/claude-mock".into();
            llm.base_url = None;
        })
        .await;
    home.chat(&agent, "my name is Bob").await;
    let (out, _) = home
        .chat(&agent, "my best friend is Alya and she loves cherry pie")
        .await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    let (out, _) = home.chat(&agent, "who is my best friend?").await;
    assert!(reply_text(&out, LoopStyle::ToolLoop).contains("Alya"));
    assert_eq!(home.block(&agent, "human").lines().count(), 3);
    let requests = mock.requests();
    assert!(
        requests.iter().all(|r| r.path == "/v1/messages"),
        "spoke Anthropic's API only"
    );
    assert!(
        requests
            .iter()
            .all(|r| r.api_key_header.as_deref() == Some("sk-ant-test-key"))
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}
