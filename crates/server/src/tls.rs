//! HTTPS for `engram serve` beyond loopback: a certificate and key from PEM files, or a
//! self-signed pair made once and kept in the data directory, whose SHA-256 fingerprint a
//! client pins instead of trusting a certificate authority.
//!
//! [`TlsListener`] hands axum connections whose TLS handshake is done. Handshakes run as tasks
//! of their own, each with a deadline, so a client that connects and says nothing holds up no
//! one else; a failed handshake (plain HTTP sent to the HTTPS port, a client that does not
//! trust the certificate) is logged and dropped.

use sha2::{Digest, Sha256};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;

/// How long a client may take over its TLS handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// How many TLS handshakes may be under way at once. Past it, no connection is accepted until
/// one finishes or times out: the others wait in the kernel's backlog, so a flood of silent
/// connections costs a bounded number of tasks and buffers, not one per connection.
pub const MAX_HANDSHAKES: usize = 128;

/// Errors of setting TLS up: a file that cannot be read or written, PEM without a
/// certificate or key, or a key that does not fit the certificate.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

/// A certificate chain and its private key, ready to serve.
pub struct TlsIdentity {
    config: Arc<ServerConfig>,
    /// SHA-256 of the first certificate's DER bytes as upper-case hex pairs joined by `:`
    /// (how browsers and `openssl x509 -fingerprint -sha256` show it).
    pub fingerprint: String,
}

impl TlsIdentity {
    /// Reads the PEM files `cert` (the chain, leaf first) and `key` (PKCS#8, PKCS#1 or SEC1).
    ///
    /// Errors: [`TlsError`] naming the file that cannot be read or holds no certificate or
    /// key, or saying the key does not fit.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| TlsError(format!("cannot read {}: {e}", p.display())))
        };
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError(format!("{}: not a PEM certificate: {e}", cert.display())))?;
        if chain.is_empty() {
            return Err(TlsError(format!("{} holds no certificate", cert.display())));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| TlsError(format!("{}: no private key in it: {e}", key.display())))?;
        Self::new(chain, key)
    }

    /// The self-signed pair kept in `dir` (`cert.pem`, `key.pem`; made on first use, the key
    /// readable by the user alone), valid for `names` (DNS names or IP addresses). The pair is
    /// kept across restarts so a pinned fingerprint stays valid; a pair made for other names
    /// is made again (and its fingerprint changes).
    ///
    /// Errors: [`TlsError`] when the directory or files cannot be written or read.
    pub fn self_signed(dir: &Path, names: &[String]) -> Result<Self, TlsError> {
        let (cert, key, for_names) = (
            dir.join("cert.pem"),
            dir.join("key.pem"),
            dir.join("names.txt"),
        );
        let wanted = names.join("\n");
        let current = std::fs::read_to_string(&for_names).is_ok_and(|n| n == wanted);
        if !(current && cert.is_file() && key.is_file()) {
            make_self_signed(dir, names, &cert, &key)?;
            std::fs::write(&for_names, wanted).map_err(|e| write_error(&for_names, e))?;
        }
        Self::from_pem_files(&cert, &key)
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsError> {
        let fingerprint = fingerprint(&chain[0]);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(format!("TLS set-up: {e}")))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError(format!("the key does not fit the certificate: {e}")))?;
        // HTTP/1.1 only, as over plain HTTP (axum serves HTTP/2 only with its `http2`
        // feature): a browser offered `h2` here would pick it and get no answer.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            config: Arc::new(config),
            fingerprint,
        })
    }
}

/// SHA-256 of `cert` as upper-case hex pairs joined by `:`.
pub fn fingerprint(cert: &[u8]) -> String {
    Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError(format!("cannot write {}: {e}", path.display()))
}

fn make_self_signed(dir: &Path, names: &[String], cert: &Path, key: &Path) -> Result<(), TlsError> {
    let pair = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| TlsError(format!("cannot make a certificate for {names:?}: {e}")))?;
    // Private as the rest of the data directory: the directory 0700, the key 0600, written
    // under a new name made 0600 before anything is in it.
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| write_error(dir, e))?;
    let key_tmp: PathBuf = dir.join("key.pem.tmp");
    let _ = std::fs::remove_file(&key_tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&key_tmp)
        .map_err(|e| write_error(&key_tmp, e))?;
    std::io::Write::write_all(&mut file, pair.signing_key.serialize_pem().as_bytes())
        .map_err(|e| write_error(&key_tmp, e))?;
    drop(file);
    std::fs::rename(&key_tmp, key).map_err(|e| write_error(key, e))?;
    std::fs::write(cert, pair.cert.pem()).map_err(|e| write_error(cert, e))
}

/// A TCP listener whose connections come out with their TLS handshake done.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
    max_handshakes: usize,
}

impl TlsListener {
    /// Serves `identity` on the bound `tcp`, with up to [`MAX_HANDSHAKES`] handshakes at once.
    pub fn new(tcp: TcpListener, identity: &TlsIdentity) -> Self {
        Self {
            tcp,
            acceptor: TlsAcceptor::from(Arc::clone(&identity.config)),
            handshakes: JoinSet::new(),
            max_handshakes: MAX_HANDSHAKES,
        }
    }

    /// The same listener with another cap on handshakes at once (at least 1).
    pub fn with_max_handshakes(self, max: usize) -> Self {
        Self {
            max_handshakes: max.max(1),
            ..self
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept(), if self.handshakes.len() < self.max_handshakes => match accepted {
                    Ok((tcp, addr)) => {
                        // SSE chunks are small writes (see `serve`).
                        let _ = tcp.set_nodelay(true);
                        let acceptor = self.acceptor.clone();
                        self.handshakes.spawn(async move {
                            match tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(tcp)).await {
                                Ok(Ok(tls)) => Some((tls, addr)),
                                Ok(Err(e)) => {
                                    tracing::debug!(%addr, error = %e, "TLS handshake failed");
                                    None
                                }
                                Err(_) => {
                                    tracing::debug!(%addr, "TLS handshake timed out");
                                    None
                                }
                            }
                        });
                    }
                    // Out of file descriptors and the like: wait a little, as axum does.
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(connection)) = done {
                        return connection;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
