//! Rolling back a turn (regenerate) races a new message on another thread: the rollback's
//! "is a run in flight" check and the rollback itself must not let a run start in between,
//! or the rollback deletes the new run's messages (and a run that finished in between is
//! rolled back unseen). Real engine on a multi-threaded runtime, real SQLite, the scripted
//! model over real HTTP.
//!
//! This is a stress check of the invariant; the window it probes is narrow, so it rarely hits
//! it (it did not in 40 rounds on a 2-core machine before the fix). The deterministic test of
//! the fix — a run holding the agent's turn refuses the rollback and the delete — is
//! `engram-service`'s `turns::tests`.

use engram_core::{Error, LoopStyle, Role};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::Home;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Rounds of the race; each round either order may win, and every order must keep the message.
const ROUNDS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_sent_while_a_turn_is_regenerated_is_never_lost() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Arc::new(Home::new());
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    home.chat(&agent, "first").await;
    let mut refused = 0;
    for round in 0..ROUNDS {
        let text = format!("note {round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let regenerate = {
            let (home, agent, barrier) = (home.clone(), agent.clone(), barrier.clone());
            tokio::spawn(async move {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                barrier.wait().await;
                let out = home
                    .engram
                    .runs()
                    .regenerate(&agent, &tx, CancellationToken::new())
                    .await;
                drop(tx);
                while rx.recv().await.is_some() {}
                out
            })
        };
        let send = {
            let (home, agent, barrier, text) =
                (home.clone(), agent.clone(), barrier.clone(), text.clone());
            tokio::spawn(async move {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                barrier.wait().await;
                let out = home
                    .engram
                    .runs()
                    .send_message(&agent, &text, &tx, CancellationToken::new())
                    .await;
                drop(tx);
                while rx.recv().await.is_some() {}
                out
            })
        };
        let sent = send.await.unwrap();
        assert!(sent.is_ok(), "round {round}: {sent:?}");
        match regenerate.await.unwrap() {
            Ok(_) => {}
            Err(Error::Conflict(_)) => refused += 1,
            Err(e) => panic!("round {round}: {e:?}"),
        }
        let users: Vec<String> = home
            .engram
            .recall()
            .list(&agent, None, 1000)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content)
            .collect();
        assert_eq!(
            users.iter().filter(|u| **u == text).count(),
            1,
            "round {round}: the message sent during the regenerate is kept once: {users:?}"
        );
        // Every user message was answered: no run lost its turn's messages to the rollback.
        let all = home.engram.recall().list(&agent, None, 1000).await.unwrap();
        for (i, m) in all.iter().enumerate() {
            if m.role == Role::User {
                assert!(
                    all[i + 1..].iter().any(|n| n.role == Role::Assistant),
                    "round {round}: '{}' has no reply",
                    m.content
                );
            }
        }
    }
    eprintln!("{refused} of {ROUNDS} regenerates were refused while the message ran");
}
