//! The loop's contract with a transport: replies stream as deltas that add up to what is
//! stored, and a model that never stops calling tools is stopped at the step limit with every
//! call answered.

use engram_core::{LoopStyle, RunEvent, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::Home;
use serde_json::json;

#[tokio::test]
async fn replies_stream_as_text_and_reasoning_deltas() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    mock.push(Reply::Reasoning {
        reasoning: "The user greets me; I should greet back warmly.".into(),
        text: "Hello there, it is good to see you again!".into(),
    });
    let (out, events) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    let text: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ReasoningDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.len() > 1, "the reply arrived in pieces: {text:?}");
    let stored = out.messages.last().unwrap();
    assert_eq!(text.concat(), stored.content);
    assert_eq!(reasoning, "The user greets me; I should greet back warmly.");
    assert_eq!(stored.reasoning.as_deref(), Some(reasoning.as_str()));
    assert!(matches!(events.first(), Some(RunEvent::RunStarted { .. })));
    assert!(matches!(
        events.last(),
        Some(RunEvent::Done {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
}

#[tokio::test]
async fn a_model_that_never_stops_is_stopped_at_the_step_limit() {
    let mock = MockLlm::start(Script::rules(|_| {
        Reply::ToolCalls(vec![Call::new(
            "conversation_search",
            json!({"query": "anything"}),
        )])
    }))
    .await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| a.max_steps = Some(3))
        .await;
    let (out, events) = home.chat(&agent, "loop forever").await;
    assert_eq!(out.stop_reason, StopReason::MaxSteps);
    assert_eq!(out.usage.step_count, 3);
    assert_eq!(mock.chat_requests().len(), 3);
    let steps = events
        .iter()
        .filter(|e| matches!(e, RunEvent::StepStarted { .. }))
        .count();
    assert_eq!(steps, 3);
    // Every call got its result, so the next run starts from a valid history.
    let calls = out
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum::<usize>();
    let results = out
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .count();
    assert_eq!((calls, results), (3, 3));
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    assert_eq!(
        home.engram
            .store()
            .runs()
            .list_steps(&agent, Some(&out.run_id))
            .unwrap()
            .len(),
        3
    );
}
