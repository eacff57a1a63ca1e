//! Browsing a 100,000-passage archive, as a report: `cargo bench --bench archive`.
//!
//! One agent with 100k passages (one a minute, so they span ~70 days; every 10th tagged
//! `weekly`), served over loopback HTTP by the real router. Each case is one request's round
//! trip (reqwest → axum → SQLite → JSON): Letta's `GET /v1/agents/{id}/archival-memory` pages
//! and the window's `/app/list_passages` pages, which also count the filtered total.
//! A page is read in SQL, so its cost does not grow with the archive (reading every row and
//! paging in memory took hundreds of ms at this size).

use chrono::{Duration as Days, TimeZone, Utc};
use engram_core::{LoopStyle, NewPassage};
use engram_mock_llm::{MockLlm, Script};
use engram_server::{Auth, ServerConfig};
use engram_suite::Home;
use engram_suite::corpus::percentile;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PASSAGES: u64 = 100_000;
const ROUNDS: usize = 200;

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// p50 and p95 of `ROUNDS` runs of `once` (after a few to warm up).
async fn measure<F, Fut>(mut once: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    for _ in 0..10 {
        once().await;
    }
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        times.push(once().await);
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95))
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// One GET's round trip; asserts it answered `rows` passages.
    async fn get(&self, path: &str, rows: usize) -> Duration {
        let started = Instant::now();
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth("bench")
            .send()
            .await
            .expect("send");
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        let v: Value = resp.json().await.expect("json");
        let took = started.elapsed();
        assert_eq!(v.as_array().map(Vec::len), Some(rows), "{path}");
        took
    }

    /// One `/app/list_passages` round trip; asserts the page's size.
    async fn app(&self, args: &Value, rows: usize) -> Duration {
        let started = Instant::now();
        let resp = self
            .http
            .post(format!("{}/app/list_passages", self.base))
            .bearer_auth("bench")
            .json(args)
            .send()
            .await
            .expect("send");
        assert!(resp.status().is_success(), "{args}: {}", resp.status());
        let v: Value = resp.json().await.expect("json");
        let took = started.elapsed();
        assert_eq!(v["passages"].as_array().map(Vec::len), Some(rows), "{args}");
        took
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mock = MockLlm::start(Script::Queue).await;
        let home = Home::new();
        let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
        eprintln!("filling {PASSAGES} passages…");
        let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let store = home.engram.store();
        let ids: Vec<u64> = (0..PASSAGES).collect();
        let mut middle = None;
        for chunk in ids.chunks(2_000) {
            let batch: Vec<NewPassage> = chunk
                .iter()
                .map(|i| NewPassage {
                    text: format!("Note {i}: what happened that minute."),
                    tags: if i % 10 == 0 {
                        vec!["weekly".into()]
                    } else {
                        Vec::new()
                    },
                    created_at: Some(start + Days::minutes(*i as i64)),
                    embedding: None,
                })
                .collect();
            let stored = store.passages().insert(&agent, &batch).expect("insert");
            if chunk[0] == PASSAGES / 2 {
                middle = Some(stored[0].id.clone());
            }
        }
        let middle = middle.expect("a middle passage");
        let engram = engram_suite::open(
            home.path(),
            Arc::new(engram_secrets::MemoryStore::default()),
        );
        let config = ServerConfig::new(Auth::Token(secrecy::SecretString::from("bench")));
        let c = Client {
            http: reqwest::Client::new(),
            base: engram_suite::serve(engram, config).await,
        };
        let list = format!("/v1/agents/{agent}/archival-memory");
        let day = (start + Days::days(40)).to_rfc3339();
        let rest: Vec<(&str, String, usize)> = vec![
            ("`?limit=10` (oldest first)", format!("{list}?limit=10"), 10),
            (
                "`?order=desc&limit=10`",
                format!("{list}?order=desc&limit=10"),
                10,
            ),
            (
                "`?after=<50,000th>&limit=10`",
                format!("{list}?after={middle}&limit=10"),
                10,
            ),
            (
                "`?offset=99990&limit=10` (last page)",
                format!("{list}?order=desc&offset=99990&limit=10"),
                10,
            ),
            (
                "`?tags=weekly&limit=10`",
                format!("{list}?tags=weekly&limit=10"),
                10,
            ),
        ];
        let app_page = |extra: Value| {
            let mut l = json!({"offset": 0, "limit": 10, "ascending": false});
            l.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"agent_id": agent, "list": l})
        };
        let app: Vec<(&str, Value, usize)> = vec![
            ("first page, with the total", app_page(json!({})), 10),
            (
                "last page (page 10,000)",
                app_page(json!({"offset": 99_990})),
                10,
            ),
            ("jump to a date (day 40)", app_page(json!({"at": day})), 10),
            (
                "tag filter, filtered total",
                app_page(json!({"tags": ["weekly"]})),
                10,
            ),
            (
                "tag filter, last page (page 1,000)",
                app_page(json!({"tags": ["weekly"], "offset": 9_990})),
                10,
            ),
            (
                "tag filter and a one-day range, filtered total",
                app_page(json!({"tags": ["weekly"], "start": day, "end": (start + Days::days(41)).to_rfc3339()})),
                10,
            ),
            (
                "two tags (any), filtered total",
                app_page(json!({"tags": ["weekly", "none"], "tag_match": "any"})),
                10,
            ),
            (
                "date range (one day), filtered total",
                app_page(json!({"start": day, "end": (start + Days::days(41)).to_rfc3339()})),
                10,
            ),
        ];

        println!(
            "Archive of {PASSAGES} passages, pages of 10, loopback HTTP round trip (n = {ROUNDS}):"
        );
        println!();
        println!("| request | p50 | p95 |");
        println!("|---|---|---|");
        for (name, path, rows) in &rest {
            let (p50, p95) = measure(|| c.get(path, *rows)).await;
            println!("| REST {name} | {} | {} |", ms(p50), ms(p95));
        }
        for (name, args, rows) in &app {
            let (p50, p95) = measure(|| c.app(args, *rows)).await;
            println!(
                "| `/app/list_passages` {name} | {} | {} |",
                ms(p50),
                ms(p95)
            );
        }
    });
}
