//! TLS of the cloud's connections (and of an https proxy's): rustls with ring, TLS 1.2
//! and 1.3, the webpki roots and every certificate of the CA bundles a cloud names (a
//! `cacert` file, a credentials Secret's `cacert` key); with `verify: false`, no
//! verification at all.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::error::ErrorKind;

/// The client side of TLS for connections trusting `roots` (where each bundle came
/// from, for errors, and its PEM text), or anything when `insecure`.
pub(crate) fn client_config(
    roots: &[(String, Vec<u8>)],
    insecure: bool,
) -> Result<rustls::ClientConfig, ErrorKind> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("cannot set up TLS: {e}")))?;
    let tls = match insecure {
        true => tls
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(unverified::Anything)),
        false => tls.with_root_certificates(trusted(roots)?),
    };
    Ok(tls.with_no_client_auth())
}

/// The webpki roots and every certificate of the extra bundles.
fn trusted(roots: &[(String, Vec<u8>)]) -> Result<rustls::RootCertStore, ErrorKind> {
    let mut store = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for (origin, pem) in roots {
        for cert in root_certificates(origin, pem)? {
            store.add(cert).map_err(|e| {
                config_error(format!("{origin} holds a certificate rustls refuses: {e}"))
            })?;
        }
    }
    Ok(store)
}

/// The certificates of a PEM bundle; an unreadable or empty one is a configuration error.
fn root_certificates(origin: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, ErrorKind> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|_| config_error(format!("{origin} is not a PEM certificate bundle")))?;
    if certs.is_empty() {
        return Err(config_error(format!("{origin} holds no PEM certificate")));
    }
    Ok(certs)
}

pub(crate) fn config_error(message: String) -> ErrorKind {
    ErrorKind::Config { message }
}

/// `verify: false`: every certificate and handshake signature is taken.
mod unverified {
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, Error, SignatureScheme};

    #[derive(Debug)]
    pub struct Anything;

    impl ServerCertVerifier for Anything {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            _now: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            _message: &[u8],
            _cert: &CertificateDer<'_>,
            _dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn verify_tls13_signature(
            &self,
            _message: &[u8],
            _cert: &CertificateDer<'_>,
            _dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            rustls::crypto::ring::default_provider()
                .signature_verification_algorithms
                .supported_schemes()
        }
    }
}
