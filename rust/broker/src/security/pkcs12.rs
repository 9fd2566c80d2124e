//! PKCS12 keystores and truststores (`ssl.keystore.type=PKCS12`), as `keytool` and
//! `openssl pkcs12 -export` write them.
//!
//! Read with `p12-keystore`: pure Rust (no OpenSSL to link), it decrypts both the modern
//! PBES2 (PBKDF2 + AES, the default of OpenSSL 3 and of Java since 8u301) and the legacy
//! PBES1 (3DES/RC2) bags, checks the MAC, and understands Java's trusted-certificate
//! bags. The `p12` crate was the other candidate; it only decrypts the legacy schemes.
//!
//! One password opens the store and its key (`ssl.keystore.password`); Java's PKCS12
//! stores cannot have a different key password either. Should the store have been made
//! with `ssl.key.password`, that one is tried second.

use p12_keystore::{KeyStore, Pkcs12Archive, Pkcs12ImportPolicy};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::settings::ListenerKeys;

fn bad(keys: &ListenerKeys<'_>, key: &str, reason: impl std::fmt::Display) -> anyhow::Error {
    keys.refused(key, reason)
}

/// The file at `<prefix>.location` and the passwords to try on it.
fn read(keys: &ListenerKeys<'_>, prefix: &str) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
    let location_key = format!("{prefix}.location");
    let path = keys.get(&location_key).unwrap_or_default();
    let data = std::fs::read(&path)
        .map_err(|e| bad(keys, &location_key, format!("cannot read {path}: {e}")))?;
    let password_key = format!("{prefix}.password");
    let mut passwords: Vec<String> = keys.get(&password_key).into_iter().collect();
    if prefix == "ssl.keystore" {
        passwords.extend(keys.get("ssl.key.password"));
    }
    if passwords.is_empty() {
        return Err(bad(
            keys,
            &password_key,
            format!("a PKCS12 store ({path}) needs its password"),
        ));
    }
    Ok((data, passwords))
}

/// Opens the store with the first password that works.
fn open<T>(
    keys: &ListenerKeys<'_>,
    prefix: &str,
    parse: impl Fn(&[u8], &str) -> Result<T, p12_keystore::error::Error>,
) -> anyhow::Result<T> {
    let (data, passwords) = read(keys, prefix)?;
    let mut last = None;
    for password in &passwords {
        match parse(&data, password) {
            Ok(store) => return Ok(store),
            Err(e) => last = Some(e),
        }
    }
    let reason = last.map(|e| e.to_string()).unwrap_or_default();
    Err(bad(
        keys,
        &format!("{prefix}.location"),
        format!("cannot open the PKCS12 store (wrong {prefix}.password, or not PKCS12): {reason}"),
    ))
}

/// The certificate chain and private key of the store's (first) key entry.
pub fn keystore(
    keys: &ListenerKeys<'_>,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let store = open(keys, "ssl.keystore", |data, password| {
        KeyStore::from_pkcs12(data, password, Pkcs12ImportPolicy::Strict)
    })?;
    let Some((_alias, chain)) = store.private_key_chain() else {
        return Err(bad(
            keys,
            "ssl.keystore.location",
            "the PKCS12 keystore has no private key with its certificate",
        ));
    };
    let certs = chain
        .certs()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certs, key))
}

/// Every certificate of the store: Java's trusted-certificate entries and the plain
/// certificate bags `openssl pkcs12 -export -nokeys` writes alike.
pub fn truststore(keys: &ListenerKeys<'_>) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let archive = open(keys, "ssl.truststore", Pkcs12Archive::from_pkcs12)?;
    let certs: Vec<_> = archive
        .certs
        .iter()
        .map(|bag| CertificateDer::from(bag.cert.as_der().to_vec()))
        .collect();
    if certs.is_empty() {
        return Err(bad(
            keys,
            "ssl.truststore.location",
            "the PKCS12 truststore has no certificate",
        ));
    }
    Ok(certs)
}
