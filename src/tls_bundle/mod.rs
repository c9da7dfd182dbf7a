//! A `kubernetes.io/tls` Secret's certificate, chain and key: checked (each parses, the
//! key is the certificate's, the certificate is in date) and packed as the PKCS#12
//! bundle a terminated-https listener reads from Barbican. Pure.

pub mod der;
mod pkcs12;

use chrono::{DateTime, NaiveDateTime, Utc};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A checked certificate, ready to store.
#[derive(Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The PKCS#12 encoding: the certificate, its chain and the key.
    pub pkcs12: Vec<u8>,
    /// The first 16 hex digits of the bundle's SHA-256: it names what is stored, so a
    /// renewed certificate is stored anew and the same one never twice.
    pub fingerprint: String,
    /// When the certificate expires.
    pub not_after: DateTime<Utc>,
}

impl std::fmt::Debug for Bundle {
    // The bundle holds a private key: only its name may be shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bundle({})", self.fingerprint)
    }
}

/// Why a Secret's certificate and key cannot be served. The messages never quote the
/// Secret's contents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("tls.crt holds no PEM certificate")]
    NoCertificate,
    #[error("tls.crt holds a certificate that is not valid DER X.509")]
    UnreadableCertificate,
    #[error("tls.key holds no PEM private key")]
    NoKey,
    #[error(
        "tls.key is not a key Octavia can serve (RSA of 2048 bits or more, ECDSA P-256 or P-384, Ed25519)"
    )]
    UnsupportedKey,
    #[error("tls.key is not the private key of the certificate in tls.crt")]
    KeyMismatch,
    #[error("the certificate in tls.crt expired at {0}")]
    Expired(DateTime<Utc>),
    #[error("the certificate in tls.crt is valid only from {0}")]
    NotYetValid(DateTime<Utc>),
    #[error(
        "the certificate, its chain and key come to {0} bytes, more than the {MAX_BUNDLE} Barbican takes: leave the root CA out of tls.crt"
    )]
    TooLarge(usize),
}

/// The largest bundle Barbican stores: its 20,000-character limit on a payload, in
/// base64.
pub const MAX_BUNDLE: usize = 20_000 / 4 * 3;

/// Checks `cert_pem` (the certificate, then its chain) and `key_pem` at `now`, and
/// packs them.
pub fn bundle(cert_pem: &[u8], key_pem: &[u8], now: DateTime<Utc>) -> Result<Bundle, BundleError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| BundleError::UnreadableCertificate)?;
    let leaf = chain.first().ok_or(BundleError::NoCertificate)?;
    let facts = leaf_facts(leaf).ok_or(BundleError::UnreadableCertificate)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| BundleError::NoKey)?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|_| BundleError::UnsupportedKey)?;
    let public = signing.public_key().ok_or(BundleError::UnsupportedKey)?;
    if public.as_ref() != facts.public_key {
        return Err(BundleError::KeyMismatch);
    }
    if now > facts.not_after {
        return Err(BundleError::Expired(facts.not_after));
    }
    if now < facts.not_before {
        return Err(BundleError::NotYetValid(facts.not_before));
    }
    let pkcs8 = match &key {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der().to_vec(),
        PrivateKeyDer::Pkcs1(k) => pkcs12::pkcs8_of_rsa(k.secret_pkcs1_der()),
        PrivateKeyDer::Sec1(k) => {
            pkcs12::pkcs8_of_ec(k.secret_sec1_der()).ok_or(BundleError::UnsupportedKey)?
        }
        _ => return Err(BundleError::UnsupportedKey),
    };
    let certificates: Vec<Vec<u8>> = chain.iter().map(|c| c.to_vec()).collect();
    let pkcs12 = pkcs12::bundle(&certificates, &pkcs8);
    if pkcs12.len() > MAX_BUNDLE {
        return Err(BundleError::TooLarge(pkcs12.len()));
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &pkcs12);
    let fingerprint = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Bundle {
        pkcs12,
        fingerprint,
        not_after: facts.not_after,
    })
}

/// What the checks read from the leaf certificate.
struct LeafFacts<'a> {
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
    /// The whole SubjectPublicKeyInfo.
    public_key: &'a [u8],
}

/// Certificate ::= SEQUENCE { tbsCertificate, … }; tbsCertificate ::= SEQUENCE {
/// [0] version OPTIONAL, serial, signature, issuer, validity, subject, spki, … }.
fn leaf_facts<'a>(cert: &'a CertificateDer<'_>) -> Option<LeafFacts<'a>> {
    let (outer, _) = der::read(cert.as_ref())?;
    let (tbs, _) = der::read(outer.content)?;
    let fields = der::children(tbs.content)?;
    let skip = usize::from(fields.first()?.tag == der::CONTEXT_0);
    let validity = fields.get(skip + 3)?;
    let spki = fields.get(skip + 5)?;
    let times = der::children(validity.content)?;
    Some(LeafFacts {
        not_before: time(times.first()?)?,
        not_after: time(times.get(1)?)?,
        public_key: spki.whole,
    })
}

/// UTCTime (`YYMMDDHHMMSSZ`, 1950-2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn time(e: &der::Element<'_>) -> Option<DateTime<Utc>> {
    let text = std::str::from_utf8(e.content).ok()?;
    let full = match e.tag {
        der::UTC_TIME => {
            let century = if text.get(..2)? < "50" { "20" } else { "19" };
            format!("{century}{text}")
        }
        der::GENERALIZED_TIME => text.to_owned(),
        _ => return None,
    };
    let naive = NaiveDateTime::parse_from_str(&full, "%Y%m%d%H%M%SZ").ok()?;
    Some(naive.and_utc())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
