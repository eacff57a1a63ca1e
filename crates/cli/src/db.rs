//! `engram db copy`: one database into another, through the storage interface — the
//! desktop's SQLite file onto a server's PostgreSQL, or back.

use crate::database_url::redacted;
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use engram_service::db_copy::{CopyReport, Database, copy_database};
use std::path::Path;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum DbCmd {
    /// Copy every agent — ids, memory with its history, conversation, passages, tools, users
    /// and their access — into an empty database. Each side is `sqlite:PATH` (the desktop's
    /// `engram.db`; created when it is the destination) or `postgres://user@host:port/db`.
    Copy {
        /// The database to read.
        #[arg(long)]
        from: String,
        /// The database to write: it must hold no agents, blocks, tools or users.
        #[arg(long)]
        to: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `db` command (no engine is opened: it works on the databases named).
pub async fn db(cmd: DbCmd) -> Result<()> {
    match cmd {
        DbCmd::Copy { from, to, json } => {
            let source = open(&from, false).await?;
            let destination = open(&to, true).await?;
            let report = copy_database(&source, &destination)
                .await
                .with_context(|| format!("cannot copy {} to {}", shown(&from), shown(&to)))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print_report(&report);
            }
            Ok(())
        }
    }
}

fn print_report(r: &CopyReport) {
    println!(
        "copied {} agent(s), {} block(s), {} message(s), {} passage(s), {} tool(s), {} user(s)",
        r.agents, r.blocks, r.messages, r.passages, r.tools, r.users
    );
    for w in &r.warnings {
        println!("note: {w}");
    }
}

/// One side of a copy; an SQLite source must exist.
async fn open(spec: &str, create: bool) -> Result<Database> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let path = Path::new(path);
        if !create && !path.is_file() {
            bail!("there is no database at {}", path.display());
        }
        return Database::sqlite(path).with_context(|| format!("cannot open {}", path.display()));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let pg = engram_store_pg::PgStore::connect(spec)
            .await
            .with_context(|| format!("cannot open the database {}", redacted(spec)))?;
        return Ok(Database::on(Arc::new(pg)));
    }
    bail!(
        "{}: name a database as sqlite:PATH or postgres://user@host:port/dbname",
        shown(spec)
    )
}

/// A database as messages name it: a file's path, a server's URL without its password.
fn shown(spec: &str) -> String {
    if spec.starts_with("sqlite:") {
        spec.to_owned()
    } else {
        redacted(spec)
    }
}
