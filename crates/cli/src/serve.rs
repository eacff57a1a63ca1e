//! `engram serve`: the Letta-compatible REST API on loopback — or beyond it over HTTPS with
//! the bearer token required — until Ctrl-C, SIGTERM or SIGHUP.

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
    /// Address to listen on: loopback (127.0.0.1, ::1 or localhost), or with TLS any address
    /// of this machine (0.0.0.0 for all).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Serve HTTPS with a self-signed certificate made once and kept in the data directory
    /// (`tls/`); its SHA-256 fingerprint is printed for clients to pin.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: bool,
    /// Serve HTTPS with this certificate chain (PEM, leaf first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// A name (DNS name or IP address) clients reach the server by beyond loopback; requests
    /// naming another host are refused, and a self-signed certificate is made for these.
    /// Repeatable.
    #[arg(long = "name", value_name = "NAME")]
    pub names: Vec<String>,
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
    let tls_asked = args.tls_self_signed || args.tls_cert.is_some();
    if !tls_asked && !args.names.is_empty() {
        // A name allowed over plain HTTP would let a page whose DNS name points at this
        // machine (DNS rebinding) past the Host check.
        anyhow::bail!("--name is for serving over TLS: add --tls-self-signed or --tls-cert");
    }
    let remote = engram_server::loopback_addr(&args.host, args.port).is_err();
    if remote {
        // Beyond loopback: encrypted, and only with the token (checked before a certificate
        // is made for it).
        if !tls_asked {
            engram_server::loopback_addr(&args.host, args.port)?;
        }
        if args.no_auth {
            anyhow::bail!(
                "--no-auth is for loopback only: beyond it every request needs the token"
            );
        }
        if args.names.is_empty() {
            anyhow::bail!(
                "serving beyond loopback needs --name: the name or address clients reach this server by"
            );
        }
    }
    let tls = tls_identity(&engram, &args)?;
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
    let listener = if remote {
        engram_server::bind_any(&args.host, args.port).await
    } else {
        engram_server::bind(&args.host, args.port).await
    }
    .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout().lock();
    let scheme = if tls.is_some() { "https" } else { "http" };
    writeln!(out, "listening on {scheme}://{addr}")?;
    if let Some(identity) = &tls {
        writeln!(out, "certificate sha256: {}", identity.fingerprint)?;
    }
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
        hosts: args.names,
        ..ServerConfig::new(auth)
    };
    match tls {
        Some(identity) => {
            let listener = engram_server::tls::TlsListener::new(listener, &identity);
            engram_server::serve_tls(listener, Arc::clone(&engram), config, shutdown).await
        }
        None => engram_server::serve(listener, Arc::clone(&engram), config, shutdown).await,
    }
    .context("the REST API stopped")?;
    engram
        .checkpoint()
        .context("cannot checkpoint the database before exiting")?;
    Ok(())
}

/// The certificate to serve with, if TLS was asked for: the given PEM files, or the
/// self-signed pair in `<data dir>/tls/` made for `--name`s, the listening address (unless it
/// is all addresses) and the loopback names.
fn tls_identity(
    engram: &Engram,
    args: &ServeArgs,
) -> Result<Option<engram_server::tls::TlsIdentity>> {
    use engram_server::tls::TlsIdentity;
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        return Ok(Some(TlsIdentity::from_pem_files(cert, key)?));
    }
    if !args.tls_self_signed {
        return Ok(None);
    }
    let mut names = args.names.clone();
    let host = args.host.trim_matches(['[', ']']);
    let everywhere = host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified());
    let mut also = vec!["localhost", "127.0.0.1"];
    if !everywhere {
        also.push(host);
    }
    for name in also {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok(Some(TlsIdentity::self_signed(
        &engram.home().join("tls"),
        &names,
    )?))
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
