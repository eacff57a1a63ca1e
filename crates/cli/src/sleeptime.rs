//! `engram sleeptime …`: background passes that tidy an agent's memory — settings, budgets,
//! a pass run now, the record of past passes and undo.

use crate::terminal::safe;
use anyhow::Result;
use clap::Subcommand;
use engram_core::{AgentId, LlmConfig, PassChangeKind, PassId, SleeptimePass, SleeptimeSettings};
use engram_service::Engram;

#[derive(Subcommand)]
pub enum SleeptimeCmd {
    /// Show an agent's sleep-time settings and its recent passes with their changes.
    Show {
        /// Agent id.
        agent: String,
        /// How many passes.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change an agent's sleep-time settings (only what is given).
    Set {
        /// Agent id.
        agent: String,
        /// Turn passes on.
        #[arg(long, conflicts_with = "off")]
        on: bool,
        /// Turn passes off.
        #[arg(long)]
        off: bool,
        /// A pass after every this many user turns.
        #[arg(long)]
        frequency: Option<u32>,
        /// The model passes use (provider/model), e.g. a cheaper or local one.
        #[arg(long)]
        model: Option<String>,
        /// Model calls per pass.
        #[arg(long)]
        max_steps: Option<u32>,
        /// Seconds a pass may take.
        #[arg(long)]
        timeout: Option<u32>,
        /// Run a pass after this many seconds without a message (0: never).
        #[arg(long)]
        idle: Option<u32>,
        /// Passes per 24 hours for this agent (0: no limit).
        #[arg(long)]
        passes_per_day: Option<u32>,
        /// Tokens per 24 hours for this agent's passes (0: no limit).
        #[arg(long)]
        tokens_per_day: Option<u64>,
        /// US dollars per 24 hours for this agent's passes, at the model's price (0: no limit).
        #[arg(long)]
        usd_per_day: Option<f64>,
    },
    /// Run a pass now and wait for it (skipped when over budget).
    Run {
        /// Agent id.
        agent: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Undo a pass, or one change of it (`--change N`).
    Undo {
        /// Pass id.
        pass: String,
        /// Only this change (its number in `show`).
        #[arg(long)]
        change: Option<u32>,
    },
}

/// `Some(n)` as a limit, 0 meaning none.
fn limit<T: PartialEq + Default>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

fn set(s: &mut SleeptimeSettings, cmd: SleeptimeCmd) {
    let SleeptimeCmd::Set {
        on,
        off,
        frequency,
        model,
        max_steps,
        timeout,
        idle,
        passes_per_day,
        tokens_per_day,
        usd_per_day,
        ..
    } = cmd
    else {
        return;
    };
    if on || off {
        s.enabled = on;
    }
    s.frequency = frequency.unwrap_or(s.frequency);
    s.max_steps = max_steps.unwrap_or(s.max_steps);
    s.timeout_secs = timeout.unwrap_or(s.timeout_secs);
    if let Some(m) = model {
        s.llm = Some(LlmConfig::new(m));
    }
    if let Some(v) = idle {
        s.idle_secs = limit(v);
    }
    if let Some(v) = passes_per_day {
        s.passes_per_day = limit(v);
    }
    if let Some(v) = tokens_per_day {
        s.tokens_per_day = limit(v);
    }
    if let Some(v) = usd_per_day {
        s.usd_per_day = (v > 0.0).then_some(v);
    }
}

fn print_pass(p: &SleeptimePass) {
    println!(
        "{}  {}  {:?} ({:?})  {} messages read, {} model calls, {} tokens{}{}",
        p.id,
        p.started_at.to_rfc3339(),
        p.status,
        p.trigger,
        p.messages_read,
        p.model_calls,
        p.tokens(),
        p.cost_usd.map_or(String::new(), |c| format!(", ${c:.4}")),
        p.reason
            .as_deref()
            .map_or(String::new(), |r| format!("  — {}", safe(r)))
    );
    for c in &p.changes {
        let undone = if c.undone_at.is_some() {
            " (undone)"
        } else {
            ""
        };
        match &c.kind {
            PassChangeKind::BlockEdit { label, diff, .. } => {
                println!(
                    "  [{}] block '{}'{undone}\n{}",
                    c.index,
                    safe(label),
                    safe(diff)
                );
            }
            PassChangeKind::PassageAdded { text, .. } => {
                println!("  [{}] passage added{undone}: {}", c.index, safe(text));
            }
            PassChangeKind::PassageSuperseded { text, how, .. } => {
                println!(
                    "  [{}] passage {}{undone}: {}",
                    c.index,
                    how.as_str(),
                    safe(text)
                );
            }
        }
    }
}

/// Runs one `engram sleeptime` command.
pub async fn sleeptime(engram: &Engram, cmd: SleeptimeCmd) -> Result<()> {
    match cmd {
        SleeptimeCmd::Show { agent, limit, json } => {
            let agent = AgentId::from(agent);
            let settings = engram.sleeptime().settings(&agent).await?;
            let passes = engram.sleeptime().passes(&agent, limit).await?;
            if json {
                let out = serde_json::json!({"settings": settings, "passes": passes});
                println!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            println!("{}", serde_json::to_string_pretty(&settings)?);
            passes.iter().for_each(print_pass);
        }
        SleeptimeCmd::Set { ref agent, .. } => {
            let agent = AgentId::from(agent.as_str());
            let mut s = engram.sleeptime().settings(&agent).await?;
            set(&mut s, cmd);
            engram.sleeptime().set_settings(&agent, &s).await?;
            println!("{}", serde_json::to_string_pretty(&s)?);
        }
        SleeptimeCmd::Run { agent, json } => {
            let pass = engram.sleeptime().run_pass(&AgentId::from(agent)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&pass)?);
            } else {
                print_pass(&pass);
            }
        }
        SleeptimeCmd::Undo { pass, change } => {
            let pass = PassId::from(pass);
            let p = match change {
                Some(i) => engram.sleeptime().undo_change(&pass, i).await?,
                None => engram.sleeptime().undo_pass(&pass).await?,
            };
            print_pass(&p);
        }
    }
    Ok(())
}
