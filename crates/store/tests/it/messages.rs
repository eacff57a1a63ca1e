//! Recall memory: appending, paging, eviction and repair of orphaned tool calls.

use crate::support::{at, create, temp_store};
use engram_core::{
    Error, MessageId, MessageKind, NewMessage, Role, ToolCall, ToolReturn, ToolStatus,
};
use engram_retrieval::HybridSearch;
use engram_store::{MessageQuery, SEQ_GAP};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

#[test]
fn append_spaces_seqs_and_keeps_given_ids_and_times() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let given = MessageId::from("message-streamed");
    let when = at("2024-05-01T10:00:00.123456789Z");
    let stored = store
        .messages()
        .append(
            &a.id,
            &[
                NewMessage {
                    id: Some(given.clone()),
                    created_at: Some(when),
                    ..NewMessage::user("hello")
                },
                NewMessage::assistant(
                    "hi",
                    Some("be nice".into()),
                    vec![call("c1", "send_message")],
                ),
            ],
        )
        .unwrap();
    assert_eq!(stored[0].id, given);
    assert_eq!(
        stored[0].created_at,
        at("2024-05-01T10:00:00.123456Z"),
        "truncated to microseconds"
    );
    assert_eq!(stored[1].seq - stored[0].seq, SEQ_GAP);
    assert!(stored.iter().all(|m| m.in_context));
    for m in &stored {
        assert_eq!(&store.messages().get(&m.id).unwrap(), m);
    }
    assert_eq!(store.messages().in_context(&a.id).unwrap(), stored);

    let dup = store.messages().append(
        &a.id,
        &[
            NewMessage::user("new"),
            NewMessage {
                id: Some(given),
                ..NewMessage::user("again")
            },
        ],
    );
    assert!(matches!(dup, Err(Error::Conflict(_))), "{dup:?}");
    assert_eq!(
        store.messages().in_context(&a.id).unwrap().len(),
        2,
        "all or nothing"
    );
    assert!(matches!(
        store.messages().append(&"agent-x".into(), &[]),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.messages().get(&"message-x".into()),
        Err(Error::NotFound {
            what: "message",
            ..
        })
    ));
}

#[test]
fn list_messages_pages_backwards() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let msgs: Vec<_> = (1..=25)
        .map(|i| NewMessage::user(format!("m{i}")))
        .collect();
    store.messages().append(&a.id, &msgs).unwrap();
    let texts =
        |page: &[engram_core::Message]| page.iter().map(|m| m.content.clone()).collect::<Vec<_>>();

    let page = store.messages().list(&a.id, None, 10).unwrap();
    assert_eq!(
        texts(&page),
        (16..=25).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
    let page = store.messages().list(&a.id, Some(page[0].seq), 10).unwrap();
    assert_eq!(
        texts(&page),
        (6..=15).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
    let page = store.messages().list(&a.id, Some(page[0].seq), 10).unwrap();
    assert_eq!(
        texts(&page),
        (1..=5).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
    assert!(
        store
            .messages()
            .list(&a.id, Some(page[0].seq), 10)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn evicted_messages_leave_the_context_but_stay_searchable() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let stored = store
        .messages()
        .append(
            &a.id,
            &[
                NewMessage::user("my cat is called Miso"),
                NewMessage::user("what's up"),
            ],
        )
        .unwrap();
    let bad = store
        .messages()
        .evict(&a.id, &[stored[0].id.clone(), "message-x".into()], "never");
    assert!(matches!(
        bad,
        Err(Error::NotFound {
            what: "message",
            ..
        })
    ));
    assert_eq!(
        store.messages().in_context(&a.id).unwrap().len(),
        2,
        "nothing evicted on error"
    );
    assert_eq!(store.agents().get(&a.id).unwrap().summary, None);

    store
        .messages()
        .evict(&a.id, &[stored[0].id.clone()], "User has a cat.")
        .unwrap();
    let context = store.messages().in_context(&a.id).unwrap();
    assert_eq!(context.len(), 1);
    assert_eq!(context[0].id, stored[1].id);
    assert_eq!(
        store.agents().get(&a.id).unwrap().summary.as_deref(),
        Some("User has a cat.")
    );
    assert!(!store.messages().get(&stored[0].id).unwrap().in_context);
    let hits = store
        .search_messages(
            &a.id,
            &MessageQuery {
                query: "miso".into(),
                limit: 5,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.id, stored[0].id);
    assert_eq!(store.messages().list(&a.id, None, 10).unwrap().len(), 2);
}

#[test]
fn orphaned_tool_call_gets_a_failed_result_right_after_the_answered_one() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let run = engram_core::RunId::new();
    let step = engram_core::StepId::new();
    store
        .messages()
        .append(
            &a.id,
            &[
                NewMessage::user("remember two things"),
                NewMessage::assistant(
                    "",
                    None,
                    vec![
                        call("c1", "core_memory_append"),
                        call("c2", "archival_memory_insert"),
                    ],
                )
                .in_step(&run, &step),
                NewMessage::tool(
                    "c1",
                    "core_memory_append",
                    ToolReturn::ok("done", at("2024-01-01T00:00:00Z")).to_json(),
                ),
                NewMessage::tool("ghost", "send_message", "{}"),
                NewMessage::user("hello again"),
            ],
        )
        .unwrap();
    let now = at("2024-06-01T12:00:00Z");
    assert_eq!(
        store
            .messages()
            .repair_orphaned_tool_calls(&a.id, now)
            .unwrap(),
        1
    );

    let context = store.messages().in_context(&a.id).unwrap();
    let shape: Vec<(Role, Option<&str>)> = context
        .iter()
        .map(|m| (m.role, m.tool_call_id.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, None),
            (Role::Assistant, None),
            (Role::Tool, Some("c1")),
            (Role::Tool, Some("c2")),
            (Role::User, None),
        ],
        "the stray result left the context and the repair sits right after c1's result"
    );
    assert!(context.windows(2).all(|w| w[0].seq < w[1].seq));
    let repaired = &context[3];
    assert_eq!(
        repaired.tool_name.as_deref(),
        Some("archival_memory_insert")
    );
    assert_eq!(
        (repaired.run_id.as_ref(), repaired.step_id.as_ref()),
        (Some(&run), Some(&step))
    );
    assert_eq!(repaired.created_at, now);
    let envelope = ToolReturn::parse(&repaired.content).unwrap();
    assert_eq!(envelope.status, ToolStatus::Failed);
    assert!(
        envelope
            .message
            .starts_with("The tool call was interrupted")
    );
    assert_eq!(
        store.messages().list(&a.id, None, 100).unwrap().len(),
        6,
        "the stray stays in recall"
    );

    assert_eq!(
        store
            .messages()
            .repair_orphaned_tool_calls(&a.id, now)
            .unwrap(),
        0,
        "repair is idempotent"
    );
}

#[test]
fn many_orphans_renumber_when_the_gap_runs_out() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let calls: Vec<_> = (0..14).map(|i| call(&format!("call_{i}"), "t")).collect();
    // Two turns reusing the same call ids (some local servers do): each turn is repaired alone.
    let turn = |text: &str| {
        vec![
            NewMessage::user(text),
            NewMessage::assistant("", None, calls.clone()),
        ]
    };
    let mut msgs = turn("first");
    msgs.extend(turn("second"));
    msgs.push(NewMessage::user("after"));
    store.messages().append(&a.id, &msgs).unwrap();
    assert_eq!(
        store
            .messages()
            .repair_orphaned_tool_calls(&a.id, chrono::Utc::now())
            .unwrap(),
        28
    );

    let context = store.messages().in_context(&a.id).unwrap();
    assert_eq!(context.len(), 5 + 28);
    assert!(context.windows(2).all(|w| w[0].seq < w[1].seq));
    let ids: Vec<_> = context
        .iter()
        .map(|m| m.tool_call_id.clone().unwrap_or_else(|| m.content.clone()))
        .collect();
    let mut expected = Vec::new();
    for turn in ["first", "second"] {
        expected.push(turn.to_owned());
        expected.push(String::new());
        expected.extend((0..14).map(|i| format!("call_{i}")));
    }
    expected.push("after".into());
    assert_eq!(ids, expected);
    assert_eq!(
        store
            .messages()
            .repair_orphaned_tool_calls(&a.id, chrono::Utc::now())
            .unwrap(),
        0
    );
}

#[test]
fn hidden_kinds_round_trip() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let m = store
        .messages()
        .append(
            &a.id,
            &[NewMessage::hidden(
                MessageKind::Heartbeat,
                r#"{"type":"heartbeat"}"#,
            )],
        )
        .unwrap();
    assert_eq!(
        store.messages().get(&m[0].id).unwrap().kind,
        MessageKind::Heartbeat
    );
}
