//! Just enough DER to read a certificate's validity and key and to write a PKCS#12
//! bundle: one tag-length-value at a time, definite lengths only.

/// DER tags used here.
pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const NULL: u8 = 0x05;
pub const OID: u8 = 0x06;
pub const UTC_TIME: u8 = 0x17;
pub const GENERALIZED_TIME: u8 = 0x18;
pub const SEQUENCE: u8 = 0x30;
/// `[0]`, constructed: explicit tags and the optional first field of many structures.
pub const CONTEXT_0: u8 = 0xa0;

/// One element read from the front of `input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element<'a> {
    pub tag: u8,
    /// Its contents, without tag and length.
    pub content: &'a [u8],
    /// Its whole encoding, tag and length included.
    pub whole: &'a [u8],
}

/// The element at the front of `input` and what follows it; `None` when `input` does
/// not start with a whole DER element.
pub fn read(input: &[u8]) -> Option<(Element<'_>, &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        0..=0x7f => (usize::from(first), rest),
        0x81..=0x84 => {
            let n = usize::from(first & 0x7f);
            let bytes = rest.get(..n)?;
            let len = bytes.iter().fold(0usize, |l, b| (l << 8) | usize::from(*b));
            (len, &rest[n..])
        }
        _ => return None,
    };
    let content = rest.get(..len)?;
    let header = input.len() - rest.len();
    let element = Element {
        tag,
        content,
        whole: &input[..header + len],
    };
    Some((element, &rest[len..]))
}

/// The elements inside `content`, in order; `None` when it does not divide into them.
pub fn children(mut content: &[u8]) -> Option<Vec<Element<'_>>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (e, rest) = read(content)?;
        out.push(e);
        content = rest;
    }
    Some(out)
}

/// `tag`, the DER length of `content`, `content`.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of these encoded elements.
pub fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    tlv(SEQUENCE, &parts.concat())
}

/// An object identifier from its dotted arcs (the first two joined as X.690 says).
pub fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    let first = arcs.first().copied().unwrap_or(0) * 40 + arcs.get(1).copied().unwrap_or(0);
    for arc in std::iter::once(first).chain(arcs.iter().skip(2).copied()) {
        let mut groups = vec![(arc & 0x7f) as u8];
        let mut rest = arc >> 7;
        while rest > 0 {
            groups.push(0x80 | (rest & 0x7f) as u8);
            rest >>= 7;
        }
        body.extend(groups.into_iter().rev());
    }
    tlv(OID, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_long_and_short_read_back_as_written() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let content = vec![7u8; len];
            let encoded = tlv(OCTET_STRING, &content);
            let (e, rest) = read(&encoded).expect("reads back");
            assert_eq!((e.tag, e.content.len(), rest.len()), (OCTET_STRING, len, 0));
            assert_eq!(e.whole, &encoded[..]);
        }
        assert_eq!(read(&[SEQUENCE, 0x82, 0x01]), None, "length cut short");
        assert_eq!(read(&[SEQUENCE, 3, 1]), None, "content cut short");
    }

    #[test]
    fn object_identifiers_encode_as_x690_says() {
        // rsaEncryption and ecPublicKey, as every certificate spells them.
        assert_eq!(
            oid(&[1, 2, 840, 113_549, 1, 1, 1]),
            [
                0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01
            ]
        );
        assert_eq!(
            oid(&[1, 2, 840, 10_045, 2, 1]),
            [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
        );
    }
}
