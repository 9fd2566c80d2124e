//! Who a listener's certificate says the broker is: the subject and the subject
//! alternative names of its keystore's leaf certificate. A keystore replaced while the
//! broker runs must keep both, unless `ssl.allow.dn.changes` / `ssl.allow.san.changes`
//! allow a change, as Kafka's `SslFactory` rules (`CertificateEntries.ensureCompatible`):
//! clients that verify or pin the broker's name are not handed another one by a reload.

use std::collections::BTreeSet;

use super::principal::{der, subject_rfc2253};

/// 2.5.29.17, subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertIdentity {
    /// The subject in RFC 2253 form.
    pub subject: String,
    /// Each GeneralName of the subjectAltName extension as its DER element (a set: the
    /// order they come in does not matter, as to Kafka).
    pub alt_names: BTreeSet<Vec<u8>>,
}

impl CertIdentity {
    /// The identity of a DER certificate; `None` if it cannot be read.
    #[must_use]
    pub fn of(cert_der: &[u8]) -> Option<CertIdentity> {
        Some(CertIdentity {
            subject: subject_rfc2253(cert_der)?,
            alt_names: alt_names(cert_der)?,
        })
    }
}

/// The subjectAltName entries of a certificate (none without the extension).
fn alt_names(cert_der: &[u8]) -> Option<BTreeSet<Vec<u8>>> {
    let (_, cert, _) = der(cert_der)?;
    let (_, tbs, _) = der(cert)?;
    let mut rest = tbs;
    if der(rest)?.0 == 0xa0 {
        rest = der(rest)?.2; // explicit version
    }
    // serial, signature algorithm, issuer, validity, subject, subject public key.
    for _ in 0..6 {
        rest = der(rest)?.2;
    }
    let mut names = BTreeSet::new();
    // Then the optional unique ids ([1], [2]) and the extensions ([3]).
    while !rest.is_empty() {
        let (tag, content, next) = der(rest)?;
        rest = next;
        if tag != 0xa3 {
            continue;
        }
        let (_, mut extensions, _) = der(content)?;
        while !extensions.is_empty() {
            let (_, extension, next) = der(extensions)?;
            extensions = next;
            let (_, oid, mut fields) = der(extension)?;
            if oid != SUBJECT_ALT_NAME {
                continue;
            }
            if der(fields)?.0 == 0x01 {
                fields = der(fields)?.2; // critical
            }
            let (_, value, _) = der(fields)?;
            let (_, mut general_names, _) = der(value)?;
            while !general_names.is_empty() {
                let (_, _, next) = der(general_names)?;
                let whole = general_names.len() - next.len();
                names.insert(general_names[..whole].to_vec());
                general_names = next;
            }
        }
    }
    Some(names)
}

/// A GeneralName as Kafka's message shows it (`DNS:host`, `IP:1.2.3.4`, ...).
fn show(name: &[u8]) -> String {
    let Some((tag, content, _)) = der(name) else {
        return "?".into();
    };
    let text = || String::from_utf8_lossy(content).into_owned();
    match tag {
        0x81 => format!("email:{}", text()),
        0x82 => format!("DNS:{}", text()),
        0x86 => format!("URI:{}", text()),
        0x87 if content.len() == 4 => {
            format!(
                "IP:{}",
                std::net::Ipv4Addr::new(content[0], content[1], content[2], content[3])
            )
        }
        0x87 if content.len() == 16 => {
            let octets: [u8; 16] = content.try_into().unwrap_or([0; 16]);
            format!("IP:{}", std::net::Ipv6Addr::from(octets))
        }
        _ => content.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn shown(names: &BTreeSet<Vec<u8>>) -> String {
    let mut all: Vec<String> = names.iter().map(|n| show(n)).collect();
    all.sort();
    format!("[{}]", all.join(", "))
}

/// Kafka's check of a keystore replaced while the broker runs; the refusal in its words.
pub fn check_change(
    old: &CertIdentity,
    new: &CertIdentity,
    allow_dn_changes: bool,
    allow_san_changes: bool,
) -> Result<(), String> {
    if !allow_dn_changes && !old.subject.eq_ignore_ascii_case(&new.subject) {
        return Err(format!(
            "Keystore DistinguishedName does not match: existing={{DN={}}}, new={{DN={}}}",
            old.subject, new.subject
        ));
    }
    if !allow_san_changes && old.alt_names != new.alt_names {
        return Err(format!(
            "Keystore SubjectAltNames do not match: existing={{SAN={}}}, new={{SAN={}}}",
            shown(&old.alt_names),
            shown(&new.alt_names)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(subject: &str, names: &[&[u8]]) -> CertIdentity {
        CertIdentity {
            subject: subject.into(),
            alt_names: names.iter().map(|n| n.to_vec()).collect(),
        }
    }

    #[test]
    fn changes_are_refused_unless_allowed() {
        let localhost: &[u8] = b"\x82\x09localhost";
        let ip: &[u8] = &[0x87, 4, 127, 0, 0, 1];
        let a = identity("CN=localhost", &[localhost, ip]);
        assert_eq!(
            check_change(
                &a,
                &identity("cn=LOCALHOST", &[ip, localhost]),
                false,
                false
            ),
            Ok(())
        );
        let e =
            check_change(&a, &identity("CN=other", &[localhost, ip]), false, false).unwrap_err();
        assert_eq!(
            e,
            "Keystore DistinguishedName does not match: existing={DN=CN=localhost}, \
             new={DN=CN=other}"
        );
        assert!(check_change(&a, &identity("CN=other", &[localhost, ip]), true, false).is_ok());
        let e =
            check_change(&a, &identity("CN=localhost", &[localhost]), false, false).unwrap_err();
        assert_eq!(
            e,
            "Keystore SubjectAltNames do not match: existing={SAN=[DNS:localhost, \
             IP:127.0.0.1]}, new={SAN=[DNS:localhost]}"
        );
        assert!(check_change(&a, &identity("CN=localhost", &[]), false, true).is_ok());
    }
}
