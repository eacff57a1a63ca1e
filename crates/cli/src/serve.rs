//! `engram serve`: the Letta-compatible REST API on loopback, until Ctrl-C, SIGTERM or SIGHUP.

use anyhow::{Context as _, Result};
use clap::Args;
use engram_server::{Auth, DEFAULT_PORT, ServerConfig};
use engram_service::Engram;
use secrecy::ExposeSecret;
use std::io::Write as _;
use std::sync::Arc;

/// Options of `engram serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Loopback address to listen on (127.0.0.1, ::1 or localhost); others are refused.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Accept requests without the bearer token (local scripting only).
    #[arg(long)]
    pub no_auth: bool,
    /// Print the bearer token (kept in the keychain, made on first start) before serving.
    #[arg(long)]
    pub show_token: bool,
    /// Also serve a built web UI (e.g. `ui/dist`) at `/`, so Engram can be used from a browser
    /// at the printed address (append `#token=…` to sign it in).
    #[arg(long, value_name = "DIR")]
    pub ui_dir: Option<std::path::PathBuf>,
}

/// Serves until Ctrl-C, SIGTERM or SIGHUP, then stops cleanly: runs in flight are cancelled
/// (each keeps what already arrived), open requests finish, and the write-ahead log is
/// checkpointed into the database file. Prints `listening on http://ADDR` (and `token: …` with
/// `--show-token`) on stdout once the port is bound.
pub async fn run(engram: Arc<Engram>, args: ServeArgs) -> Result<()> {
    engram_server::loopback_addr(&args.host, args.port)?;
    if let Some(dir) = &args.ui_dir
        && !dir.join("index.html").is_file()
    {
        anyhow::bail!(
            "{} has no index.html: build the UI first (npm --prefix ui run build)",
            dir.display()
        );
    }
    let auth = if args.no_auth {
        Auth::Disabled
    } else {
        Auth::Token(
            engram
                .trust()
                .rest_api_token()
                .context("cannot read or create the REST API token")?,
        )
    };
    let listener = engram_server::bind(&args.host, args.port)
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on http://{addr}")?;
    match &auth {
        Auth::Token(token) if args.show_token => {
            writeln!(out, "token: {}", token.expose_secret())?;
        }
        Auth::Token(_) => eprintln!(
            "Requests need `Authorization: Bearer <token>`; `engram serve --show-token` prints it."
        ),
        Auth::Disabled => eprintln!("Authentication is off (--no-auth)."),
    }
    out.flush()?;
    drop(out);
    let shutdown = {
        let engram = Arc::clone(&engram);
        async move {
            stop_signal().await;
            let runs = engram.runs().cancel_all();
            // A pass in flight writes nothing when stopped; its turns wait for the next start.
            engram.sleeptime().stop();
            tracing::info!(runs, "stopping: runs cancelled");
        }
    };
    tokio::spawn(release_memory_now_and_then(Arc::clone(&engram)));
    // Vectors a restart left missing (a backfill cut short, a model changed just before).
    if let Err(e) = engram.archival().resume_backfills() {
        tracing::warn!(%e, "cannot resume embedding backfills");
    }
    // Folders linked to a directory on disk are kept in step while the server runs.
    engram.folders().resume_watches();
    let config = ServerConfig {
        ui_dir: args.ui_dir,
        ..ServerConfig::new(auth)
    };
    engram_server::serve(listener, Arc::clone(&engram), config, shutdown)
        .await
        .context("the REST API stopped")?;
    engram
        .checkpoint()
        .context("cannot checkpoint the database before exiting")?;
    Ok(())
}

/// How often a serving process gives SQLite's unused page cache back (see
/// `benches/memory.rs`: after a day of chats and exports this is what brings the idle
/// resident set down; the cache refills from the OS's file cache in microseconds).
const RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs for as long as the server does.
async fn release_memory_now_and_then(engram: Arc<Engram>) {
    let mut tick = tokio::time::interval(RELEASE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let e = Arc::clone(&engram);
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || e.release_memory()).await {
            tracing::warn!(error = %e, "cannot release the database's memory");
        }
    }
}

/// Resolves on the first of Ctrl-C, SIGTERM (what `kill` and service managers send) and
/// SIGHUP (the terminal went away).
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
                return;
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(
                    "cannot listen for SIGTERM/SIGHUP ({e}); only Ctrl-C stops the server cleanly"
                );
            }
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
