use chrono::{TimeZone, Utc};

use super::*;

const WEB_CRT: &[u8] = include_bytes!("../../tests/fixtures/tls/web.crt");
const WEB_KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/web.key");
const RENEWED_CRT: &[u8] = include_bytes!("../../tests/fixtures/tls/web-renewed.crt");
const RENEWED_KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/web-renewed.key");
const API_CRT: &[u8] = include_bytes!("../../tests/fixtures/tls/api.crt");
const API_KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/api.key");
const EXPIRED_CRT: &[u8] = include_bytes!("../../tests/fixtures/tls/expired.crt");
const EXPIRED_KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/expired.key");

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
        .single()
        .expect("a date")
}

/// The bags of a bundle: (bag type's last arc, bag value's first element's tag).
fn bag_kinds(pkcs12: &[u8]) -> Vec<u8> {
    let (pfx, _) = der::read(pkcs12).expect("a PFX");
    let fields = der::children(pfx.content).expect("PFX fields");
    assert_eq!(fields[0].content, [3], "PKCS#12 version 3");
    let octets = |info: &der::Element<'_>| -> Vec<u8> {
        let parts = der::children(info.content).expect("ContentInfo");
        let (explicit, _) = der::read(parts[1].content).expect("[0] content");
        explicit.content.to_vec()
    };
    let safe = octets(&fields[1]);
    let (safe, _) = der::read(&safe).expect("AuthenticatedSafe");
    let mut kinds = Vec::new();
    for info in der::children(safe.content).expect("ContentInfos") {
        let contents = octets(&info);
        let (bags, _) = der::read(&contents).expect("SafeContents");
        for bag in der::children(bags.content).expect("SafeBags") {
            let parts = der::children(bag.content).expect("SafeBag");
            kinds.push(*parts[0].content.last().expect("bag OID"));
        }
    }
    kinds
}

#[test]
fn each_key_encoding_packs_the_certificate_its_chain_and_the_key() {
    for (crt, key) in [
        (WEB_CRT, WEB_KEY),
        (RENEWED_CRT, RENEWED_KEY),
        (API_CRT, API_KEY),
    ] {
        let b = bundle(crt, key, now()).expect("a good pair");
        // Leaf and CA as certificate bags (3), then the key bag (1).
        assert_eq!(bag_kinds(&b.pkcs12), [3, 3, 1]);
        assert_eq!(b.fingerprint.len(), 16);
        assert!(b.not_after > now());
    }
}

#[test]
fn the_same_secret_packs_to_the_same_name_and_a_renewed_one_to_another() {
    let first = bundle(WEB_CRT, WEB_KEY, now()).expect("good");
    let again = bundle(WEB_CRT, WEB_KEY, now()).expect("good");
    let renewed = bundle(RENEWED_CRT, RENEWED_KEY, now()).expect("good");
    assert_eq!(first.fingerprint, again.fingerprint);
    assert_ne!(first.fingerprint, renewed.fingerprint);
}

#[test]
fn a_bad_pair_is_refused_with_what_is_wrong() {
    assert_eq!(
        bundle(WEB_CRT, API_KEY, now()),
        Err(BundleError::KeyMismatch)
    );
    assert_eq!(
        bundle(b"not pem", WEB_KEY, now()),
        Err(BundleError::NoCertificate)
    );
    assert_eq!(bundle(WEB_CRT, b"", now()), Err(BundleError::NoKey));
    let garbled = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert_eq!(
        bundle(garbled, WEB_KEY, now()),
        Err(BundleError::UnreadableCertificate)
    );
    let expired_at = Utc.with_ymd_and_hms(2021, 1, 1, 0, 0, 0).single();
    assert_eq!(
        bundle(EXPIRED_CRT, EXPIRED_KEY, now()),
        Err(BundleError::Expired(expired_at.expect("a date")))
    );
    let before = Utc.with_ymd_and_hms(2019, 6, 1, 0, 0, 0).single();
    assert!(matches!(
        bundle(EXPIRED_CRT, EXPIRED_KEY, before.expect("a date")),
        Err(BundleError::NotYetValid(_))
    ));
}

#[test]
fn a_chain_longer_than_barbican_takes_is_refused_before_any_store() {
    let long: Vec<u8> = std::iter::once(WEB_CRT)
        .chain(std::iter::repeat_n(
            &include_bytes!("../../tests/fixtures/tls/ca.crt")[..],
            20,
        ))
        .flatten()
        .copied()
        .collect();
    assert!(matches!(
        bundle(&long, WEB_KEY, now()),
        Err(BundleError::TooLarge(n)) if n > MAX_BUNDLE
    ));
}

#[test]
fn a_bundle_never_shows_its_key() {
    let b = bundle(WEB_CRT, WEB_KEY, now()).expect("good");
    assert_eq!(format!("{b:?}"), format!("Bundle({})", b.fingerprint));
}

// A reader that is not ours: OpenSSL's `pkcs12` reads each bundle back, as Barbican's
// and Octavia's (pyOpenSSL, cryptography) do.

/// A scratch directory, removed when the test ends, passed or failed.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("verda-tls-bundle-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&dir).expect("a scratch directory");
        Self(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What `openssl ARGS` prints; a missing binary fails the test saying what to install.
fn openssl(args: &[&str]) -> String {
    let out = match std::process::Command::new("openssl").args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "the openssl command is not installed: these tests read the PKCS#12 bundles back \
             with OpenSSL, a parser that is not ours; install it (Debian: apt-get install -y openssl)"
        ),
        Err(e) => panic!("cannot run openssl: {e}"),
    };
    assert!(
        out.status.success(),
        "openssl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("openssl prints text")
}

/// The PEM block of `label` in `text`, markers included.
fn pem_block<'a>(text: &'a str, label: &str) -> &'a str {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("no {begin} in:\n{text}"));
    let stop = text[start..].find(&end).expect("an END marker") + start + end.len();
    &text[start..stop]
}

/// Packs `crt` and the key in file `key_file`, has OpenSSL read the bundle (no password,
/// as Octavia reads it) and checks it gives back every certificate, byte for byte and in
/// order, and the key, as OpenSSL itself reads the key file.
fn assert_openssl_reads_back(scratch: &Scratch, crt: &[u8], key_file: &str, now: DateTime<Utc>) {
    let key = std::fs::read(key_file).expect("the key file");
    let b = bundle(crt, &key, now).expect("a good pair");
    let p12 = scratch.path("bundle.p12");
    std::fs::write(&p12, &b.pkcs12).expect("write the bundle");
    let read = openssl(&["pkcs12", "-in", &p12, "-passin", "pass:", "-nodes"]);
    let certificates = |pem: &[u8]| -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .expect("PEM certificates")
    };
    let (want, got) = (certificates(crt), certificates(read.as_bytes()));
    assert!(
        want.len() >= 2,
        "{key_file}: a chain, not a lone certificate"
    );
    assert_eq!(got, want, "{key_file}: the certificates OpenSSL reads");
    let want_key = openssl(&["pkey", "-in", key_file]);
    assert_eq!(
        pem_block(&read, "PRIVATE KEY"),
        pem_block(&want_key, "PRIVATE KEY"),
        "{key_file}: the key OpenSSL reads"
    );
}

#[test]
fn openssl_reads_each_key_encoding_back_from_the_bundle() {
    let scratch = Scratch::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    // RSA PKCS#1, RSA PKCS#8, ECDSA SEC1; each certificate with its CA as the chain.
    for name in ["web", "web-renewed", "api"] {
        let crt = std::fs::read(format!("{dir}/{name}.crt")).expect("the fixture");
        assert_openssl_reads_back(&scratch, &crt, &format!("{dir}/{name}.key"), now());
    }
}

/// A P-256 key and certificate `/CN=verda test NAME` made by OpenSSL: self-signed, or
/// signed by `issuer` (certificate and key files) with the `x509 -req` options `extra`.
/// Their files' paths.
fn openssl_certificate(
    s: &Scratch,
    name: &str,
    issuer: Option<(&str, &str)>,
    extra: &[&str],
) -> (String, String) {
    let (crt, key, csr) = (
        s.path(&format!("{name}.crt")),
        s.path(&format!("{name}.key")),
        s.path(&format!("{name}.csr")),
    );
    let subject = format!("/CN=verda test {name}");
    let new_key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        &key,
        "-subj",
        &subject,
    ];
    let days = ["-days", "36500", "-out", &crt];
    match issuer {
        None => openssl(&[&["req", "-x509"][..], &new_key, &days].concat()),
        Some((ca, ca_key)) => {
            openssl(&[&["req", "-out", &csr][..], &new_key].concat());
            let sign = ["x509", "-req", "-in", &csr, "-CA", ca, "-CAkey", ca_key];
            openssl(&[&sign[..], &days, extra].concat())
        }
    };
    (crt, key)
}

#[test]
fn openssl_reads_a_leaf_and_its_intermediate_back_from_the_bundle() {
    // root -> intermediate -> leaf; tls.crt holds the leaf, then the intermediate, as
    // cert-manager writes it.
    let s = Scratch::new();
    let (root, root_key) = openssl_certificate(&s, "root", None, &[]);
    let ca_ext = s.path("ca.ext");
    let ca = "basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign\n";
    std::fs::write(&ca_ext, ca).expect("write the extensions");
    let as_ca = ["-set_serial", "2", "-extfile", &ca_ext];
    let (intermediate, intermediate_key) = openssl_certificate(
        &s,
        "intermediate",
        Some((root.as_str(), root_key.as_str())),
        &as_ca,
    );
    let by_intermediate = Some((intermediate.as_str(), intermediate_key.as_str()));
    let (leaf, leaf_key) = openssl_certificate(&s, "leaf", by_intermediate, &["-set_serial", "3"]);
    let verify = [
        "verify",
        "-CAfile",
        &root,
        "-untrusted",
        &intermediate,
        &leaf,
    ];
    openssl(&verify);
    let chain = [std::fs::read(&leaf), std::fs::read(&intermediate)]
        .into_iter()
        .map(|f| f.expect("a certificate OpenSSL wrote"))
        .collect::<Vec<_>>()
        .concat();
    assert_openssl_reads_back(&s, &chain, &leaf_key, Utc::now());
}
