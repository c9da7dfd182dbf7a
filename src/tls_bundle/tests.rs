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
