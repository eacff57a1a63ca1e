//! `engram user …`: the users of a shared `engram serve` — add, list, remove, give a token,
//! revoke tokens, and share an agent with a user. The server's own token (`engram serve
//! --show-token`) stays the administrator's; a user's token reaches only the agents they
//! made or were given.

use crate::terminal::safe;
use anyhow::Result;
use clap::{Subcommand, ValueEnum};
use engram_core::{AgentAccess, AgentId};
use engram_service::Engram;
use secrecy::ExposeSecret;

#[derive(Subcommand)]
pub enum UserCmd {
    /// Add a user (1–64 letters, digits, `.`, `_`, `-`).
    Add {
        /// The user's name.
        name: String,
    },
    /// List users.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a user with their tokens (agents they made stay, the administrator's alone).
    Rm {
        /// The user's name.
        name: String,
    },
    /// Make a token for a user and print it. It is shown this once: only its hash is kept.
    Token {
        /// The user's name.
        name: String,
        /// A note to tell this token from the user's others (e.g. the device).
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Make every token of a user stop working.
    Revoke {
        /// The user's name.
        name: String,
    },
    /// Share an agent with a user, change what they may do, or take it back (`none`).
    Share {
        /// Agent id.
        agent: String,
        /// The user's name.
        name: String,
        /// What they may do.
        #[arg(long, value_enum, default_value = "read")]
        access: AccessArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AccessArg {
    /// See its memory and messages.
    Read,
    /// Also chat with it and change its memory.
    Write,
    /// Also delete and share it.
    Owner,
    /// Nothing: take the agent back.
    None,
}

pub async fn user(engram: &Engram, cmd: UserCmd) -> Result<()> {
    let users = engram.users();
    match cmd {
        UserCmd::Add { name } => {
            let user = users.create(&name).await?;
            println!("{}", user.id);
        }
        UserCmd::Ls { json } => {
            let all = users.list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else {
                for u in all {
                    println!("{}  {}  {}", u.id, safe(&u.name), u.created_at.to_rfc3339());
                }
            }
        }
        UserCmd::Rm { name } => users.delete(&name).await?,
        UserCmd::Token { name, label } => {
            let token = users.issue_token(&name, &label).await?;
            println!("{}", token.expose_secret());
            eprintln!(
                "Shown once: only a hash of it is kept. Revoke with `engram user revoke {name}`.\n\
                 {name} uses it as the API's bearer token, or opens the window at the server's \
                 address followed by #token=<the token>."
            );
        }
        UserCmd::Revoke { name } => {
            let n = users.revoke_tokens(&name).await?;
            println!("revoked {n} token(s)");
        }
        UserCmd::Share {
            agent,
            name,
            access,
        } => {
            let access = match access {
                AccessArg::Read => Some(AgentAccess::Read),
                AccessArg::Write => Some(AgentAccess::Write),
                AccessArg::Owner => Some(AgentAccess::Owner),
                AccessArg::None => None,
            };
            users.share(&AgentId::from(agent), &name, access).await?;
        }
    }
    Ok(())
}
