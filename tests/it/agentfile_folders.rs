//! Folders in Agent Files: an agent's attached folders, their documents (text and passages as
//! Engram keeps them) and which documents the agent has open go out in `.af` and come back
//! alike (export → import → export is identical); a Letta-made file with `sources`, `files`
//! and `files_agents` imports as live folders the agent reads.

use crate::documents_made;
use engram_core::{AgentId, EmbeddingConfig, FileStatus, FolderId, LoopStyle, NewFolder};
use engram_mock_llm::{MockLlm, Script};
use engram_service::Engram;
use engram_suite::Home;
use serde_json::{Value, json};

fn words_only() -> Option<EmbeddingConfig> {
    Some(EmbeddingConfig {
        model: "none".into(),
        base_url: None,
    })
}

async fn agent_with_folder(home: &Home, mock: &MockLlm) -> (AgentId, FolderId) {
    let agent = home.agent(mock, LoopStyle::ToolLoop).await;
    let e = &home.engram;
    let folder = e
        .folders()
        .create(NewFolder {
            name: "manuals".into(),
            description: "how-tos".into(),
            instructions: "cite the page".into(),
            embedding: words_only(),
        })
        .unwrap()
        .id;
    let notes = "# Valves\n\nTurn the red valve clockwise.\nCheck the gauge.\n\n## Pumps\n\nPrime the pump first.\nThen open the tap.\n";
    let added = e
        .folders()
        .add_file(&folder, "notes/valves.md", notes.as_bytes().to_vec())
        .await
        .unwrap();
    let pdf = e
        .folders()
        .add_file(
            &folder,
            "guide.pdf",
            documents_made::pdf_with_text("The boiler needs yearly service"),
        )
        .await
        .unwrap();
    let broken = e
        .folders()
        .add_file(&folder, "broken.txt", b"ab\0\0cd".to_vec())
        .await
        .unwrap();
    assert_eq!(broken.file.unwrap().status, FileStatus::Error);
    e.folders().attach(&agent, &folder).unwrap();
    e.folders()
        .open_file(&agent, &added.file.unwrap().id, Some(3), Some(2))
        .unwrap();
    let pdf = pdf.file.unwrap().id;
    e.folders().open_file(&agent, &pdf, None, None).unwrap();
    e.folders().close_file(&agent, &pdf).unwrap();
    (agent, folder)
}

/// The export as JSON.
async fn exported(e: &Engram, agent: &AgentId) -> Value {
    serde_json::from_slice(
        &e.agent_files()
            .export(std::slice::from_ref(agent))
            .await
            .unwrap(),
    )
    .unwrap()
}

/// The folder parts of an export: Letta's lists and the agent's links, and Engram's
/// extension for them.
fn folder_parts(v: &Value) -> Value {
    json!({
        "sources": v["sources"],
        "files": v["files"],
        "source_ids": v["agents"][0]["source_ids"],
        "files_agents": v["agents"][0]["files_agents"],
        "ext_sources": v["engram"]["sources"],
        "ext_files": v["engram"]["files"],
        "file_windows": v["engram"]["file_windows"],
    })
}

#[tokio::test]
async fn folders_go_out_and_come_back_alike() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let (agent, _) = agent_with_folder(&home, &mock).await;
    let first = exported(&home.engram, &agent).await;

    // Letta's fields: the folder, its documents with their text, the agent's links.
    assert_eq!(first["sources"][0]["name"], "manuals");
    assert_eq!(first["sources"][0]["instructions"], "cite the page");
    let files = first["files"].as_array().unwrap();
    let names: Vec<&str> = files
        .iter()
        .map(|f| f["file_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "manuals/broken.txt",
            "manuals/guide.pdf",
            "manuals/notes/valves.md"
        ]
    );
    assert_eq!(files[2]["original_file_name"], "notes/valves.md");
    assert_eq!(files[0]["processing_status"], "error");
    assert!(files[1]["content"].as_str().unwrap().contains("boiler"));
    let a = &first["agents"][0];
    assert_eq!(a["source_ids"], json!(["source-0"]));
    let links = a["files_agents"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{links:?}");
    let open = links.iter().find(|l| l["is_open"] == true).unwrap();
    assert_eq!(open["file_name"], "manuals/notes/valves.md");
    assert_eq!(
        open["visible_content"],
        "3: Turn the red valve clockwise.\n4: Check the gauge."
    );
    assert_eq!(
        (open["start_line"].clone(), open["end_line"].clone()),
        (json!(3), json!(4))
    );
    // Engram's extension: passages with their provenance, the window's lines.
    let ext = &first["engram"];
    // Words alone: no model, kept as such (not the default model an import would give).
    assert!(ext["sources"]["source-0"]["embedding"].is_null(), "{ext}");
    assert_eq!(ext["files"]["file-1"]["chunks"][0]["page"], 1);
    assert_eq!(
        ext["file_windows"][open["id"].as_str().unwrap()],
        json!({"offset": 3, "length": 2})
    );

    let other = Home::new();
    let report = other
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&first).unwrap())
        .await
        .unwrap();
    assert!(
        report.inactive.iter().all(|i| !matches!(
            i.kind,
            engram_agentfile::InactiveKind::Source | engram_agentfile::InactiveKind::File
        )),
        "{:?}",
        report.inactive
    );
    let copy = &report.agents[0];
    let again = exported(&other.engram, copy).await;
    assert_eq!(
        folder_parts(&first),
        folder_parts(&again),
        "export → import → export changed"
    );

    // The copy reads them: passages searchable, the open window in its context.
    let folder = other.engram.folders().find("manuals").unwrap();
    let passages = other.engram.folders().passages(&folder.id, 100, 0).unwrap();
    assert!(passages.iter().any(|(n, c)| n == "guide.pdf"
        && c.text.contains("boiler")
        && c.provenance.page == Some(1)));
    let tools = other.engram.store().agents().get(copy).unwrap().tools;
    assert!(
        tools.iter().any(|t| t == "semantic_search_files"),
        "{tools:?}"
    );
    let context = other.engram.agents().context_breakdown(copy).await.unwrap();
    assert!(context.files > 0, "{context:?}");
}

#[tokio::test]
async fn a_letta_file_with_folders_imports_them_live() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/agent-files/test_basic_agent_with_blocks_tools_messages_v2.af"
    );
    let mut af: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    af["sources"] = json!([{
        "id": "source-0", "name": "handbook", "description": "company rules",
        "instructions": "quote the rule", "metadata": null,
        "embedding_config": {"embedding_endpoint_type": "openai",
            "embedding_model": "text-embedding-3-small", "embedding_dim": 1536}
    }]);
    af["files"] = json!([{
        "id": "file-0", "source_id": "source-0", "file_name": "handbook/policy.md",
        "original_file_name": "policy.md", "file_type": "text/markdown", "file_size": 80,
        "processing_status": "completed", "total_chunks": 2, "chunks_embedded": 2,
        "content": "# Refunds\n\nRefunds take 14 days.\n\n# Shipping\n\nWe ship on Fridays.\n"
    }, {
        "id": "file-1", "source_id": "source-0", "file_name": "scan.pdf",
        "file_type": "application/pdf", "file_size": 9000,
        "processing_status": "error", "error_message": "no text found", "content": null
    }]);
    let tools = af["tools"].as_array_mut().unwrap();
    tools.push(
        json!({"id": "tool-90", "name": "open_files", "tool_type": "letta_files_core",
        "description": "Open files", "json_schema": {"name": "open_files", "parameters": {}}}),
    );
    let agent = &mut af["agents"][0];
    agent["tool_ids"]
        .as_array_mut()
        .unwrap()
        .push(json!("tool-90"));
    agent["source_ids"] = json!(["source-0"]);
    agent["files_agents"] = json!([{
        "id": "file_agent-0", "agent_id": "agent-0", "file_id": "file-0",
        "source_id": "source-0", "file_name": "handbook/policy.md", "is_open": true,
        "visible_content": "# Refunds", "last_accessed_at": "2025-06-01T10:00:00Z",
        "start_line": 1, "end_line": 3
    }]);

    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&af).unwrap())
        .await
        .unwrap();
    let id = &report.agents[0];
    assert!(
        report.inactive.iter().all(|i| i.name != "open_files"
            && !matches!(
                i.kind,
                engram_agentfile::InactiveKind::Source | engram_agentfile::InactiveKind::File
            )),
        "{:?}",
        report.inactive
    );
    let folder = home.engram.folders().find("handbook").unwrap();
    assert_eq!(folder.instructions, "quote the rule");
    let files = home.engram.folders().files(&folder.id).unwrap();
    assert_eq!(files[0].name, "policy.md");
    assert_eq!(files[0].status, FileStatus::Completed);
    assert!(files[0].chunks >= 2, "{:?}", files[0]);
    assert_eq!(files[1].status, FileStatus::Error);
    assert_eq!(files[1].error.as_deref(), Some("no text found"));
    let passages = home.engram.folders().passages(&folder.id, 100, 0).unwrap();
    let refunds = passages
        .iter()
        .find(|(_, c)| c.text.contains("Refunds take 14 days"))
        .unwrap();
    assert_eq!(refunds.1.provenance.heading.as_deref(), Some("Refunds"));
    let state = home.engram.folders().files_of_agent(id).unwrap();
    let policy = state
        .iter()
        .find(|f| f.file_name == "handbook/policy.md")
        .unwrap();
    assert!(
        policy.is_open && policy.offset == 1 && policy.length == 3,
        "{policy:?}"
    );
    assert_eq!(
        policy.last_accessed_at.unwrap().to_rfc3339(),
        "2025-06-01T10:00:00+00:00"
    );
    let tools = home.engram.store().agents().get(id).unwrap().tools;
    for t in engram_service::FILE_TOOLS {
        assert!(tools.iter().any(|x| x == t), "{t} missing: {tools:?}");
    }
    // Written back once, from the live folder.
    let out: Value = serde_json::from_slice(
        &home
            .engram
            .agent_files()
            .export(std::slice::from_ref(id))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        out["sources"].as_array().unwrap().len(),
        1,
        "{}",
        out["sources"]
    );
    assert_eq!(out["files"].as_array().unwrap().len(), 2);
    assert_eq!(
        out["agents"][0]["files_agents"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_copy_of_an_agent_reads_the_same_folders() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let (agent, folder) = agent_with_folder(&home, &mock).await;
    let copy = home
        .engram
        .agent_files()
        .duplicate(&agent, None)
        .await
        .unwrap()
        .agent
        .id;
    let folders = home.engram.folders().list().unwrap();
    assert_eq!(folders.len(), 1, "the folder is shared, not copied");
    let attached = home.engram.folders().of_agent(&copy).unwrap();
    assert_eq!(attached[0].id, folder);
    let open = |a: &AgentId| -> Vec<(String, bool, u32, u32)> {
        home.engram
            .folders()
            .files_of_agent(a)
            .unwrap()
            .into_iter()
            .map(|f| (f.file_name, f.is_open, f.offset, f.length))
            .collect()
    };
    assert_eq!(open(&agent), open(&copy));
    let tools = home.engram.store().agents().get(&copy).unwrap().tools;
    assert!(tools.iter().any(|t| t == "open_files"), "{tools:?}");
}
