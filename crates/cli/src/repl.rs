//! The interactive chat: read a line, stream the agent's reply, repeat. Ctrl-C stops the
//! reply in flight (keeping what arrived); Ctrl-D or `/exit` leaves.

use crate::approval;
use crate::terminal::safe;
use anyhow::Result;
use engram_core::{AgentId, ApprovalDecision, RunEvent, ToolStatus};
use engram_service::{Engram, RunEvents, RunRequest};
use std::io::Write;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};

pub async fn run(engram: &Arc<Engram>, agent: &AgentId) -> Result<()> {
    let state = engram.agents().get(agent).await?;
    eprintln!(
        "Chatting with {} ({}). Ctrl-C stops a reply, Ctrl-D or /exit leaves.",
        safe(&state.agent.name),
        safe(&state.agent.llm.model)
    );
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        // A call waiting for approval (from this run or one before) is asked about first.
        if let Some(p) = engram.runs().pending_approval(agent).await? {
            match approval::ask(&mut lines, &p).await? {
                Some(decision) => turn(engram, agent, Turn::Decide(decision)).await,
                None => break,
            }
            continue;
        }
        eprint!("> ");
        let Some(line) = lines.next_line().await? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            break;
        }
        turn(engram, agent, Turn::Send(line)).await;
    }
    Ok(())
}

/// What one turn of the REPL does.
enum Turn<'a> {
    /// Send a user message.
    Send(&'a str),
    /// Decide the call waiting for approval.
    Decide(ApprovalDecision),
}

/// Runs one turn, streaming it to the terminal; Ctrl-C stops it (by its run id).
async fn turn(engram: &Arc<Engram>, agent: &AgentId, what: Turn<'_>) {
    let request = match what {
        Turn::Send(line) => RunRequest::Message {
            text: line.to_owned(),
        },
        Turn::Decide(d) => RunRequest::Approvals { decisions: vec![d] },
    };
    let mut run = match engram.runs().start(agent, request).await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {}", safe(&e.to_string()));
            return;
        }
    };
    let (stopper, id) = (engram.clone(), run.run_id().clone());
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stopper.runs().cancel(&id);
        }
    });
    print(&mut run.events).await;
    ctrl_c.abort();
    if let Err(e) = run.outcome().await {
        eprintln!("error: {}", safe(&e.to_string()));
    }
}

/// Prints a run's events as they come: the reply's text on stdout, tool calls, failures,
/// memory edits, approvals and the run's end on stderr.
async fn print(events: &mut RunEvents) {
    let mut out = std::io::stdout();
    while let Some(event) = events.next().await {
        match event {
            RunEvent::TextDelta { delta } => {
                let _ = write!(out, "{}", safe(&delta));
                let _ = out.flush();
            }
            RunEvent::ToolCall { call } => {
                eprintln!("\n  → {}({})", safe(&call.name), safe(&call.arguments))
            }
            RunEvent::ToolResult {
                status: ToolStatus::Failed,
                message,
                ..
            } => eprintln!("  ✗ {}", safe(&message)),
            RunEvent::MemoryChanged { block, .. } => {
                eprintln!("  ✎ {} updated", safe(&block.label))
            }
            RunEvent::ApprovalRequested { approval: p } => {
                eprintln!("  ⏸ {} waits for your approval", approval::describe(&p))
            }
            RunEvent::Done {
                stop_reason, usage, ..
            } => {
                let _ = writeln!(out);
                eprintln!(
                    "  [{} · {} steps · {} tokens]",
                    stop_reason.as_str(),
                    usage.step_count,
                    usage.total_tokens
                );
            }
            RunEvent::Error { error } => eprintln!("\nerror: {}", safe(&error.message)),
            _ => {}
        }
    }
}
