//! Recall memory: batches appended in one transaction with `seq` numbers `SEQ_GAP` apart,
//! read back as written, paged by `seq`, counted, searched by their words best first, and
//! deleted with their agent.

use super::{agent, agent_with, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{
    Error, Message, MessageId, MessageKind, NewMessage, Role, RunId, StepId, ToolCall,
};
use engram_store_api::{AgentStore, MessageSearch, MessageStore, SEQ_GAP, SeqOrder};

on_both_backends!(
    appended_messages_read_back_as_written,
    pages_run_by_seq_between_exclusive_bounds,
    a_batch_with_a_taken_id_writes_nothing,
    unknown_agents_and_messages_are_not_found,
    messages_go_with_their_agent,
    a_search_ranks_messages_with_more_of_the_words_first,
    a_search_finds_reasoning_and_tool_arguments_by_stem,
    a_search_skips_hidden_messages_and_filters_roles_and_times,
    queries_that_are_not_plain_words_are_searched_safely,
);

fn contents(msgs: &[Message]) -> Vec<&str> {
    msgs.iter().map(|m| m.content.as_str()).collect()
}

async fn appended_messages_read_back_as_written<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "talker", &[]).await;
    let run = RunId::new();
    let step = StepId::new();
    let given = MessageId::new();
    // A time with nanoseconds: kept to the microsecond.
    let when = chrono::DateTime::from_timestamp(1_700_000_000, 123_456_789).unwrap();
    let batch = vec![
        NewMessage {
            id: Some(given.clone()),
            created_at: Some(when),
            ..NewMessage::user("hello there")
        },
        NewMessage::assistant(
            "",
            Some("they greeted me".into()),
            vec![ToolCall {
                id: "call-1".into(),
                name: "send_message".into(),
                arguments: r#"{"message": "hi!"}"#.into(),
            }],
        )
        .in_step(&run, &step),
        NewMessage::tool("call-1", "send_message", r#"{"status": "OK"}"#).in_step(&run, &step),
        NewMessage::hidden(MessageKind::Heartbeat, "go on"),
    ];
    let stored = b.append_messages(&a.id, &batch).await.unwrap();
    assert_eq!(stored.len(), 4);
    let seqs: Vec<i64> = stored.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, [SEQ_GAP, 2 * SEQ_GAP, 3 * SEQ_GAP, 4 * SEQ_GAP]);
    assert_eq!(stored[0].id, given);
    assert_eq!(
        stored[0].created_at.timestamp_micros(),
        1_700_000_000_123_456
    );
    assert_eq!(stored[0].created_at.timestamp_subsec_nanos(), 123_456_000);
    assert!(stored.iter().all(|m| m.agent_id == a.id && m.in_context));
    let assistant = &stored[1];
    assert_eq!(assistant.role, Role::Assistant);
    assert_eq!(assistant.reasoning.as_deref(), Some("they greeted me"));
    assert_eq!(assistant.tool_calls, batch[1].tool_calls);
    assert_eq!(
        (&assistant.run_id, &assistant.step_id),
        (&Some(run.clone()), &Some(step.clone()))
    );
    let tool = &stored[2];
    assert_eq!(
        (
            tool.role,
            tool.tool_call_id.as_deref(),
            tool.tool_name.as_deref()
        ),
        (Role::Tool, Some("call-1"), Some("send_message"))
    );
    assert_eq!(stored[3].kind, MessageKind::Heartbeat);
    for m in &stored {
        assert_eq!(
            &b.get_message(&m.id).await.unwrap(),
            m,
            "reads back as returned"
        );
    }

    // The next batch follows the last message; an empty batch writes nothing.
    assert!(b.append_messages(&a.id, &[]).await.unwrap().is_empty());
    let more = b
        .append_messages(&a.id, &[NewMessage::user("and again")])
        .await
        .unwrap();
    assert_eq!(more[0].seq, 5 * SEQ_GAP);
    assert_ne!(more[0].id, given);
    assert_eq!(b.count_messages(&a.id).await.unwrap(), 5);
    // Another agent's history has its own numbers.
    let (other, _) = agent_with(&b, "other", &[]).await;
    let theirs = b
        .append_messages(&other.id, &[NewMessage::user("mine")])
        .await
        .unwrap();
    assert_eq!(theirs[0].seq, SEQ_GAP);
    assert_eq!(b.count_messages(&other.id).await.unwrap(), 1);
}

async fn pages_run_by_seq_between_exclusive_bounds<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "pager", &[]).await;
    let batch: Vec<NewMessage> = (1..=10)
        .map(|n| NewMessage::user(format!("m{n}")))
        .collect();
    b.append_messages(&a.id, &batch).await.unwrap();
    let seq = |n: i64| n * SEQ_GAP;
    let page = |after, before, limit, order| b.page_messages(&a.id, after, before, limit, order);

    let all = page(None, None, 100, SeqOrder::Asc).await.unwrap();
    assert_eq!(
        contents(&all),
        ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10"]
    );
    assert_eq!(
        contents(&page(None, None, 3, SeqOrder::Asc).await.unwrap()),
        ["m1", "m2", "m3"]
    );
    assert_eq!(
        contents(&page(Some(seq(3)), None, 3, SeqOrder::Asc).await.unwrap()),
        ["m4", "m5", "m6"],
        "reading forward after the newest seen"
    );
    assert_eq!(
        contents(&page(None, None, 3, SeqOrder::Desc).await.unwrap()),
        ["m10", "m9", "m8"]
    );
    assert_eq!(
        contents(&page(None, Some(seq(8)), 3, SeqOrder::Desc).await.unwrap()),
        ["m7", "m6", "m5"],
        "scrolling back before the oldest seen"
    );
    assert_eq!(
        contents(
            &page(Some(seq(2)), Some(seq(6)), 10, SeqOrder::Asc)
                .await
                .unwrap()
        ),
        ["m3", "m4", "m5"],
        "both bounds exclusive"
    );
    assert_eq!(
        contents(
            &page(Some(seq(2)), Some(seq(6)), 2, SeqOrder::Desc)
                .await
                .unwrap()
        ),
        ["m5", "m4"]
    );
    assert!(
        page(Some(seq(10)), None, 5, SeqOrder::Asc)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(page(None, None, 0, SeqOrder::Asc).await.unwrap().is_empty());
    // Bounds between stored numbers.
    assert_eq!(
        contents(
            &page(Some(seq(1) + 1), Some(seq(3) + 1), 10, SeqOrder::Asc)
                .await
                .unwrap()
        ),
        ["m2", "m3"]
    );
}

async fn a_batch_with_a_taken_id_writes_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "careful", &[]).await;
    let (other, _) = agent_with(&b, "other", &[]).await;
    let taken = b
        .append_messages(&other.id, &[NewMessage::user("first")])
        .await
        .unwrap()
        .remove(0);
    b.append_messages(&a.id, &[NewMessage::user("kept")])
        .await
        .unwrap();

    let fresh = MessageId::new();
    let clash = vec![
        NewMessage {
            id: Some(fresh.clone()),
            ..NewMessage::user("would be second")
        },
        NewMessage {
            id: Some(taken.id.clone()),
            ..NewMessage::user("reuses another agent's id")
        },
    ];
    assert_eq!(code(b.append_messages(&a.id, &clash).await), "conflict");
    assert_eq!(
        code(b.get_message(&fresh).await),
        "not_found",
        "all or nothing"
    );
    assert_eq!(b.get_message(&taken.id).await.unwrap(), taken, "untouched");

    let twice = MessageId::new();
    let doubled = vec![
        NewMessage {
            id: Some(twice.clone()),
            ..NewMessage::user("once")
        },
        NewMessage {
            id: Some(twice.clone()),
            ..NewMessage::user("twice")
        },
    ];
    assert_eq!(code(b.append_messages(&a.id, &doubled).await), "conflict");
    assert_eq!(code(b.get_message(&twice).await), "not_found");

    assert_eq!(b.count_messages(&a.id).await.unwrap(), 1);
    // The failed batches took no numbers.
    let next = b
        .append_messages(&a.id, &[NewMessage::user("next")])
        .await
        .unwrap();
    assert_eq!(next[0].seq, 2 * SEQ_GAP);
}

async fn unknown_agents_and_messages_are_not_found<H: Harness>(h: H) {
    let b = h.backend();
    let ghost = agent("ghost").id;
    let r = b
        .append_messages(&ghost, &[NewMessage::user("hello?")])
        .await;
    assert_eq!(code(r), "not_found");
    assert_eq!(
        code(b.page_messages(&ghost, None, None, 10, SeqOrder::Asc).await),
        "not_found"
    );
    assert_eq!(code(b.count_messages(&ghost).await), "not_found");
    assert_eq!(
        code(
            b.search_messages(&ghost, &MessageSearch::new("hello", 5))
                .await
        ),
        "not_found"
    );
    let id = MessageId::new();
    match b.get_message(&id).await {
        Err(Error::NotFound { what, id: missing }) => {
            assert_eq!((what, missing.as_str()), ("message", id.as_str()))
        }
        other => panic!("expected the message not to be found, got {other:?}"),
    }
}

async fn messages_go_with_their_agent<H: Harness>(h: H) {
    let b = h.backend();
    let (gone, _) = agent_with(&b, "leaving", &[]).await;
    let (stays, _) = agent_with(&b, "staying", &[]).await;
    let doomed = b
        .append_messages(
            &gone.id,
            &[NewMessage::user("tulips"), NewMessage::user("roses")],
        )
        .await
        .unwrap();
    let kept = b
        .append_messages(&stays.id, &[NewMessage::user("tulips too")])
        .await
        .unwrap();
    b.delete_agent(&gone.id).await.unwrap();
    for m in &doomed {
        assert_eq!(code(b.get_message(&m.id).await), "not_found");
    }
    assert_eq!(b.get_message(&kept[0].id).await.unwrap(), kept[0]);
    assert_eq!(b.count_messages(&stays.id).await.unwrap(), 1);
    let hits = b
        .search_messages(&stays.id, &MessageSearch::new("tulips", 10))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item, kept[0]);
}

async fn a_search_ranks_messages_with_more_of_the_words_first<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "gardener", &[]).await;
    let (other, _) = agent_with(&b, "neighbour", &[]).await;
    b.append_messages(
        &a.id,
        &[
            NewMessage::user("I planted tulips by the old fence"),
            NewMessage::user("We talked about the weather all day"),
            NewMessage::assistant("The tulips and the roses share one bed", None, vec![]),
            NewMessage::user("Roses need more sun than you think"),
        ],
    )
    .await
    .unwrap();
    b.append_messages(&other.id, &[NewMessage::user("tulips roses tulips roses")])
        .await
        .unwrap();

    let hits = b
        .search_messages(&a.id, &MessageSearch::new("tulips roses", 10))
        .await
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.item.content.as_str()).collect();
    assert_eq!(
        found.len(),
        3,
        "any of the words, this agent's only: {found:?}"
    );
    assert_eq!(found[0], "The tulips and the roses share one bed");
    assert!(found.contains(&"I planted tulips by the old fence"));
    assert!(found.contains(&"Roses need more sun than you think"));
    assert!(hits.iter().all(|h| h.item.agent_id == a.id));
    assert_eq!(hits[0].score, 1.0, "the best hit scores 1");
    assert!(
        hits[1..].iter().all(|h| h.score > 0.0 && h.score < 1.0),
        "{:?}",
        hits.iter().map(|h| h.score).collect::<Vec<_>>()
    );
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );

    let one = b
        .search_messages(&a.id, &MessageSearch::new("tulips roses", 1))
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].item, hits[0].item);
    assert!(
        b.search_messages(&a.id, &MessageSearch::new("tulips", 0))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        b.search_messages(&a.id, &MessageSearch::new("orchids", 10))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_search_finds_reasoning_and_tool_arguments_by_stem<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "thinker", &[]).await;
    b.append_messages(
        &a.id,
        &[
            NewMessage::assistant("", Some("They love gardening on Sundays".into()), vec![]),
            NewMessage::assistant(
                "",
                None,
                vec![ToolCall {
                    id: "call-9".into(),
                    name: "archival_memory_insert".into(),
                    arguments: r#"{"content": "Their cat is called Marmalade"}"#.into(),
                }],
            ),
        ],
    )
    .await
    .unwrap();
    let garden = b
        .search_messages(&a.id, &MessageSearch::new("gardens", 10))
        .await
        .unwrap();
    assert_eq!(garden.len(), 1, "'gardens' and 'gardening' share a stem");
    assert_eq!(
        garden[0].item.reasoning.as_deref(),
        Some("They love gardening on Sundays")
    );
    let cat = b
        .search_messages(&a.id, &MessageSearch::new("marmalade", 10))
        .await
        .unwrap();
    assert_eq!(cat.len(), 1);
    assert_eq!(cat[0].item.tool_calls[0].id, "call-9");
}

async fn a_search_skips_hidden_messages_and_filters_roles_and_times<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "filtered", &[]).await;
    let at = |secs: i64| Some(chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap());
    let stored = b
        .append_messages(
            &a.id,
            &[
                NewMessage {
                    created_at: at(0),
                    ..NewMessage::user("kiwi for breakfast")
                },
                NewMessage {
                    created_at: at(100),
                    ..NewMessage::assistant("kiwi is a good start", None, vec![])
                },
                NewMessage {
                    created_at: at(200),
                    ..NewMessage::hidden(MessageKind::Heartbeat, "kiwi heartbeat")
                },
                NewMessage {
                    created_at: at(300),
                    ..NewMessage::hidden(MessageKind::Alert, "kiwi alert")
                },
                NewMessage {
                    created_at: at(400),
                    role: Role::System,
                    ..NewMessage::user("system note about kiwi")
                },
            ],
        )
        .await
        .unwrap();
    let search = |q: MessageSearch| {
        let b = b.clone();
        let a = a.id.clone();
        async move {
            let mut found: Vec<i64> = b
                .search_messages(&a, &q)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.item.seq)
                .collect();
            found.sort_unstable();
            found
        }
    };
    let seq = |n: usize| stored[n].seq;
    assert_eq!(
        search(MessageSearch::new("kiwi", 10)).await,
        [seq(0), seq(1)],
        "hidden loop messages and system text are not searched by default"
    );
    assert_eq!(
        search(MessageSearch {
            roles: vec![Role::System],
            ..MessageSearch::new("kiwi", 10)
        })
        .await,
        [seq(4)]
    );
    assert_eq!(
        search(MessageSearch {
            roles: vec![Role::User],
            ..MessageSearch::new("kiwi", 10)
        })
        .await,
        [seq(0)],
        "a heartbeat is in the user role, and still never found"
    );
    assert_eq!(
        search(MessageSearch {
            start: at(100),
            ..MessageSearch::new("kiwi", 10)
        })
        .await,
        [seq(1)],
        "start is inclusive"
    );
    assert_eq!(
        search(MessageSearch {
            end: at(99),
            ..MessageSearch::new("kiwi", 10)
        })
        .await,
        [seq(0)]
    );
    assert_eq!(
        search(MessageSearch {
            start: at(0),
            end: at(100),
            roles: vec![Role::User, Role::Assistant, Role::System],
            ..MessageSearch::new("", 10)
        })
        .await,
        [seq(0), seq(1)],
        "a blank query filters the same way"
    );
}

async fn queries_that_are_not_plain_words_are_searched_safely<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "safe", &[]).await;
    b.append_messages(
        &a.id,
        &[
            NewMessage::user("who are you?"),
            NewMessage::user("apples & pears"),
            NewMessage::user("o'clock news"),
            NewMessage::user("the newest one"),
        ],
    )
    .await
    .unwrap();
    let found = |text: &'static str| {
        let b = b.clone();
        let a = a.id.clone();
        async move {
            b.search_messages(&a, &MessageSearch::new(text, 10))
                .await
                .unwrap()
                .into_iter()
                .map(|h| (h.item.content, h.score))
                .collect::<Vec<_>>()
        }
    };

    // Blank: the newest first, unranked.
    let newest = found("   ").await;
    let texts: Vec<&str> = newest.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "the newest one",
            "o'clock news",
            "apples & pears",
            "who are you?"
        ]
    );
    assert!(newest.iter().all(|(_, s)| *s == 0.0));
    // No letters or digits: nothing.
    assert!(found("!!! ()").await.is_empty());
    assert!(found("🎉").await.is_empty());
    // Query syntax of either engine is searched as the words it holds.
    for text in [
        "apples & !(",
        "\"apples\" OR NEAR(",
        "apples:* | '",
        "col:apples*",
    ] {
        let hits = found(text).await;
        assert_eq!(hits.len(), 1, "{text}: {hits:?}");
        assert_eq!(hits[0].0, "apples & pears", "{text}");
    }
    let clock = found("o'clock").await;
    assert_eq!(clock.first().map(|(t, _)| t.as_str()), Some("o'clock news"));
    // Accents and case do not matter.
    b.append_messages(&a.id, &[NewMessage::user("a little café in Lisbon")])
        .await
        .unwrap();
    for text in ["cafe", "CAFÉ", "Café"] {
        let hits = found(text).await;
        assert_eq!(hits.len(), 1, "{text}: {hits:?}");
        assert_eq!(hits[0].0, "a little café in Lisbon", "{text}");
    }
    // Stop words only: searched as written.
    let who = found("Who are you").await;
    assert_eq!(who.len(), 1, "{who:?}");
    assert_eq!(who[0].0, "who are you?");
}
