//! Snapshots of a fresh agent's first LLM call — system prompt, compiled memory and tool
//! schemas — so any prompt change shows up in review; and its size, against the budget.

use engram_core::{LoopStyle, NewAgent, NewBlock};
use engram_mock_llm::{MockLlm, Reply, Script};
use engram_suite::Home;

async fn first_request(style: LoopStyle) -> serde_json::Value {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, style, |a: &mut NewAgent| {
            a.blocks = vec![
                NewBlock::new("persona", "I am Sam."),
                NewBlock::new("human", "Name: Bob"),
            ];
        })
        .await;
    mock.push(if style == LoopStyle::Classic {
        Reply::ToolCalls(vec![engram_mock_llm::Call::new(
            "send_message",
            serde_json::json!({"message": "Hi"}),
        )])
    } else {
        Reply::text("Hi")
    });
    home.chat(&agent, "hello").await;
    let mut body = mock.chat_requests()[0].body.clone();
    // The clock is the only thing that differs between runs.
    let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
    let masked: String = system
        .lines()
        .map(|l| {
            if l.starts_with("- The current time is:") {
                "- The current time is: <now>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    body["messages"][0]["content"] = masked.into();
    body
}

#[tokio::test]
async fn first_call_of_a_tool_loop_agent() {
    insta::assert_json_snapshot!(first_request(LoopStyle::ToolLoop).await);
}

#[tokio::test]
async fn first_call_of_a_classic_agent() {
    insta::assert_json_snapshot!(first_request(LoopStyle::Classic).await);
}

#[tokio::test]
async fn a_fresh_agent_costs_under_2000_prompt_tokens() {
    let home = Home::new();
    for style in [LoopStyle::ToolLoop, LoopStyle::Classic] {
        let agent = home
            .engram
            .agents()
            .create(NewAgent {
                name: "Fresh".into(),
                llm: Some(engram_core::LlmConfig::new("openai/gpt-4o-mini")),
                loop_style: style,
                ..NewAgent::default()
            })
            .await
            .unwrap()
            .agent
            .id;
        let b = home
            .engram
            .agents()
            .context_breakdown(&agent)
            .await
            .unwrap();
        assert!(b.exact, "gpt-4o-mini is counted with tiktoken");
        assert!(b.total < 2_000, "{style:?}: {b:?}");
    }
}
