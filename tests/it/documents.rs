//! Folders end to end on real documents the project did not write — Debian's libtasn1 manual
//! (PDF) and base-passwd's guide (HTML), and a DOCX made by docx-rs: create a folder, add the
//! files, attach it, and the scripted model calls each file tool; the results hold the right
//! text with its page or line, the compiled context shows the open file, closing works.

use crate::documents_made;
use engram_core::{AgentId, EmbeddingConfig, FileStatus, FolderId, LoopStyle, NewFolder};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, last_tool_results};
use serde_json::{Value, json};

const PDF: &str = "/usr/share/doc/libtasn1-doc/libtasn1.pdf";
const HTML: &str = "/usr/share/doc/base-passwd/users-and-groups.html";

fn embedding(mock: &MockLlm) -> EmbeddingConfig {
    EmbeddingConfig {
        model: "openai/mock-embed".into(),
        base_url: Some(mock.base_url()),
    }
}

/// A home with agent Sam and folder "manuals" (the three documents) attached.
async fn setup(mock: &MockLlm) -> (Home, AgentId, FolderId) {
    let home = Home::new();
    let agent = home
        .agent_with(mock, LoopStyle::ToolLoop, |a| {
            a.embedding = Some(embedding(mock));
        })
        .await;
    let folder = home
        .engram
        .folders()
        .create(NewFolder {
            name: "manuals".into(),
            embedding: Some(embedding(mock)),
            ..NewFolder::default()
        })
        .unwrap();
    let docx = documents_made::docx(
        "Field notes",
        &[
            "The grey heron nests in tall alder trees by the lake.",
            "Kingfishers dig tunnels in the sandy bank.",
        ],
    );
    for (name, bytes) in [
        (
            "libtasn1.pdf",
            std::fs::read(PDF).expect("libtasn1-doc is installed"),
        ),
        (
            "users-and-groups.html",
            std::fs::read(HTML).expect("base-passwd docs"),
        ),
        ("notes.docx", docx),
    ] {
        let added = home
            .engram
            .folders()
            .add_file(&folder.id, name, bytes)
            .await
            .unwrap();
        let file = added.file.unwrap();
        assert_eq!(
            file.status,
            FileStatus::Completed,
            "{name}: {:?}",
            file.error
        );
        assert!(file.chunks > 0, "{name}");
    }
    home.engram.folders().attach(&agent, &folder.id).unwrap();
    (home, agent, folder.id)
}

/// The line (1-based) and page of the first line of the PDF holding `needle`.
fn pdf_line(home: &Home, folder: &FolderId, needle: &str) -> (u32, u32) {
    let file = home
        .engram
        .folders()
        .files(folder)
        .unwrap()
        .into_iter()
        .find(|f| f.name == "libtasn1.pdf")
        .unwrap();
    let (text, pages) = home
        .engram
        .store()
        .folders()
        .file_text(&file.id)
        .unwrap()
        .unwrap();
    let line = text.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1;
    let page = pages.iter().filter(|&&start| start <= line).count() as u32;
    (line, page)
}

fn result_message(mock: &MockLlm) -> String {
    // Earlier turns' results stay in context: the newest is last.
    let results = last_tool_results(mock);
    let last = results.last().expect("a tool result");
    assert_eq!(last["status"], "OK", "{last:?}");
    last["message"].as_str().unwrap().to_owned()
}

fn system_message(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_agent_reads_searches_and_cites_real_documents() {
    let mock = MockLlm::start(Script::Queue).await;
    let (home, agent, folder) = setup(&mock).await;
    let tools = home.engram.store().agents().get(&agent).unwrap().tools;
    for t in ["open_files", "grep_files", "semantic_search_files"] {
        assert!(tools.iter().any(|x| x == t), "{tools:?}");
    }
    let (line, page) = pdf_line(&home, &folder, "asn1_parser2tree");
    assert!(page > 1);

    // grep_files: the match cites the PDF's page and line.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "grep_files",
        json!({"pattern": "asn1_parser2tree", "include": "*.pdf", "context_lines": 0}),
    )]));
    mock.push(Reply::text("found it"));
    home.chat(&agent, "where is asn1_parser2tree described?")
        .await;
    let grep = result_message(&mock);
    assert!(
        grep.contains(&format!("manuals/libtasn1.pdf:p{page} (L{line})")),
        "{grep}"
    );
    assert!(grep.contains(&format!(">{line}: ")), "{grep}");

    // open_files: the window is in the next call's system message, numbered.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "open_files",
        json!({"file_requests": [{"file_name": "manuals/libtasn1.pdf", "offset": line, "length": 10}]}),
    )]));
    mock.push(Reply::text("read it"));
    home.chat(&agent, "open it there").await;
    let opened = result_message(&mock);
    assert!(
        opened.starts_with(&format!(
            "Opened manuals/libtasn1.pdf: lines {line}-{}",
            line + 9
        )),
        "{opened}"
    );
    let system = system_message(&mock.chat_requests().last().unwrap().body);
    assert!(
        system.contains("<file name=\"manuals/libtasn1.pdf\" open=\"true\""),
        "{system}"
    );
    let shown = format!("\n{line}: ");
    let at = system.find(&shown).expect("the window's first line");
    assert!(
        system[at..at + 200].contains("asn1_parser2tree"),
        "{}",
        &system[at..at + 200]
    );
    let view = home.engram.agents().context_view(&agent).await.unwrap();
    assert!(view.breakdown.files > 0, "{:?}", view.breakdown);
    assert!(view.messages[0].content.contains(&shown));
    let state = home.engram.folders().files_of_agent(&agent).unwrap();
    let pdf = state
        .iter()
        .find(|f| f.file_name == "manuals/libtasn1.pdf")
        .unwrap();
    assert!(
        pdf.is_open && pdf.offset == line && pdf.length == 10,
        "{pdf:?}"
    );

    // semantic_search_files: the DOCX passage, cited by line, under its heading.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "semantic_search_files",
        json!({"query": "where does the heron nest?", "limit": 3}),
    )]));
    mock.push(Reply::text("by the lake"));
    home.chat(&agent, "where does the heron nest?").await;
    let found = result_message(&mock);
    assert!(found.starts_with("1. manuals/notes.docx:L"), "{found}");
    assert!(found.contains("under \"Field notes\""), "{found}");
    assert!(found.contains("tall alder trees"), "{found}");
    assert!(
        mock.requests().iter().any(|r| r.path == "/v1/embeddings"),
        "the query and passages went through the embedding model"
    );

    // And the HTML guide, by meaning and words, under its chapter heading.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "semantic_search_files",
        json!({"query": "group that can read /etc/shadow"}),
    )]));
    mock.push(Reply::text("shadow"));
    home.chat(&agent, "who reads /etc/shadow?").await;
    let found = result_message(&mock);
    let first = found.split("\n\n2. ").next().unwrap();
    assert!(
        first.starts_with("1. manuals/users-and-groups.html:L"),
        "{found}"
    );
    assert!(
        first.contains("/etc/shadow is readable by this group"),
        "{first}"
    );

    // Closing: close_all_others leaves only the file asked for; detaching closes it and takes
    // the tools and the files section away.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "open_files",
        json!({"file_requests": [{"file_name": "notes.docx"}], "close_all_others": true}),
    )]));
    mock.push(Reply::text("ok"));
    home.chat(&agent, "open the notes only").await;
    let system = system_message(&mock.chat_requests().last().unwrap().body);
    assert!(
        system.contains("<file name=\"manuals/notes.docx\" open=\"true\""),
        "{system}"
    );
    assert!(
        !system.contains("<file name=\"manuals/libtasn1.pdf\" open"),
        "{system}"
    );
    home.engram.folders().detach(&agent, &folder).unwrap();
    assert!(
        home.engram
            .folders()
            .files_of_agent(&agent)
            .unwrap()
            .is_empty()
    );
    let view = home.engram.agents().context_view(&agent).await.unwrap();
    assert_eq!(view.breakdown.files, 0);
    assert!(!view.messages[0].content.contains("<files>"));
    assert!(!view.tools.iter().any(|t| t.name == "open_files"));
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn opening_a_sixth_file_closes_the_least_recently_used_and_says_so() {
    let mock = MockLlm::start(Script::Queue).await;
    let (home, agent, folder) = setup(&mock).await;
    for i in 0..4 {
        let text = format!("# Part {i}\n\nline of part {i}\n");
        home.engram
            .folders()
            .add_file(&folder, &format!("part{i}.md"), text.into_bytes())
            .await
            .unwrap();
    }
    let names = [
        "libtasn1.pdf",
        "users-and-groups.html",
        "notes.docx",
        "part0.md",
        "part1.md",
    ];
    for name in names {
        mock.push(Reply::ToolCalls(vec![Call::new(
            "open_files",
            json!({"file_requests": [{"file_name": name, "length": 5}]}),
        )]));
    }
    mock.push(Reply::ToolCalls(vec![Call::new(
        "open_files",
        json!({"file_requests": [{"file_name": "part2.md"}]}),
    )]));
    mock.push(Reply::text("all open"));
    home.chat(&agent, "open everything").await;
    let last = result_message(&mock);
    assert!(
        last.contains(
            "Closed manuals/libtasn1.pdf to stay within 5 open files (least recently used)"
        ),
        "{last}"
    );
    let open: Vec<String> = home
        .engram
        .folders()
        .files_of_agent(&agent)
        .unwrap()
        .into_iter()
        .filter(|f| f.is_open)
        .map(|f| f.file_name)
        .collect();
    assert_eq!(open.len(), 5, "{open:?}");
    assert!(!open.contains(&"manuals/libtasn1.pdf".to_owned()));
    assert_eq!(home.engram.folders().close_all_files(&agent).unwrap(), 5);
}

#[tokio::test]
async fn a_file_the_model_names_wrong_or_that_failed_is_a_failed_result() {
    let mock = MockLlm::start(Script::Queue).await;
    let (home, agent, folder) = setup(&mock).await;
    home.engram
        .folders()
        .add_file(&folder, "scan.pdf", documents_made::scanned_pdf())
        .await
        .unwrap();
    mock.push(Reply::ToolCalls(vec![Call::new(
        "open_files",
        json!({"file_requests": [{"file_name": "nope.txt"}, {"file_name": "scan.pdf"}]}),
    )]));
    mock.push(Reply::ToolCalls(vec![Call::new(
        "grep_files",
        json!({"pattern": "(unclosed"}),
    )]));
    mock.push(Reply::text("sorry"));
    home.chat(&agent, "open them").await;
    let requests = mock.chat_requests();
    let tool_results: Vec<Value> = requests
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str(m["content"].as_str()?).ok())
        .collect();
    let open = tool_results
        .iter()
        .find(|r| r["message"].as_str().unwrap_or("").contains("nope.txt"))
        .unwrap();
    assert_eq!(open["status"], "Failed");
    let message = open["message"].as_str().unwrap();
    assert!(message.contains("No file named 'nope.txt'"), "{message}");
    assert!(
        message
            .contains("'scan.pdf' could not be read: no text layer: scanned PDF, nothing to read"),
        "{message}"
    );
    let grep = tool_results.last().unwrap();
    assert_eq!(grep["status"], "Failed");
    assert!(
        grep["message"]
            .as_str()
            .unwrap()
            .contains("not a valid regular expression")
    );
}

#[tokio::test]
async fn a_folder_on_the_built_in_model_embeds_its_passages_and_is_searched_with_them() {
    let dir = engram_suite::model::model_dir();
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::with_env(&[("ENGRAM_LOCAL_MODEL_DIR", dir.to_str().unwrap())]);
    // Both on the default model: the built-in all-MiniLM-L6-v2.
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let folder = home
        .engram
        .folders()
        .create(NewFolder {
            name: "guides".into(),
            ..NewFolder::default()
        })
        .unwrap();
    assert_eq!(
        folder.embedding.as_ref().map(|e| e.model.as_str()),
        Some("local/all-minilm-l6-v2")
    );
    let html = std::fs::read(HTML).unwrap();
    let added = home
        .engram
        .folders()
        .add_file(&folder.id, "users-and-groups.html", html)
        .await
        .unwrap();
    assert!(added.notes.is_empty(), "{:?}", added.notes);
    assert!(
        home.engram
            .store()
            .folders()
            .chunks_without_vectors(&folder.id, 10)
            .unwrap()
            .is_empty(),
        "every passage has a vector of the built-in model"
    );
    home.engram.folders().attach(&agent, &folder.id).unwrap();
    // The query is embedded by the same model, in process, and fused with the words.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "semantic_search_files",
        json!({"query": "who may use the printers?", "limit": 3}),
    )]));
    mock.push(Reply::text("lp"));
    home.chat(&agent, "printers?").await;
    let found = result_message(&mock);
    assert!(
        found.starts_with("1. guides/users-and-groups.html:L"),
        "{found}"
    );
    assert!(found.to_lowercase().contains("print"), "{found}");
}

/// An OpenAI-style embeddings server that refuses (503) until `up` is set, then answers every
/// text with a small vector derived from its bytes.
async fn embeddings_down_then_up() -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let up = std::sync::Arc::new(AtomicBool::new(false));
    let flag = up.clone();
    let app = axum::Router::new().route(
        "/v1/embeddings",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let flag = flag.clone();
            async move {
                if !flag.load(Ordering::SeqCst) {
                    return Err((axum::http::StatusCode::SERVICE_UNAVAILABLE, "down"));
                }
                let inputs: Vec<String> = match &body["input"] {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(items) => items
                        .iter()
                        .map(|v| v.as_str().unwrap_or_default().to_owned())
                        .collect(),
                    _ => Vec::new(),
                };
                let data: Vec<Value> = inputs
                    .iter()
                    .enumerate()
                    .map(|(i, text)| {
                        let mut v = [0.0f32; 8];
                        for (j, b) in text.bytes().enumerate() {
                            v[j % 8] += f32::from(b);
                        }
                        json!({"object": "embedding", "index": i, "embedding": v})
                    })
                    .collect();
                Ok(axum::Json(
                    json!({"object": "list", "data": data, "model": "down-then-up"}),
                ))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), up)
}

/// A file read while the folder's embedding model is down is kept, found by words, and gets
/// its vectors later: nothing has to be uploaded again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_missing_after_an_outage_are_filled_in_later() {
    let (url, up) = embeddings_down_then_up().await;
    let home = Home::new();
    let folder = home
        .engram
        .folders()
        .create(NewFolder {
            name: "guides".into(),
            embedding: Some(EmbeddingConfig {
                model: "openai/down-then-up".into(),
                base_url: Some(url),
            }),
            ..NewFolder::default()
        })
        .unwrap();
    let added = home
        .engram
        .folders()
        .add_file(
            &folder.id,
            "users-and-groups.html",
            std::fs::read(HTML).unwrap(),
        )
        .await
        .unwrap();
    let file = added.file.expect("stored");
    assert_eq!(file.status, FileStatus::Completed);
    assert!(
        added.notes.iter().any(|n| n.contains("vectors missing")),
        "{:?}",
        added.notes
    );
    let missing = || {
        home.engram
            .store()
            .folders()
            .chunks_without_vectors(&folder.id, 10_000)
            .unwrap()
            .len()
    };
    assert_eq!(missing(), file.chunks as usize, "every passage waits");

    // Still down: nothing filled, nothing lost.
    assert_eq!(home.engram.folders().refill_vectors().await.unwrap(), 0);
    assert_eq!(missing(), file.chunks as usize);

    up.store(true, std::sync::atomic::Ordering::SeqCst);
    let filled = home.engram.folders().refill_vectors().await.unwrap();
    assert_eq!(filled, file.chunks as usize);
    assert_eq!(missing(), 0);
    // Once filled, there is nothing more to do.
    assert_eq!(home.engram.folders().refill_vectors().await.unwrap(), 0);
}
