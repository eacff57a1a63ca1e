//! Trusting exactly one certificate: the one whose SHA-256 the person copied from
//! `engram serve` (it prints `certificate sha256: AB:CD:…`). A self-signed certificate has no
//! authority to vouch for it, so its fingerprint is what identifies the server: a connection
//! whose certificate has another one is refused before any request — or token — is sent. The
//! handshake's signatures are still checked with the usual algorithms, so only the holder of
//! that certificate's key can answer.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// A certificate's SHA-256, parsed from `AB:CD:…` (or the same hex without colons, any case).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// Parses a fingerprint as `engram serve` and `openssl x509 -fingerprint -sha256` print it.
    ///
    /// Errors: a message for people when it is not 32 hex pairs.
    pub fn parse(text: &str) -> Result<Self, String> {
        let hex: String = text
            .trim()
            .trim_start_matches("sha256:")
            .trim_start_matches("SHA256:")
            .chars()
            .filter(|c| *c != ':' && !c.is_whitespace())
            .collect();
        let bad = || {
            format!(
                "'{}' is not a SHA-256 fingerprint: expected 32 hex pairs like AB:CD:… (as `engram serve` prints it)",
                text.trim()
            )
        };
        if hex.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(out))
    }

    /// The fingerprint of a certificate (DER bytes).
    pub fn of(cert: &[u8]) -> Self {
        Self(Sha256::digest(cert).into())
    }
}

impl std::fmt::Display for Fingerprint {
    /// Upper-case hex pairs joined by `:`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pairs: Vec<String> = self.0.iter().map(|b| format!("{b:02X}")).collect();
        f.write_str(&pairs.join(":"))
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Accepts the server's certificate when its fingerprint is the pinned one.
#[derive(Debug)]
struct Pinned {
    pin: Fingerprint,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = Fingerprint::of(end_entity.as_ref());
        if seen == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate has the fingerprint {seen}, not the pinned {}",
                self.pin
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS client configuration that trusts only the certificate with fingerprint `pin`.
///
/// Errors: the provider's, when it supports no safe protocol version (not with aws-lc-rs).
pub(crate) fn pinned_config(pin: Fingerprint) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned { pin, provider }))
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_as_printed_and_refuse_anything_else() {
        let printed = "0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9:0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9";
        let fp = Fingerprint::parse(printed).unwrap();
        assert_eq!(fp.to_string(), printed);
        let bare = printed.replace(':', "").to_lowercase();
        assert_eq!(Fingerprint::parse(&format!(" sha256:{bare} ")).unwrap(), fp);
        for bad in [
            "",
            "AB:CD",
            &printed[..printed.len() - 3],
            &printed.replace('0', "G"),
        ] {
            assert!(Fingerprint::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Fingerprint::of(b"certificate bytes"),
            Fingerprint::of(b"certificate bytes")
        );
        assert_ne!(Fingerprint::of(b"one"), Fingerprint::of(b"two"));
    }
}
