//! PKCS12 keystores and truststores.

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::settings::ListenerKeys;

pub fn keystore(
    keys: &ListenerKeys<'_>,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    anyhow::bail!(
        "invalid config {}: PKCS12 keystores are not supported yet; use ssl.keystore.type=PEM",
        keys.source_of("ssl.keystore.type")
    )
}

pub fn truststore(keys: &ListenerKeys<'_>) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    anyhow::bail!(
        "invalid config {}: PKCS12 truststores are not supported yet; use ssl.truststore.type=PEM",
        keys.source_of("ssl.truststore.type")
    )
}
