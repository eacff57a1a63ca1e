//! Engine benchmarks, as a report: `cargo bench --bench engine`.
//!
//! - backend time per agent step against a zero-latency scripted model (loopback HTTP included),
//! - archival insert rate, one passage per call, without embeddings,
//! - archival search latency at 100,000 passages,
//! - context compilation time for an agent with 10,000 messages in view,
//! - prompt tokens of a fresh agent's first call.

use engram_core::{LlmConfig, LoopStyle, NewAgent, NewMessage, NewPassage, Role, TagMatch};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_retrieval::HybridSearch;
use engram_store::{MessageQuery, PassageQuery};
use engram_suite::Home;
use engram_suite::corpus::{next, percentile, sentence, word};
use std::time::{Duration, Instant};

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

async fn step_time() -> (Duration, Duration) {
    let mock = MockLlm::start(Script::rules(|_| Reply::text("ok"))).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let mut times = Vec::new();
    for i in 0..300 {
        let started = Instant::now();
        home.chat(&agent, &format!("message {i}")).await;
        if i >= 20 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95))
}

/// A model that answers at once, in process: what is left of a step is Engram's own work.
struct InstantModel;

#[async_trait::async_trait]
impl engram_providers::ChatModel for InstantModel {
    async fn complete(
        &self,
        _req: &engram_providers::ChatRequest,
        _on_delta: &(dyn Fn(engram_providers::Delta) + Send + Sync),
    ) -> Result<engram_providers::ChatResponse, engram_providers::ProviderError> {
        Ok(engram_providers::ChatResponse {
            content: "ok".into(),
            ..Default::default()
        })
    }
}

struct InstantResolver;

impl engram_agent::ModelResolver for InstantResolver {
    fn chat_model(
        &self,
        _: &LlmConfig,
    ) -> engram_core::Result<std::sync::Arc<dyn engram_providers::ChatModel>> {
        Ok(std::sync::Arc::new(InstantModel))
    }
    fn embedder(
        &self,
        _: &engram_core::EmbeddingConfig,
    ) -> engram_core::Result<engram_agent::Embedder> {
        Err(engram_core::Error::invalid(
            "no embeddings in this benchmark",
        ))
    }
}

/// Engine time per step with the model call taking no time at all (no HTTP).
async fn engine_step_time() -> Duration {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let runtime = engram_agent::Runtime::new(
        home.engram.store().clone(),
        std::sync::Arc::new(InstantResolver),
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut times = Vec::new();
    for i in 0..300 {
        let started = Instant::now();
        runtime
            .run(
                &agent,
                NewMessage::user(format!("message {i}")),
                &tx,
                &cancel,
            )
            .await
            .expect("run");
        if i >= 20 {
            times.push(started.elapsed());
        }
        while rx.try_recv().is_ok() {}
    }
    times.sort();
    percentile(&times, 0.5)
}

async fn tool_step_time() -> Duration {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let mut times = Vec::new();
    for i in 0..200 {
        mock.push(Reply::ToolCalls(vec![Call::new(
            "archival_memory_insert",
            serde_json::json!({"content": sentence(i)}),
        )]));
        mock.push(Reply::text("saved"));
        let started = Instant::now();
        home.chat(&agent, &format!("remember {i}")).await;
        if i >= 20 {
            times.push(started.elapsed() / 2);
        }
    }
    times.sort();
    percentile(&times, 0.5)
}

fn archival(home: &Home, agent: &engram_core::AgentId) -> (f64, Duration, Duration) {
    let store = home.engram.store();
    let n = 20_000;
    let started = Instant::now();
    for i in 0..n {
        let p = NewPassage {
            text: sentence(i),
            ..NewPassage::default()
        };
        store.passages().insert(agent, &[p]).expect("insert");
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();

    // Fill up to 100k in batches, then search.
    for chunk in (n..100_000).collect::<Vec<_>>().chunks(1_000) {
        let batch: Vec<_> = chunk
            .iter()
            .map(|i| NewPassage {
                text: sentence(*i),
                ..NewPassage::default()
            })
            .collect();
        store
            .passages()
            .insert(agent, &batch)
            .expect("insert batch");
    }
    let mut times = Vec::new();
    for i in 0..300u64 {
        // Queries are 1–3 content words (vocabulary ranks 50–5,000), not stopwords.
        let mut x = i.wrapping_mul(0x9e3779b97f4a7c15) | 1;
        let words: Vec<String> = (0..1 + i % 3)
            .map(|_| word(50 + next(&mut x) % 4_950))
            .collect();
        let q = PassageQuery {
            query: words.join(" "),
            tags: Vec::new(),
            tag_match: TagMatch::Any,
            start: None,
            end: None,
            top_k: 5,
            embedding: None,
            include_superseded: false,
        };
        let started = Instant::now();
        let hits = store.search_passages(agent, &q).expect("search");
        times.push(started.elapsed());
        std::hint::black_box(hits);
    }
    times.sort();
    (rate, percentile(&times, 0.5), percentile(&times, 0.95))
}

fn recall_search(home: &Home, agent: &engram_core::AgentId) -> Duration {
    let mut times = Vec::new();
    for i in 0..200u64 {
        let q = MessageQuery {
            query: word(50 + i * 37 % 4_950),
            roles: vec![Role::User],
            start: None,
            end: None,
            limit: 10,
        };
        let started = Instant::now();
        // The lexical path: these agents have no embedding model.
        home.engram
            .store()
            .search_messages(agent, &q)
            .expect("search");
        times.push(started.elapsed());
    }
    times.sort();
    percentile(&times, 0.5)
}

async fn context_compile(home: &Home, agent: &engram_core::AgentId) -> Duration {
    let store = home.engram.store();
    for chunk in (0..10_000u64).collect::<Vec<_>>().chunks(500) {
        let batch: Vec<_> = chunk
            .iter()
            .map(|i| {
                if i % 2 == 0 {
                    NewMessage::user(sentence(*i))
                } else {
                    NewMessage::assistant(sentence(*i), None, Vec::new())
                }
            })
            .collect();
        store.messages().append(agent, &batch).expect("append");
    }
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let b = home
            .engram
            .agents()
            .context_breakdown(agent)
            .await
            .expect("context");
        times.push(started.elapsed());
        assert!(b.messages > 0);
    }
    times.sort();
    percentile(&times, 0.5)
}

async fn first_call_tokens(home: &Home, style: LoopStyle) -> engram_agent::ContextBreakdown {
    let agent = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Fresh".into(),
            llm: Some(LlmConfig::new("openai/gpt-4o-mini")),
            loop_style: style,
            ..NewAgent::default()
        })
        .await
        .expect("create")
        .agent
        .id;
    home.engram
        .agents()
        .context_breakdown(&agent)
        .await
        .expect("context")
}

fn main() {
    // `cargo bench` passes --bench; a filter argument is not supported by this report.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        eprintln!("steps…");
        let engine_step = engine_step_time().await;
        let (step_p50, step_p95) = step_time().await;
        let tool_step = tool_step_time().await;
        eprintln!("archival…");
        let home = Home::new();
        let mock = MockLlm::start(Script::Queue).await;
        let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
        let (rate, search_p50, search_p95) = archival(&home, &agent);
        eprintln!("context…");
        let compile = context_compile(&home, &agent).await;
        let recall = recall_search(&home, &agent);
        let tool_loop = first_call_tokens(&home, LoopStyle::ToolLoop).await;
        let classic = first_call_tokens(&home, LoopStyle::Classic).await;

        println!("| measure | result | target |");
        println!("|---|---|---|");
        println!("| backend time per step, in-process instant model (p50) | {} | ≤ 3 ms |", ms(engine_step));
        println!("| time per step over loopback HTTP to the scripted server, reply only (p50 / p95) | {} / {} | — |", ms(step_p50), ms(step_p95));
        println!("| time per step over loopback HTTP, tool call + reply (p50) | {} | — |", ms(tool_step));
        println!("| archival insert, one passage per call | {rate:.0} /s | ≥ 5,000 /s |");
        println!("| archival search at 100k passages (p50 / p95) | {} / {} | ≤ 5 ms p50 |", ms(search_p50), ms(search_p95));
        println!("| recall search at 10k messages (p50) | {} | — |", ms(recall));
        println!("| context compilation, 10k messages in view (p50) | {} | — |", ms(compile));
        println!(
            "| first-call prompt tokens, tool loop (system / memory / tools / total) | {} / {} / {} / {} | < 2,000 (Letta ~3,900) |",
            tool_loop.system, tool_loop.core_memory, tool_loop.tools, tool_loop.total
        );
        println!(
            "| first-call prompt tokens, classic (system / memory / tools / total) | {} / {} / {} / {} | < 2,000 |",
            classic.system, classic.core_memory, classic.tools, classic.total
        );
    });
}
