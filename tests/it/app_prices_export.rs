//! Prices, cost and exports over the UI's HTTP transport (`/app/…`, real HTTP, scripted
//! model): model prices (built-in table, the user's own over it, bad prices refused), the cost
//! of a run and of an agent from its stored steps, and exports of one agent or all in each
//! format, with the file name to save under.

use engram_core::{EmbeddingConfig, LoopStyle};
use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

struct App {
    base: String,
    http: reqwest::Client,
    home: engram_suite::Home,
    mock: MockLlm,
}

impl App {
    async fn start() -> App {
        let mock = MockLlm::start(Script::Brain).await;
        let home = engram_suite::Home::new();
        // A second engine on the same files serves HTTP; the first makes agents and chats.
        let engram = engram_suite::open(home.path(), Arc::new(MemoryStore::default()));
        let base = engram_suite::serve(engram, ServerConfig::new(Auth::Disabled)).await;
        App {
            base,
            http: reqwest::Client::new(),
            home,
            mock,
        }
    }

    async fn call(&self, command: &str, args: Value) -> (StatusCode, Value) {
        let resp = self
            .http
            .post(format!("{}/app/{command}", self.base))
            .json(&args)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn ok(&self, command: &str, args: Value) -> Value {
        let (status, v) = self.call(command, args).await;
        assert_eq!(status, StatusCode::OK, "{command}: {v}");
        v
    }
}

#[tokio::test]
async fn prices_price_runs_and_agents_from_their_steps() {
    let app = App::start().await;
    let prices = app.ok("model_prices", json!({})).await;
    let mini = prices
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["model"] == "openai/gpt-4o-mini")
        .expect("a built-in price");
    assert_eq!(mini["source"], "builtin");

    let a = app.home.agent(&app.mock, LoopStyle::Classic).await;
    let (first, _) = app.home.chat(&a, "my name is Bob").await;
    app.home.chat(&a, "what is my name?").await;

    // No price for the scripted model yet: tokens, but no made-up cost.
    let u = app.ok("usage_cost", json!({"agent_id": a})).await;
    assert_eq!(u["cost_usd"], Value::Null);
    assert_eq!(u["unpriced_models"], json!(["openai/mock-small"]));
    assert!(u["prompt_tokens"].as_u64().unwrap() > 0);

    let price = json!({"model": "openai/mock-small", "input_per_mtok": 2.0,
                       "output_per_mtok": 8.0, "source": "user"});
    app.ok("set_model_price", json!({"price": price})).await;
    let steps = app.home.engram.store().runs().list_steps(&a, None).unwrap();
    let expect = |steps: &[engram_core::Step]| {
        steps
            .iter()
            .map(|s| (s.prompt_tokens as f64 * 2.0 + s.completion_tokens as f64 * 8.0) / 1e6)
            .sum::<f64>()
    };
    let u = app.ok("usage_cost", json!({"agent_id": a})).await;
    assert!(
        (u["cost_usd"].as_f64().unwrap() - expect(&steps)).abs() < 1e-12,
        "{u}"
    );
    assert_eq!(u["step_count"], steps.len());
    assert_eq!(u["unpriced_models"], json!([]));

    // One run: only its steps.
    let run_steps: Vec<_> = steps
        .iter()
        .filter(|s| s.run_id == first.run_id)
        .cloned()
        .collect();
    assert!(!run_steps.is_empty() && run_steps.len() < steps.len());
    let r = app
        .ok("usage_cost", json!({"agent_id": a, "run_id": first.run_id}))
        .await;
    assert!((r["cost_usd"].as_f64().unwrap() - expect(&run_steps)).abs() < 1e-12);

    // A user's price of a built-in model wins; removing it brings the built-in one back.
    let mine = json!({"model": "openai/gpt-4o-mini", "input_per_mtok": 0.2,
                      "output_per_mtok": 0.9, "source": "user"});
    app.ok("set_model_price", json!({"price": mine})).await;
    let find = |ps: &Value| {
        ps.as_array()
            .unwrap()
            .iter()
            .find(|p| p["model"] == "openai/gpt-4o-mini")
            .cloned()
            .unwrap()
    };
    assert_eq!(
        find(&app.ok("model_prices", json!({})).await)["source"],
        "user"
    );
    assert_eq!(
        app.ok("delete_model_price", json!({"model": "openai/gpt-4o-mini"}))
            .await,
        true
    );
    let back = find(&app.ok("model_prices", json!({})).await);
    assert_eq!(
        (back["source"].clone(), back["input_per_mtok"].clone()),
        (json!("builtin"), json!(0.15))
    );

    // Bad prices are refused with a reason and change nothing.
    let bad = json!({"model": "openai/mock-small", "input_per_mtok": -1.0,
                     "output_per_mtok": 8.0, "source": "user"});
    let (status, e) = app.call("set_model_price", json!({"price": bad})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(e["code"], "invalid_input");
    assert!(
        e["message"].as_str().unwrap().contains("input price"),
        "{e}"
    );
    let (status, _) = app
        .call(
            "usage_cost",
            json!({"agent_id": "agent-00000000-0000-0000-0000-000000000000"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn exports_come_with_a_file_name_in_every_format() {
    let app = App::start().await;
    let (status, e) = app.call("export_agents", json!({"format": "af"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no agent yet: {e}");

    let sam = app
        .home
        .agent_with(&app.mock, LoopStyle::ToolLoop, |n| {
            n.name = "Travel planner 1".into();
            n.embedding = Some(EmbeddingConfig {
                model: "openai/text-embedding-3-small".into(),
                base_url: Some(app.mock.base_url()),
            });
        })
        .await;
    let kim = app
        .home
        .agent_with(&app.mock, LoopStyle::ToolLoop, |n| {
            n.name = "Kim".into();
        })
        .await;
    app.home.chat(&sam, "hello there").await;

    let one = app
        .ok("export_agents", json!({"agent_ids": [sam], "format": "af"}))
        .await;
    assert_eq!(one["file_name"], "Travel_planner_1.af");
    let file: Value = serde_json::from_str(one["contents"].as_str().unwrap()).unwrap();
    assert_eq!(file["agents"].as_array().unwrap().len(), 1);
    assert!(
        !file["engram"]["agents"]["agent-0"]["steps"]
            .as_array()
            .unwrap()
            .is_empty(),
        "the export carries the usage history"
    );

    let all = app.ok("export_agents", json!({"format": "markdown"})).await;
    let name = all["file_name"].as_str().unwrap();
    assert!(
        name.starts_with("engram-agents-") && name.ends_with(".md"),
        "{name}"
    );
    let md = all["contents"].as_str().unwrap();
    assert!(
        md.contains("# Travel planner 1") && md.contains("# Kim"),
        "{md}"
    );

    let report = app
        .ok(
            "export_agents",
            json!({"agent_ids": [kim], "format": "json"}),
        )
        .await;
    assert_eq!(report["file_name"], "Kim.report.json");
    let v: Value = serde_json::from_str(report["contents"].as_str().unwrap()).unwrap();
    assert!(v["note"].as_str().unwrap().contains("read-only report"));

    // The .af export imports back; the report is refused, saying what it is.
    let (status, imported) = app
        .call(
            "import_agent_file",
            json!({"contents": one["contents"], "file_name": "Travel_planner_1.af"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{imported}");
    let (status, e) = app
        .call(
            "import_agent_file",
            json!({"contents": report["contents"], "file_name": "Kim.report.json"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        e["message"].as_str().unwrap().contains("read-only report"),
        "{e}"
    );

    let (status, _) = app.call("export_agents", json!({"format": "pdf"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[test]
fn an_export_is_written_where_the_dialog_said_and_a_file_imports_by_path() {
    let home = engram_suite::Home::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockLlm::start(Script::Brain));
    let a = runtime.block_on(home.agent(&mock, LoopStyle::ToolLoop));
    runtime.block_on(async {
        let path = home.path().join("chosen.af");
        let written = home
            .engram
            .agent_files()
            .export_all_to(Some(&[a]), engram_service::ExportFormat::Af, &path)
            .await
            .unwrap();
        assert_eq!(written, path);
        let report = home.engram.agent_files().import_at(&path).await.unwrap();
        assert_eq!(report.file_name, "chosen.af");
        assert_eq!(report.agents.len(), 1);

        // Errors name the file.
        std::fs::write(
            home.path().join("bad.af"),
            "{\"agents\": [{\"messages\": 7}]}",
        )
        .unwrap();
        let e = home
            .engram
            .agent_files()
            .import_at(&home.path().join("bad.af"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.af"), "{e}");
        let e = home
            .engram
            .agent_files()
            .import_at(&home.path().join("missing.af"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read missing.af"), "{e}");
        let e = home
            .engram
            .agent_files()
            .export_all_to(
                None,
                engram_service::ExportFormat::Af,
                &home.path().join("no/such/dir/x.af"),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot write"), "{e}");
    });
}
