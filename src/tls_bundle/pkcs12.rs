//! A PKCS#12 bundle as Octavia reads it from Barbican: the certificates and the
//! private key in plain bags, no password and no MAC (what `openssl pkcs12 -export
//! -nomac -keypbe NONE -certpbe NONE` writes). Barbican keeps the secret encrypted;
//! a password here would only have to be stored beside it.

use super::der::{self, CONTEXT_0, INTEGER, NULL, OCTET_STRING, sequence, tlv};

/// The PKCS#12 encoding of `certificates` (the leaf first) and `key` (PKCS#8).
pub fn bundle(certificates: &[Vec<u8>], key_pkcs8: &[u8]) -> Vec<u8> {
    let cert_bags: Vec<Vec<u8>> = certificates.iter().map(|c| cert_bag(c)).collect();
    let cert_refs: Vec<&[u8]> = cert_bags.iter().map(Vec::as_slice).collect();
    let key_bag = sequence(&[&bag_oid(1), &tlv(CONTEXT_0, key_pkcs8)]);
    let safe = sequence(&[&data(&sequence(&cert_refs)), &data(&sequence(&[&key_bag]))]);
    sequence(&[&tlv(INTEGER, &[3]), &data(&safe)])
}

/// `ContentInfo` of type data around `content`.
fn data(content: &[u8]) -> Vec<u8> {
    let pkcs7_data = der::oid(&[1, 2, 840, 113_549, 1, 7, 1]);
    sequence(&[&pkcs7_data, &tlv(CONTEXT_0, &tlv(OCTET_STRING, content))])
}

/// The OID of PKCS#12 bag type `n` (1 key, 3 certificate).
fn bag_oid(n: u64) -> Vec<u8> {
    der::oid(&[1, 2, 840, 113_549, 1, 12, 10, 1, n])
}

fn cert_bag(certificate: &[u8]) -> Vec<u8> {
    let x509 = der::oid(&[1, 2, 840, 113_549, 1, 9, 22, 1]);
    let value = sequence(&[&x509, &tlv(CONTEXT_0, &tlv(OCTET_STRING, certificate))]);
    sequence(&[&bag_oid(3), &tlv(CONTEXT_0, &value)])
}

/// A PKCS#1 RSA key as PKCS#8.
pub fn pkcs8_of_rsa(pkcs1: &[u8]) -> Vec<u8> {
    let algorithm = sequence(&[&der::oid(&[1, 2, 840, 113_549, 1, 1, 1]), &tlv(NULL, &[])]);
    sequence(&[&tlv(INTEGER, &[0]), &algorithm, &tlv(OCTET_STRING, pkcs1)])
}

/// A SEC1 EC key as PKCS#8; `None` when it does not name its curve.
pub fn pkcs8_of_ec(sec1: &[u8]) -> Option<Vec<u8>> {
    let (key, _) = der::read(sec1)?;
    let curve = der::children(key.content)?
        .into_iter()
        .find(|e| e.tag == CONTEXT_0)
        .and_then(|params| der::read(params.content))
        .map(|(oid, _)| oid.whole)?;
    let algorithm = sequence(&[&der::oid(&[1, 2, 840, 10_045, 2, 1]), curve]);
    Some(sequence(&[
        &tlv(INTEGER, &[0]),
        &algorithm,
        &tlv(OCTET_STRING, sec1),
    ]))
}
