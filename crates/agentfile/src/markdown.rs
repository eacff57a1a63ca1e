//! The Markdown export for people: the agent's settings, core memory, archival memory and the
//! whole conversation with times. Reasoning, tool calls and tool results sit in collapsible
//! `<details>` sections so the dialogue reads on its own. Hidden loop messages (heartbeats,
//! alerts, imported events) are listed as notes.

use crate::snapshot::AgentSnapshot;
use engram_core::{MessageKind, Role, Timestamp};
use std::fmt::Write;

fn when(t: Timestamp) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A fenced code block whose fence is longer than any backtick run inside `text`.
fn fenced(lang: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{text}\n{fence}\n")
}

/// Text for a `<details>` body: pretty JSON when it is JSON, else as is.
fn pretty(text: &str) -> (&'static str, String) {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() || v.is_array() => (
            "json",
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| text.to_owned()),
        ),
        _ => ("", text.to_owned()),
    }
}

fn details(out: &mut String, summary: &str, lang: &str, body: &str) {
    let _ = write!(
        out,
        "<details>\n<summary>{summary}</summary>\n\n{}\n</details>\n\n",
        fenced(lang, body)
    );
}

/// Renders one agent as a Markdown document (ends with a newline).
pub fn render(s: &AgentSnapshot) -> String {
    let a = &s.agent;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", a.name);
    if !a.description.is_empty() {
        let _ = writeln!(out, "{}\n", a.description);
    }
    let _ = writeln!(out, "- **Id:** `{}`", a.id);
    let _ = writeln!(
        out,
        "- **Model:** `{}` ({} tokens of context)",
        a.llm.model, a.llm.context_window
    );
    let style = match a.loop_style {
        engram_core::LoopStyle::Classic => "classic MemGPT loop",
        engram_core::LoopStyle::ToolLoop => "tool loop",
    };
    let _ = writeln!(out, "- **Loop:** {style}");
    let tools = if a.tools.is_empty() {
        "none".to_owned()
    } else {
        a.tools
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "- **Tools:** {tools}");
    let _ = writeln!(out, "- **Created:** {}\n", when(a.created_at));
    details(&mut out, "System instructions", "", &a.system);

    let _ = writeln!(out, "## Core memory\n");
    if s.blocks.is_empty() {
        let _ = writeln!(out, "_No blocks._\n");
    }
    for b in &s.blocks {
        let ro = if b.read_only { ", read-only" } else { "" };
        let _ = writeln!(
            out,
            "### {} ({}/{} characters{ro})\n",
            b.label,
            b.chars(),
            b.limit
        );
        if !b.description.is_empty() {
            let _ = writeln!(out, "_{}_\n", b.description.replace('\n', " "));
        }
        out.push_str(&fenced("", &b.value));
        out.push('\n');
    }

    let _ = writeln!(out, "## Archival memory\n");
    if s.passages.is_empty() {
        let _ = writeln!(out, "_No passages._\n");
    }
    for p in &s.passages {
        let tags = if p.tags.is_empty() {
            String::new()
        } else {
            format!(" — tags: {}", p.tags.join(", "))
        };
        let _ = writeln!(out, "- **{}**{tags}", when(p.created_at));
        for line in p.text.lines() {
            let _ = writeln!(out, "  > {line}");
        }
    }
    if !s.passages.is_empty() {
        out.push('\n');
    }

    if let Some(summary) = &a.summary {
        let _ = writeln!(out, "## Summary of earlier messages\n\n{summary}\n");
    }

    let _ = writeln!(out, "## Conversation\n");
    if s.messages.is_empty() {
        let _ = writeln!(out, "_No messages._\n");
    }
    for m in &s.messages {
        let context = if m.in_context { "" } else { " · recall only" };
        let heading = match (m.role, m.kind) {
            (Role::User, MessageKind::Chat) => "User",
            (Role::Assistant, _) => "Assistant",
            (Role::Tool, _) => "Tool result",
            (Role::System, _) => "System",
            (_, MessageKind::Heartbeat) => "Heartbeat",
            (_, MessageKind::Alert) => "Alert",
            (_, _) => "Event",
        };
        let _ = writeln!(out, "### {heading} — {}{context}\n", when(m.created_at));
        if let Some(r) = &m.reasoning {
            details(&mut out, "Reasoning", "", r);
        }
        match (m.role, m.kind) {
            (Role::Tool, _) => {
                let (lang, body) = pretty(&m.content);
                let name = m.tool_name.as_deref().unwrap_or("tool");
                details(
                    &mut out,
                    &format!("Result of <code>{name}</code>"),
                    lang,
                    &body,
                );
            }
            (Role::System, _)
            | (Role::User, MessageKind::Heartbeat | MessageKind::Alert | MessageKind::Event) => {
                let (lang, body) = pretty(&m.content);
                details(&mut out, "Message", lang, &body);
            }
            _ if !m.content.is_empty() => {
                let _ = writeln!(out, "{}\n", m.content);
            }
            _ => {}
        }
        for c in &m.tool_calls {
            // In the classic loop `send_message` is how the agent speaks: show the words.
            let said = (c.name == "send_message")
                .then(|| serde_json::from_str::<serde_json::Value>(&c.arguments).ok())
                .flatten()
                .and_then(|v| v["message"].as_str().map(str::to_owned));
            if let Some(said) = said {
                for line in said.lines() {
                    let _ = writeln!(out, "> {line}");
                }
                out.push('\n');
            }
            let (lang, body) = pretty(&c.arguments);
            details(
                &mut out,
                &format!("Tool call <code>{}</code>", c.name),
                lang,
                &body,
            );
        }
    }
    out
}
