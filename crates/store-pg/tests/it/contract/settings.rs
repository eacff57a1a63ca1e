//! Providers and app settings: a provider is replaced whole and found by name, removing a
//! missing one is "not found", settings are replaced by key, and a prefix is plain characters
//! in byte order on both backends; a model's price is replaced whole and checked.

use super::code;
use crate::harness::{Harness, on_both_backends};
use engram_core::{ModelPrice, PriceSource};
use engram_store_api::{ProviderRow, SettingStore};

on_both_backends!(
    providers_are_replaced_whole_and_listed_by_name,
    settings_are_replaced_by_key_and_listed_by_plain_prefix,
    model_prices_are_replaced_by_model_and_checked,
);

fn provider(name: &str, kind: &str, base_url: Option<&str>) -> ProviderRow {
    ProviderRow {
        name: name.into(),
        kind: kind.into(),
        base_url: base_url.map(Into::into),
        default_model: None,
    }
}

async fn providers_are_replaced_whole_and_listed_by_name<H: Harness>(h: H) {
    let b = h.backend();
    assert_eq!(b.list_providers().await.unwrap(), []);
    let ollama = provider("ollama", "openai", Some("http://127.0.0.1:11434/v1"));
    b.upsert_provider(&ollama).await.unwrap();
    b.upsert_provider(&provider("anthropic", "anthropic", None))
        .await
        .unwrap();
    // Uppercase sorts before lowercase in byte order, whatever the database's collation.
    b.upsert_provider(&provider("Zed", "openai", None))
        .await
        .unwrap();
    assert_eq!(b.get_provider("ollama").await.unwrap(), ollama);

    // A replace takes every field, the unset ones too.
    let mut moved = provider("ollama", "openai", None);
    moved.default_model = Some("ollama/llama3.2".into());
    b.upsert_provider(&moved).await.unwrap();
    assert_eq!(b.get_provider("ollama").await.unwrap(), moved);

    let names: Vec<_> = b
        .list_providers()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["Zed", "anthropic", "ollama"]);

    assert_eq!(
        code(b.upsert_provider(&provider(" ", "openai", None)).await),
        "invalid_input"
    );
    assert_eq!(
        code(b.upsert_provider(&provider("x", "", None)).await),
        "invalid_input"
    );
    assert_eq!(code(b.get_provider("nobody").await), "not_found");
    b.delete_provider("anthropic").await.unwrap();
    assert_eq!(code(b.delete_provider("anthropic").await), "not_found");
    assert_eq!(b.list_providers().await.unwrap().len(), 2);
}

async fn settings_are_replaced_by_key_and_listed_by_plain_prefix<H: Harness>(h: H) {
    let b = h.backend();
    assert_eq!(b.get_setting("default_model").await.unwrap(), None);
    b.set_setting("default_model", "openai/gpt-4o-mini")
        .await
        .unwrap();
    b.set_setting("default_model", "ollama/llama3.2")
        .await
        .unwrap();
    assert_eq!(
        b.get_setting("default_model").await.unwrap().as_deref(),
        Some("ollama/llama3.2")
    );

    for (key, value) in [
        ("window:openai/b", "128000"),
        ("window:openai/A", "8192"),
        ("window_x", "not a window"),
        ("windowsill", "neither"),
        ("price:openai/b", "0.15"),
    ] {
        b.set_setting(key, value).await.unwrap();
    }
    let windows = b.settings_with_prefix("window:").await.unwrap();
    assert_eq!(
        windows,
        [
            ("window:openai/A".to_owned(), "8192".to_owned()),
            ("window:openai/b".to_owned(), "128000".to_owned()),
        ]
    );
    // `_` and `%` are themselves, not patterns.
    let under: Vec<_> = b
        .settings_with_prefix("window_")
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(under, ["window_x"]);
    assert_eq!(b.settings_with_prefix("%").await.unwrap(), []);
    assert_eq!(b.settings_with_prefix("").await.unwrap().len(), 6);
}

fn price(model: &str, input: f64, output: f64) -> ModelPrice {
    ModelPrice {
        model: model.into(),
        input_per_mtok: input,
        output_per_mtok: output,
        source: PriceSource::User,
    }
}

async fn model_prices_are_replaced_by_model_and_checked<H: Harness>(h: H) {
    let b = h.backend();
    assert_eq!(b.model_prices().await.unwrap(), []);
    b.set_model_price(&price("openai/gpt-4o-mini", 0.15, 0.6))
        .await
        .unwrap();
    // A price read back is the user's, whatever source the caller gave; the model is trimmed.
    b.set_model_price(&ModelPrice {
        source: PriceSource::Builtin,
        ..price(" local/qwen ", 0.0, 0.0)
    })
    .await
    .unwrap();
    b.set_model_price(&price("Zed/x", 1.25, 2.5)).await.unwrap();
    b.set_model_price(&price("openai/gpt-4o-mini", 0.2, 0.8))
        .await
        .unwrap();
    assert_eq!(
        b.model_prices().await.unwrap(),
        [
            price("Zed/x", 1.25, 2.5),
            price("local/qwen", 0.0, 0.0),
            price("openai/gpt-4o-mini", 0.2, 0.8),
        ],
        "by model in byte order, replaced in place"
    );
    for bad in [
        price("  ", 1.0, 1.0),
        price("a/b", -0.01, 0.0),
        price("a/b", 0.0, f64::NAN),
        price("a/b", f64::INFINITY, 0.0),
    ] {
        assert_eq!(
            code(b.set_model_price(&bad).await),
            "invalid_input",
            "{bad:?}"
        );
    }
    assert!(b.delete_model_price("Zed/x").await.unwrap());
    assert!(!b.delete_model_price("Zed/x").await.unwrap());
    assert_eq!(b.model_prices().await.unwrap().len(), 2);
}
