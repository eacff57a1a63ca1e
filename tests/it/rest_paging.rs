//! `GET /v1/agents/{id}/archival-memory` paged in SQL, over real HTTP against the
//! real router: Letta's cursors (`after`, `before`), `limit`, both orders in both spellings
//! (`ascending`, `order`), Engram's `offset`, tag and date filters, empty pages at either end,
//! and Letta-shaped 4xx for parameters that do not fit.

use engram_mock_llm::Script;
use engram_suite::rest::RestApi;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// An agent with 12 passages `p0` … `p11` added in order; `p0`, `p3`, `p6`, `p9` are tagged
/// `three`, the even ones `even`. Returns the agent and the passage ids in insertion order.
async fn archive(api: &RestApi) -> (String, Vec<String>) {
    let id = api.agent("Archivist", vec![], json!({})).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let mut tags = Vec::new();
        if i % 3 == 0 {
            tags.push("three");
        }
        if i % 2 == 0 {
            tags.push("even");
        }
        let made = api
            .ok(
                Method::POST,
                &format!("/v1/agents/{id}/archival-memory"),
                Some(json!({"text": format!("p{i}"), "tags": tags})),
            )
            .await;
        ids.push(made[0]["id"].as_str().unwrap().to_owned());
    }
    (id, ids)
}

async fn texts(api: &RestApi, agent: &str, query: &str) -> Vec<String> {
    let listed = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{agent}/archival-memory?{query}"),
            None,
        )
        .await;
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect()
}

fn names(range: impl Iterator<Item = usize>) -> Vec<String> {
    range.map(|i| format!("p{i}")).collect()
}

#[tokio::test]
async fn both_orders_cursors_and_offsets_page_the_whole_archive() {
    let api = RestApi::start(Script::Brain).await;
    let (a, ids) = archive(&api).await;
    // Oldest first by default (Letta's `ascending=true`), Letta's default limit.
    assert_eq!(texts(&api, &a, "").await, names(0..12));
    assert_eq!(texts(&api, &a, "limit=3").await, names(0..3));
    for newest_first in ["order=desc", "ascending=false", "order=DESC&ascending=true"] {
        assert_eq!(
            texts(&api, &a, &format!("{newest_first}&limit=4")).await,
            names((8..12).rev()),
            "{newest_first}"
        );
    }
    // Forward with `after` until an empty page, as the 1.x SDKs page, in both orders.
    for (order, all) in [("asc", names(0..12)), ("desc", names((0..12).rev()))] {
        let mut seen: Vec<String> = Vec::new();
        let mut after = String::new();
        loop {
            let page = api
                .ok(
                    Method::GET,
                    &format!("/v1/agents/{a}/archival-memory?order={order}&limit=5{after}"),
                    None,
                )
                .await;
            let page = page.as_array().unwrap();
            if page.is_empty() {
                break;
            }
            after = format!("&after={}", page.last().unwrap()["id"].as_str().unwrap());
            seen.extend(page.iter().map(|p| p["text"].as_str().unwrap().to_owned()));
        }
        assert_eq!(seen, all, "order={order}");
    }
    // `before` answers the page nearest the cursor; before the first passage, nothing.
    let before = format!("before={}&limit=3", ids[6]);
    assert_eq!(texts(&api, &a, &before).await, names(3..6));
    let before_desc = format!("before={}&limit=3&order=desc", ids[6]);
    assert_eq!(texts(&api, &a, &before_desc).await, names((7..10).rev()));
    assert!(
        texts(&api, &a, &format!("before={}", ids[0]))
            .await
            .is_empty()
    );
    let between = format!("after={}&before={}", ids[2], ids[5]);
    assert_eq!(texts(&api, &a, &between).await, names(3..5));
    // Offsets from either end: the last page newest first holds the oldest passages.
    assert_eq!(
        texts(&api, &a, "order=desc&limit=5&offset=10").await,
        names((0..2).rev())
    );
    assert_eq!(texts(&api, &a, "limit=5&offset=5").await, names(5..10));
    assert!(texts(&api, &a, "offset=12").await.is_empty());
    assert!(texts(&api, &a, "limit=0").await.is_empty());
}

#[tokio::test]
async fn tag_and_date_filters_run_before_the_limit() {
    let api = RestApi::start(Script::Brain).await;
    let (a, _) = archive(&api).await;
    assert_eq!(
        texts(&api, &a, "tags=three&limit=3").await,
        ["p0", "p3", "p6"]
    );
    assert_eq!(
        texts(&api, &a, "tags=three&tags=even&tag_match_mode=all").await,
        ["p0", "p6"]
    );
    assert_eq!(
        texts(&api, &a, "tags=three&tags=even&order=desc&limit=3").await,
        ["p10", "p9", "p8"]
    );
    assert_eq!(texts(&api, &a, "search=p1").await, ["p1", "p10", "p11"]);
    // Every passage was written just now: a window in the past or future holds none.
    assert!(
        texts(&api, &a, "end_datetime=2001-01-01T00:00:00Z")
            .await
            .is_empty()
    );
    assert!(
        texts(&api, &a, "start_datetime=2999-01-01T00:00:00Z")
            .await
            .is_empty()
    );
    assert_eq!(
        texts(&api, &a, "start_datetime=2001-01-01T00:00:00Z&limit=2").await,
        ["p0", "p1"]
    );
    // A backdated passage (Letta's `created_at`) sorts and filters by its own date.
    let old = api
        .ok(
            Method::POST,
            &format!("/v1/agents/{a}/archival-memory"),
            Some(json!({"text": "old note", "created_at": "2020-05-05T12:00:00Z"})),
        )
        .await;
    let when = old[0]["created_at"].as_str().unwrap_or_default();
    assert!(when.starts_with("2020-05-05T12:00:00"), "{old}");
    assert_eq!(texts(&api, &a, "limit=1").await, ["old note"]);
    assert_eq!(
        texts(
            &api,
            &a,
            "start_datetime=2020-05-05T00:00:00Z&end_datetime=2020-05-06T00:00:00Z"
        )
        .await,
        ["old note"]
    );
}

#[tokio::test]
async fn parameters_that_do_not_fit_are_letta_shaped_errors() {
    let api = RestApi::start(Script::Brain).await;
    let (a, _) = archive(&api).await;
    for (query, status) in [
        ("limit=-1", StatusCode::UNPROCESSABLE_ENTITY),
        ("limit=ten", StatusCode::UNPROCESSABLE_ENTITY),
        ("offset=-5", StatusCode::UNPROCESSABLE_ENTITY),
        ("order=sideways", StatusCode::UNPROCESSABLE_ENTITY),
        ("ascending=maybe", StatusCode::UNPROCESSABLE_ENTITY),
        ("tag_match_mode=some", StatusCode::UNPROCESSABLE_ENTITY),
        ("start_datetime=yesterday", StatusCode::UNPROCESSABLE_ENTITY),
        (
            "start_datetime=2030-01-01T00:00:00Z&end_datetime=2020-01-01T00:00:00Z",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        ("after=passage-unknown", StatusCode::NOT_FOUND),
        ("before=passage-unknown", StatusCode::NOT_FOUND),
    ] {
        let (got, body) = api
            .call(
                Method::GET,
                &format!("/v1/agents/{a}/archival-memory?{query}"),
                None,
            )
            .await;
        assert_eq!(got, status, "{query}: {body}");
        assert!(
            body["detail"].is_string(),
            "{query}: not Letta-shaped: {body}"
        );
    }
    // Another agent's passage is no cursor into this archive.
    let (b, b_ids) = archive(&api).await;
    let (got, body): (StatusCode, Value) = api
        .call(
            Method::GET,
            &format!("/v1/agents/{a}/archival-memory?after={}", b_ids[0]),
            None,
        )
        .await;
    assert_eq!(got, StatusCode::NOT_FOUND, "{body}");
    let (got, _) = api
        .call(
            Method::GET,
            "/v1/agents/agent-missing/archival-memory?limit=5",
            None,
        )
        .await;
    assert_eq!(got, StatusCode::NOT_FOUND);
    assert_eq!(texts(&api, &b, "limit=1").await, ["p0"]);
}

/// The `name` of every item of a JSON list.
fn field(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn agents_and_blocks_page_in_sql_in_both_orders() {
    let api = RestApi::start(Script::Brain).await;
    let mut ids = Vec::new();
    for i in 0..7 {
        let tags = if i % 2 == 0 {
            json!(["even"])
        } else {
            json!(["odd"])
        };
        let blocks = vec![json!({"label": format!("note{i}"), "value": "x"})];
        ids.push(
            api.agent(&format!("Walker {i}"), blocks, json!({"tags": tags}))
                .await,
        );
    }
    let names = |v: &Value| field(v, "name");
    let get = |q: String| {
        let api = &api;
        async move { api.ok(Method::GET, &format!("/v1/agents/?{q}"), None).await }
    };
    let all: Vec<String> = (0..7).map(|i| format!("Walker {i}")).collect();
    assert_eq!(names(&get("limit=3".into()).await), all[..3]);
    assert_eq!(
        names(&get("order=desc&limit=2".into()).await),
        ["Walker 6", "Walker 5"]
    );
    // Forward with `after` to the end, newest first.
    let mut seen = Vec::new();
    let mut q = "order=desc&limit=3".to_owned();
    loop {
        let page = get(q.clone()).await;
        if page.as_array().unwrap().is_empty() {
            break;
        }
        let last = field(&page, "id").pop().unwrap();
        seen.extend(names(&page));
        q = format!("order=desc&limit=3&after={last}");
    }
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(seen, reversed);
    assert_eq!(
        names(&get(format!("before={}&limit=2", ids[4])).await),
        ["Walker 2", "Walker 3"]
    );
    assert_eq!(
        names(&get("tags=even&limit=2&order=desc".into()).await),
        ["Walker 6", "Walker 4"]
    );
    assert_eq!(
        names(&get("query_text=WALKER 3".into()).await),
        ["Walker 3"]
    );
    assert_eq!(names(&get("name=Walker 5".into()).await), ["Walker 5"]);
    assert!(
        get("after=agent-unknown".into())
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );
    let count = api.ok(Method::GET, "/v1/agents/count?tags=odd", None).await;
    assert_eq!(count, json!(3));

    // Every block: by label, both orders, cursors.
    let labels = |v: &Value| field(v, "label");
    let blocks = api.ok(Method::GET, "/v1/blocks/?limit=100", None).await;
    let every = labels(&blocks);
    let notes: Vec<&String> = every.iter().filter(|l| l.starts_with("note")).collect();
    assert_eq!(notes.len(), 7, "{every:?}");
    let first_two = api.ok(Method::GET, "/v1/blocks/?limit=2", None).await;
    assert_eq!(labels(&first_two), every[..2]);
    let newest = api
        .ok(Method::GET, "/v1/blocks/?order=desc&limit=1", None)
        .await;
    assert_eq!(labels(&newest), [every.last().unwrap().clone()]);
    let after = field(&first_two, "id").pop().unwrap();
    let next = api
        .ok(
            Method::GET,
            &format!("/v1/blocks/?limit=2&after={after}"),
            None,
        )
        .await;
    assert_eq!(labels(&next), every[2..4]);
    let before = field(&next, "id").pop().unwrap();
    let back = api
        .ok(
            Method::GET,
            &format!("/v1/blocks/?limit=2&before={before}"),
            None,
        )
        .await;
    assert_eq!(labels(&back), every[1..3]);
    let by_label = api.ok(Method::GET, "/v1/blocks/?label=note3", None).await;
    assert_eq!(labels(&by_label), ["note3"]);
}
