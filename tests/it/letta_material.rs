//! Today's Letta material: agent files with path-like block labels, skills,
//! documents (`files`, `sources`, `files_agents`), MCP servers, compaction and sleep-time
//! settings, and tools of types Engram does not run. They import, the parts Engram does not run
//! are reported per agent (service, CLI), and import → export → import gives the kept parts
//! back byte for byte. Fixtures: `tests/fixtures/agent-files/`, shaped like Letta's exports.

use engram_agentfile::InactiveKind;
use engram_suite::{Home, cli, stdout_ok};
use serde_json::{Value, json};
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent-files"
    ));
    std::fs::read(dir.join(name)).unwrap()
}

const TREE: &str = "memory_tree_skills_files.af";

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn by_name<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {list}"))
}

/// The kept parts of a Letta file, as Engram must give them back.
/// The documents of a file as Engram keeps them, by name (Engram lists a folder's files so).
fn docs(f: &Value) -> Vec<String> {
    let mut files: Vec<String> = f["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            json!([
                x["source_id"],
                x["file_name"],
                x["original_file_name"],
                x["file_type"],
                x["file_size"],
                x["processing_status"],
                x["content"]
            ])
            .to_string()
        })
        .collect();
    files.sort();
    files
}

fn kept_parts(f: &Value) -> Value {
    let blocks: Vec<Value> = f["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            json!([
                b["label"],
                b["value"],
                b["limit"],
                b["description"],
                b["read_only"]
            ])
        })
        .collect();
    let agent = |i: usize| {
        let a = &f["agents"][i];
        json!({
            "name": a["name"],
            "compaction_settings": a["compaction_settings"],
            "enable_sleeptime": a["enable_sleeptime"],
            "source_ids": a["source_ids"],
            // Live folders now: what Engram keeps of each link.
            "files_agents": a["files_agents"].as_array().map(|l| l.iter().map(|x| json!([
                x["file_name"], x["is_open"], x["last_accessed_at"], x["start_line"], x["end_line"]
            ])).collect::<Vec<_>>()),
            "max_files_open": a["max_files_open"],
            "per_file_view_window_char_limit": a["per_file_view_window_char_limit"],
            "timezone": a["timezone"],
        })
    };
    json!({
        "blocks": blocks,
        "skills": f["skills"],
        // Folders are live: their name, text and state come back, in Engram's words.
        "sources": f["sources"].as_array().unwrap().iter().map(|x| json!([
            x["id"], x["name"], x["description"], x["instructions"]
        ])).collect::<Vec<_>>(),
        "files": docs(f),
        "mcp_servers": f["mcp_servers"],
        "agents": [agent(0), agent(1)],
    })
}

fn kept_tool(f: &Value, name: &str) -> Value {
    let mut t = by_name(&f["tools"], name).clone();
    t.as_object_mut().unwrap().remove("id");
    t
}

#[tokio::test]
async fn path_labels_and_newer_sections_round_trip_byte_for_byte() {
    let home = Home::new();
    let original = json_of(&fixture(TREE));
    let report = home
        .engram
        .agent_files()
        .import(&fixture(TREE))
        .await
        .unwrap();
    assert_eq!(report.agents.len(), 2);
    let ezra = &report.agents[0];

    // Path labels are the blocks' labels, in the file's order; shared blocks stay shared.
    let labels: Vec<String> = home
        .engram
        .blocks()
        .of_agent(ezra)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(
        labels,
        [
            "system/persona",
            "system/human/family",
            "system/human/work",
            "reference/faq",
            "/note_directory",
            "corrections/ezra-mistakes"
        ]
    );
    assert_eq!(report.blocks.len(), 6);
    let family = home
        .engram
        .blocks()
        .by_label(&report.agents[1], "system/human/family")
        .await
        .unwrap();
    assert_eq!(
        family.id,
        home.engram
            .blocks()
            .by_label(ezra, "system/human/family")
            .await
            .unwrap()
            .id
    );
    // Runnable tools are attached; the sleep-time tools Engram has (memory_replace,
    // memory_insert) run, the rest is kept.
    let sleeper = home
        .engram
        .agents()
        .get(&report.agents[1])
        .await
        .unwrap()
        .agent;
    assert_eq!(sleeper.tools, ["memory_replace", "memory_insert"]);
    // Its folder is live, and with it the file tools.
    assert_eq!(
        home.engram.agents().get(ezra).await.unwrap().agent.tools,
        [
            "conversation_search",
            "open_files",
            "grep_files",
            "semantic_search_files"
        ]
    );

    let first = json_of(
        &home
            .engram
            .agent_files()
            .export(&report.agents)
            .await
            .unwrap(),
    );
    assert_eq!(kept_parts(&first), kept_parts(&original));
    for name in ["list_issues", "memory_finish_edits"] {
        assert_eq!(
            kept_tool(&first, name),
            kept_tool(&original, name),
            "{name}"
        );
    }

    // Engram's own file back into Engram: the same agents again, the same file again.
    let again = home
        .engram
        .agent_files()
        .import(
            &home
                .engram
                .agent_files()
                .export(&report.agents)
                .await
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(again.inactive.len(), report.inactive.len());
    let second = json_of(
        &home
            .engram
            .agent_files()
            .export(&again.agents)
            .await
            .unwrap(),
    );
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("created_at");
        v
    };
    assert_eq!(strip(second.clone()), strip(first.clone()));

    // Without Engram's extension (as Letta would read it back), the kept parts are the same.
    let mut letta_only = first.clone();
    letta_only.as_object_mut().unwrap().remove("engram");
    let third = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&letta_only).unwrap())
        .await
        .unwrap();
    let third = json_of(
        &home
            .engram
            .agent_files()
            .export(&third.agents)
            .await
            .unwrap(),
    );
    assert_eq!(kept_parts(&third), kept_parts(&original));
}

#[tokio::test]
async fn parts_engram_does_not_run_are_reported_per_agent() {
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture(TREE))
        .await
        .unwrap();
    let of = |agent: usize| -> Vec<(InactiveKind, String)> {
        report
            .inactive
            .iter()
            .filter(|x| x.agent == report.agents[agent])
            .map(|x| (x.kind, x.name.clone()))
            .collect()
    };
    let ezra = of(0);
    for want in [
        (InactiveKind::Tool, "list_issues"),
        (InactiveKind::Skill, "pdf"),
        (InactiveKind::Skill, "slack"),
        (InactiveKind::McpServer, "linear"),
        (InactiveKind::CompactionSettings, "compaction_settings"),
    ] {
        assert!(
            ezra.contains(&(want.0, want.1.to_owned())),
            "{want:?} in {ezra:?}"
        );
    }
    assert!(
        !ezra.iter().any(|(_, n)| n == "conversation_search"),
        "runnable tools are active"
    );
    // The documents are live folders now, and the file tools with them.
    assert!(
        !ezra.iter().any(
            |(k, n)| matches!(k, InactiveKind::Source | InactiveKind::File)
                || n == "open_files"
                || n == "grep_files"
        ),
        "{ezra:?}"
    );
    let folder = home.engram.folders().find("bakery-handbook").unwrap();
    let files = home.engram.folders().files(&folder.id).unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().any(|f| f.name == "opening.md"), "{files:?}");
    // Sleep-time passes are live: Ezra's are switched on at its group's frequency.
    assert!(!ezra.iter().any(|(k, _)| *k == InactiveKind::Sleeptime));
    let passes = home
        .engram
        .sleeptime()
        .settings(&report.agents[0])
        .await
        .unwrap();
    assert!(passes.enabled);
    assert_eq!(passes.frequency, 5);
    let sleeper = of(1);
    assert!(sleeper.contains(&(InactiveKind::Tool, "memory_finish_edits".into())));
    assert!(!sleeper.iter().any(|(k, _)| *k == InactiveKind::Sleeptime));
    assert!(
        !home
            .engram
            .sleeptime()
            .settings(&report.agents[1])
            .await
            .unwrap()
            .enabled
    );
    assert!(report.inactive.iter().all(|x| !x.reason.is_empty()));
    assert!(
        report
            .inactive
            .iter()
            .filter(|x| x.agent == report.agents[0])
            .all(|x| x.agent_name == "Ezra")
    );
}

#[tokio::test]
async fn dangling_document_references_are_refused_with_their_path() {
    let home = Home::new();
    let mut f = json_of(&fixture(TREE));
    f["agents"][0]["files_agents"][0]["file_id"] = "file-9".into();
    let err = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&f).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("agents[0].files_agents[0].file_id"), "{err}");
    let mut f = json_of(&fixture(TREE));
    f["blocks"][3]["label"] = "reference\nfaq".into();
    let err = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&f).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("blocks[3].label"), "{err}");
    assert!(home.engram.agents().list().await.unwrap().is_empty());
}

#[tokio::test]
async fn export_names_an_endpoint_type_letta_accepts() {
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture(TREE))
        .await
        .unwrap();
    let id = &report.agents[0];
    let mut llm = home.engram.agents().get(id).await.unwrap().agent.llm;
    llm.model = "mock/mock-small".into();
    home.engram
        .agents()
        .update(
            id,
            &engram_core::AgentPatch {
                llm: Some(llm),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let f = json_of(
        &home
            .engram
            .agent_files()
            .export(std::slice::from_ref(id))
            .await
            .unwrap(),
    );
    let c = &f["agents"][0]["llm_config"];
    assert_eq!(c["model_endpoint_type"], "openai", "{c}");
    assert_eq!(c["provider_name"], "mock");
    assert_eq!(c["handle"], "mock/mock-small");
    // Engram's own extension keeps the exact handle.
    let back = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&f).unwrap())
        .await
        .unwrap();
    assert_eq!(
        home.engram
            .agents()
            .get(&back.agents[0])
            .await
            .unwrap()
            .agent
            .llm
            .model,
        "mock/mock-small"
    );
}

#[test]
fn cli_import_prints_a_line_per_inactive_part() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("tree.af");
    std::fs::write(&path, fixture(TREE)).unwrap();
    let out = cli(home.path(), &["import", path.to_str().unwrap()]);
    let ids = stdout_ok(&out);
    assert_eq!(ids.lines().count(), 2, "{ids}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("inactive: "))
        .collect();
    assert!(
        lines.contains(
            &"inactive: Ezra: skill \"pdf\": Engram does not load skills; kept for export"
        ),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("inactive: Ezra: MCP server \"linear\": ")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("inactive: Ezra-sleeptime: tool \"memory_finish_edits\": ")),
        "{err}"
    );
    // Path labels through the CLI: shown and edited by their full label.
    let ezra = ids.lines().next().unwrap();
    stdout_ok(&cli(
        home.path(),
        &[
            "memory",
            "set",
            ezra,
            "system/human/family",
            "Leo is 8 now.",
        ],
    ));
    let shown = stdout_ok(&cli(home.path(), &["memory", "show", ezra]));
    assert!(shown.contains("system/human/family"), "{shown}");
    assert!(shown.contains("Leo is 8 now."), "{shown}");
}
