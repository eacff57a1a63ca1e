//! The file tools over a big folder, as a report: `cargo bench --bench file_search`.
//!
//! A folder of 10,000 PDF pages: Debian's `libtasn1.pdf` manual (36 pages, from the
//! `libtasn1-doc` package) stored under 278 names, with vectors from the scripted model's
//! embeddings. An agent on the scripted model has the folder attached; each round is one user
//! message whose step calls `grep_files` or `semantic_search_files` once, then a plain reply.
//! The report gives the message's time p50 / p95 for each tool beside the same message without
//! a tool call (the rest of the loop), and the difference as the tool's own cost; and a plain
//! message's time before and while the folder is read (the chat beside indexing).
//! `FILE_SEARCH_COPIES` changes the number of copies, `FILE_SEARCH_ROUNDS` the rounds (30).

use engram_core::{AgentId, EmbeddingConfig, FileStatus, LoopStyle, NewFolder};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_retrieval::HybridSearch;
use engram_suite::{Home, last_tool_results};
use serde_json::json;
use std::time::{Duration, Instant};

const PDF: &str = "/usr/share/doc/libtasn1-doc/libtasn1.pdf";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50 and p95 of `times`, in milliseconds.
fn percentiles(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.95))
}

/// Times `rounds` messages, each answered as `replies(i)` queues it.
async fn time_messages(
    home: &Home,
    mock: &MockLlm,
    agent: &AgentId,
    rounds: usize,
    replies: impl Fn(usize) -> Vec<Reply>,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        for r in replies(i) {
            mock.push(r);
        }
        let started = Instant::now();
        home.chat(agent, "look it up").await;
        times.push(started.elapsed());
    }
    times
}

/// Plain messages a chatting agent takes before a fresh one takes over.
const CHAT_TURNS: usize = 50;

/// Agents on the scripted model answering plain messages, a fresh one every [`CHAT_TURNS`].
struct Chatter {
    agent: AgentId,
    turns: usize,
}

impl Chatter {
    async fn new(home: &Home, mock: &MockLlm) -> Self {
        Self {
            agent: home.agent_with(mock, LoopStyle::ToolLoop, |_| {}).await,
            turns: 0,
        }
    }

    /// Times one plain message (a fresh agent's creation, when due, is not timed).
    async fn message(&mut self, home: &Home, mock: &MockLlm) -> Duration {
        if self.turns == CHAT_TURNS {
            *self = Self::new(home, mock).await;
        }
        self.turns += 1;
        time_messages(home, mock, &self.agent, 1, |_| vec![Reply::text("ok")]).await[0]
    }
}

fn main() {
    let pdf = std::fs::read(PDF).expect("install libtasn1-doc for the PDF manual");
    let copies = env_usize("FILE_SEARCH_COPIES", 278);
    let rounds = env_usize("FILE_SEARCH_ROUNDS", 30);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let mock = MockLlm::start(Script::Queue).await;
        let embedding = EmbeddingConfig {
            model: "openai/mock-embed".into(),
            base_url: Some(mock.base_url()),
        };
        let home = Home::new();
        let agent = home
            .agent_with(&mock, LoopStyle::ToolLoop, |a| {
                a.embedding = Some(embedding.clone());
            })
            .await;
        let folder = home
            .engram
            .folders()
            .create(NewFolder {
                name: "manuals".into(),
                embedding: Some(embedding.clone()),
                ..NewFolder::default()
            })
            .unwrap();
        // The chat beside the folder being read: plain messages to other agents, timed before,
        // then while the files are read, parsed and embedded on a task of their own. Each
        // chatting agent takes `CHAT_TURNS` messages, then a fresh one takes over, so both
        // phases see the same history sizes (a history grown by thousands of turns costs more
        // per message on its own, whatever runs beside it).
        let mut chatter = Chatter::new(&home, &mock).await;
        let mut quiet = Vec::new();
        while quiet.len() < 4 * CHAT_TURNS {
            quiet.push(chatter.message(&home, &mock).await);
        }
        let mut chatter = Chatter::new(&home, &mock).await;
        let started = Instant::now();
        let ingest = {
            let (engram, folder, pdf) = (home.engram.clone(), folder.id.clone(), pdf.clone());
            tokio::spawn(async move {
                let (mut pages, mut chunks) = (0, 0);
                for i in 0..copies {
                    let added = engram
                        .folders()
                        .add_file(&folder, &format!("libtasn1-{i:03}.pdf"), pdf.clone())
                        .await
                        .unwrap();
                    let file = added.file.expect("stored");
                    assert_eq!(file.status, FileStatus::Completed, "{:?}", file.error);
                    pages += file.pages.unwrap_or(0);
                    chunks += file.chunks;
                }
                (pages, chunks)
            })
        };
        let mut busy = Vec::new();
        while !ingest.is_finished() {
            busy.push(chatter.message(&home, &mock).await);
        }
        let (pages, chunks) = ingest.await.expect("the folder was read");
        println!(
            "folder: {copies} files, {pages} pages, {chunks} passages, read and stored in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        let ((q50, q95), (b50, b95)) = (percentiles(quiet), percentiles(busy.clone()));
        println!(
            "a message beside it: p50 / p95 {q50:.1} / {q95:.1} ms before, {b50:.1} / {b95:.1} ms \
             while the folder is read ({} messages)",
            busy.len()
        );
        home.engram.folders().attach(&agent, &folder.id).unwrap();

        let plain = time_messages(&home, &mock, &agent, rounds, |_| vec![Reply::text("ok")]).await;
        let patterns = [
            "asn1_der_decoding",
            "DER",
            "ASN1_VALUE_NOT_FOUND",
            "^ *int +asn1_",
        ];
        let grep = time_messages(&home, &mock, &agent, rounds, |i| {
            vec![
                Reply::ToolCalls(vec![Call::new(
                    "grep_files",
                    json!({"pattern": patterns[i % patterns.len()], "context_lines": 1}),
                )]),
                Reply::text("ok"),
            ]
        })
        .await;
        let last = last_tool_results(&mock);
        let shown = last.last().expect("a tool result")["message"]
            .as_str()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        let queries = [
            "how do I decode a DER encoded structure",
            "error codes of the parser",
            "reading an ASN.1 definitions file",
            "what is the license of the library",
        ];
        let semantic = time_messages(&home, &mock, &agent, rounds, |i| {
            vec![
                Reply::ToolCalls(vec![Call::new(
                    "semantic_search_files",
                    json!({"query": queries[i % queries.len()], "limit": 5}),
                )]),
                Reply::text("ok"),
            ]
        })
        .await;

        // The store's side of `semantic_search_files` alone, by half: words, then vectors.
        let store = home.engram.store();
        let dims = engram_mock_llm::EMBEDDING_DIMS;
        let mut sides = Vec::new();
        for (side, words, vector) in [("words", true, false), ("vectors", false, true)] {
            let mut times = Vec::with_capacity(rounds);
            for i in 0..rounds {
                let q = queries[i % queries.len()];
                let v = engram_mock_llm::embed(q, dims);
                let started = Instant::now();
                let hits = store
                    .search_agent_files(
                        &agent,
                        if words { q } else { "" },
                        vector.then_some(("openai/mock-embed", v.as_slice())),
                        5,
                    )
                    .unwrap();
                times.push(started.elapsed());
                assert!(!hits.is_empty(), "{side}: nothing found for {q}");
            }
            sides.push((side, percentiles(times)));
        }

        let (p50, p95) = percentiles(plain);
        println!("\n| message in {rounds} rounds | p50 ms | p95 ms | the tool's own, p50 ms |");
        println!("|---|---|---|---|");
        println!("| no tool call | {p50:.1} | {p95:.1} | — |");
        for (name, times) in [("grep_files", grep), ("semantic_search_files", semantic)] {
            let (t50, t95) = percentiles(times);
            println!("| {name} | {t50:.1} | {t95:.1} | {:.1} |", t50 - p50);
        }
        for (side, (t50, t95)) in sides {
            println!(
                "| semantic_search_files' search by {side} alone (store) | {t50:.1} | {t95:.1} | |"
            );
        }
        println!("\nlast grep_files answer began: {shown}");
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!("load average at the end: {}", load.trim());
    });
}
