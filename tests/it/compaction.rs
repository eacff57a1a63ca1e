//! Context-window management on a long conversation: the model is warned, old messages are
//! folded into a recursive summary without splitting tool calls from their results, and evicted
//! messages stay searchable in recall memory.

use engram_agent::prompts::SUMMARIZER_SYSTEM;
use engram_core::{LoopStyle, MessageKind, Role, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_store::MessageQuery;
use engram_suite::Home;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A model that saves every user message to archival memory, then answers at length; and
/// summarises when asked to by the summariser prompt.
fn chatty_model(summaries: Arc<AtomicUsize>) -> Script {
    Script::rules(move |view| {
        if view.system.starts_with(&SUMMARIZER_SYSTEM[..40]) {
            let n = summaries.fetch_add(1, Ordering::SeqCst) + 1;
            return Reply::text(format!(
                "Summary #{n}: the user shared numbered facts about their garden."
            ));
        }
        let last_is_tool = view.messages.last().is_some_and(|m| m.role == "tool");
        if last_is_tool {
            Reply::text(format!(
                "Noted. {}",
                "I will keep that in mind for the garden. ".repeat(8)
            ))
        } else {
            let text = view.last_user_text().unwrap_or_default();
            Reply::ToolCalls(vec![Call::new(
                "archival_memory_insert",
                json!({"content": text}),
            )])
        }
    })
}

#[tokio::test]
async fn a_long_conversation_is_compacted_with_tool_pairs_whole() {
    let summaries = Arc::new(AtomicUsize::new(0));
    let mock = MockLlm::start(chatty_model(summaries.clone())).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.llm.as_mut().unwrap().context_window = 4_000;
        })
        .await;

    for i in 0..40 {
        let (out, _) = home
            .chat(
                &agent,
                &format!("Fact {i}: the tulip bed number {i} faces east and needs water."),
            )
            .await;
        assert_eq!(
            out.stop_reason,
            StopReason::EndTurn,
            "turn {i}: {:?}",
            out.error
        );
    }

    // Compaction happened, more than once: the summary is recursive.
    assert!(
        summaries.load(Ordering::SeqCst) >= 2,
        "summaries: {}",
        summaries.load(Ordering::SeqCst)
    );
    let state = home.engram.agents().get(&agent).await.unwrap().agent;
    assert!(state.summary.as_deref().unwrap().starts_with("Summary #"));
    let summariser_calls: Vec<_> = mock
        .chat_requests()
        .into_iter()
        .filter(|r| r.body["messages"][0]["content"] == SUMMARIZER_SYSTEM)
        .collect();
    let later = summariser_calls.last().unwrap().body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        later.starts_with("Previous summary:\nSummary #"),
        "the old summary is folded in: {later:.80}"
    );

    // The context fits and starts at a whole exchange.
    let ctx = home
        .engram
        .agents()
        .context_breakdown(&agent)
        .await
        .unwrap();
    assert!(ctx.total < 4_000 * 9 / 10, "{ctx:?}");
    let in_context = home.engram.store().messages().in_context(&agent).unwrap();
    assert_ne!(in_context[0].role, Role::Tool);
    let total = home
        .engram
        .recall()
        .list(&agent, None, 10_000)
        .await
        .unwrap();
    assert!(in_context.len() < total.len());

    // Each compaction left a divider in the chat, right after its newest folded message, with
    // the summary as it stood then; the last one carries the current summary.
    let window = home
        .engram
        .recall()
        .window(&agent, &engram_service::WindowAt::Start, 1000)
        .await
        .unwrap();
    assert!(window.compactions.len() >= 2, "{:?}", window.compactions);
    assert!(
        window
            .compactions
            .iter()
            .all(|c| c.summary.starts_with("Summary #") && c.evicted > 0)
    );
    assert_eq!(
        window.compactions.last().unwrap().summary,
        state.summary.clone().unwrap()
    );
    let last_evicted = total.iter().filter(|m| !m.in_context).map(|m| m.seq).max();
    assert_eq!(Some(window.compactions.last().unwrap().seq), last_evicted);

    // The model was warned once before compaction, and every request kept tool pairs whole.
    assert!(total.iter().any(|m| m.kind == MessageKind::Alert));
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());

    // Evicted messages are still in recall memory.
    let q = MessageQuery {
        query: "tulip bed number 0".into(),
        roles: vec![Role::User],
        start: None,
        end: None,
        limit: 3,
    };
    let hits = home.engram.recall().search(&agent, &q).await.unwrap();
    assert!(
        hits.iter()
            .any(|h| h.message.content.starts_with("Fact 0:")),
        "{hits:?}"
    );
    assert!(
        !hits
            .iter()
            .find(|h| h.message.content.starts_with("Fact 0:"))
            .unwrap()
            .message
            .in_context
    );
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    for i in 0..6 {
        mock.push(Reply::text(format!("reply {i}")));
        home.chat(&agent, &format!("message {i}")).await;
    }
    // The provider says the prompt is too long although our count says it fits.
    mock.push(Reply::ContextLengthExceeded);
    mock.push(Reply::text("Earlier we exchanged six numbered messages."));
    mock.push(Reply::text("Still here."));
    let (out, _) = home.chat(&agent, "are you there?").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.messages.last().unwrap().content, "Still here.");
    let agent_state = home.engram.agents().get(&agent).await.unwrap().agent;
    assert_eq!(
        agent_state.summary.as_deref(),
        Some("Earlier we exchanged six numbered messages.")
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}
