//! The crypto info `setsockopt(SOL_TLS, TLS_TX | TLS_RX)` takes, built from the secrets
//! rustls extracts for one direction of a session.
//!
//! Every `tls12_crypto_info_*` struct of `linux/tls.h` is a `tls_crypto_info` header (two
//! native-endian `u16`: version, cipher) followed by byte arrays only — `iv`, `key`,
//! `salt`, `rec_seq` — so it has no padding and is written here as bytes, in that order.
//! The kernel's `salt` is the implicit part of the 12-byte nonce rustls calls `iv` (its
//! first 4 bytes for AES-GCM, none for ChaCha20-Poly1305) and the kernel's `iv` the rest;
//! `rec_seq` is the next record's sequence number, big-endian.

use rustls::{ConnectionTrafficSecrets, ProtocolVersion};

/// The longest crypto info (AES-256-GCM and ChaCha20-Poly1305): 4 + 8 + 32 + 4 + 8.
const CRYPTO_INFO_MAX_BYTES: usize = 56;

/// One direction's crypto info, ready for `setsockopt`.
#[derive(Clone, PartialEq, Eq)]
pub struct CryptoInfo {
    bytes: [u8; CRYPTO_INFO_MAX_BYTES],
    len: usize,
}

impl CryptoInfo {
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Deliberately no `Debug` of the bytes: they are session keys.
impl std::fmt::Debug for CryptoInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CryptoInfo({} bytes)", self.len)
    }
}

/// How the kernel lays out one cipher's crypto info.
struct Layout {
    cipher_type: u16,
    key_len: usize,
    salt_len: usize,
    iv_len: usize,
}

/// linux/tls.h: `TLS_CIPHER_*` and the array sizes of each `tls12_crypto_info_*`.
const AES_GCM_128: Layout = Layout {
    cipher_type: 51,
    key_len: 16,
    salt_len: 4,
    iv_len: 8,
};
const AES_GCM_256: Layout = Layout {
    cipher_type: 52,
    key_len: 32,
    salt_len: 4,
    iv_len: 8,
};
const CHACHA20_POLY1305: Layout = Layout {
    cipher_type: 54,
    key_len: 32,
    salt_len: 0,
    iv_len: 12,
};
/// `rec_seq`: 8 bytes for every cipher.
const REC_SEQ_LEN: usize = 8;

/// linux/tls.h `TLS_1_2_VERSION` / `TLS_1_3_VERSION`: the wire version numbers.
fn kernel_version(version: ProtocolVersion) -> Result<u16, String> {
    match version {
        ProtocolVersion::TLSv1_2 => Ok(0x0303),
        ProtocolVersion::TLSv1_3 => Ok(0x0304),
        other => Err(format!("{other:?} has no kernel TLS")),
    }
}

/// The crypto info for one direction: `seq` is the sequence number of the next record in
/// that direction, as rustls reports it with the secrets.
pub fn build(
    version: ProtocolVersion,
    seq: u64,
    secrets: &ConnectionTrafficSecrets,
) -> Result<CryptoInfo, String> {
    let (layout, key, iv) = match secrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&AES_GCM_128, key.as_ref(), iv),
        ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&AES_GCM_256, key.as_ref(), iv),
        ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
            (&CHACHA20_POLY1305, key.as_ref(), iv)
        }
        _ => return Err("a cipher the kernel has no TLS offload for".to_string()),
    };
    encode(kernel_version(version)?, layout, key, iv.as_ref(), seq)
}

/// Lay out one direction's crypto info from its raw parts.
fn encode(
    version: u16,
    layout: &Layout,
    key: &[u8],
    nonce: &[u8],
    seq: u64,
) -> Result<CryptoInfo, String> {
    if key.len() != layout.key_len || nonce.len() != layout.salt_len + layout.iv_len {
        return Err(format!(
            "unexpected secret sizes (key {} bytes, nonce {} bytes)",
            key.len(),
            nonce.len()
        ));
    }
    let mut info = CryptoInfo {
        bytes: [0; CRYPTO_INFO_MAX_BYTES],
        len: 0,
    };
    for part in [
        &version.to_ne_bytes()[..],
        &layout.cipher_type.to_ne_bytes(),
        &nonce[layout.salt_len..],
        key,
        &nonce[..layout.salt_len],
        &seq.to_be_bytes(),
    ] {
        info.bytes[info.len..info.len + part.len()].copy_from_slice(part);
        info.len += part.len();
    }
    debug_assert_eq!(
        info.len,
        4 + layout.iv_len + layout.key_len + layout.salt_len + REC_SEQ_LEN
    );
    Ok(info)
}

#[cfg(test)]
mod tests {
    use rustls::crypto::cipher::{AeadKey, Iv};

    use super::*;

    fn key_bytes() -> [u8; 32] {
        std::array::from_fn(|i| 0xA0 + i as u8)
    }

    fn nonce() -> [u8; 12] {
        std::array::from_fn(|i| 0x10 + i as u8)
    }

    fn header(version: u16, cipher: u16) -> Vec<u8> {
        [version.to_ne_bytes(), cipher.to_ne_bytes()].concat()
    }

    #[test]
    fn aes_128_gcm_splits_the_nonce_into_salt_and_iv() {
        let key = &key_bytes()[..16];
        let info = encode(0x0304, &AES_GCM_128, key, &nonce(), 0x0102_0304_0506_0708).unwrap();
        let bytes = info.as_bytes();
        assert_eq!(bytes.len(), 40);
        assert_eq!(&bytes[..4], header(0x0304, 51).as_slice());
        assert_eq!(&bytes[4..12], &nonce()[4..]);
        assert_eq!(&bytes[12..28], key);
        assert_eq!(&bytes[28..32], &[0x10, 0x11, 0x12, 0x13]);
        assert_eq!(&bytes[32..40], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn aes_256_gcm_for_tls_1_2() {
        let secrets = ConnectionTrafficSecrets::Aes256Gcm {
            key: AeadKey::from(key_bytes()),
            iv: Iv::new(nonce()),
        };
        let info = build(ProtocolVersion::TLSv1_2, 1, &secrets).unwrap();
        let bytes = info.as_bytes();
        assert_eq!(bytes.len(), 56);
        assert_eq!(&bytes[..4], header(0x0303, 52).as_slice());
        assert_eq!(&bytes[4..12], &nonce()[4..]);
        assert_eq!(&bytes[12..44], &key_bytes());
        assert_eq!(&bytes[44..48], &nonce()[..4]);
        assert_eq!(&bytes[48..56], &1u64.to_be_bytes());
    }

    #[test]
    fn chacha20_poly1305_has_no_salt_and_a_12_byte_iv() {
        let secrets = ConnectionTrafficSecrets::Chacha20Poly1305 {
            key: AeadKey::from(key_bytes()),
            iv: Iv::new(nonce()),
        };
        let info = build(ProtocolVersion::TLSv1_3, 7, &secrets).unwrap();
        let bytes = info.as_bytes();
        assert_eq!(bytes.len(), 56);
        assert_eq!(&bytes[..4], header(0x0304, 54).as_slice());
        assert_eq!(&bytes[4..16], &nonce());
        assert_eq!(&bytes[16..48], &key_bytes());
        assert_eq!(&bytes[48..56], &7u64.to_be_bytes());
    }

    #[test]
    fn sizes_match_the_kernel_structs() {
        assert_eq!(size_of::<libc::tls12_crypto_info_aes_gcm_128>(), 40);
        assert_eq!(size_of::<libc::tls12_crypto_info_aes_gcm_256>(), 56);
        assert_eq!(size_of::<libc::tls12_crypto_info_chacha20_poly1305>(), 56);
    }

    #[test]
    fn wrong_sizes_and_old_versions_are_refused() {
        // A 32-byte key where AES-128-GCM needs 16.
        assert!(encode(0x0304, &AES_GCM_128, &key_bytes(), &nonce(), 0).is_err());
        let fine = ConnectionTrafficSecrets::Aes256Gcm {
            key: AeadKey::from(key_bytes()),
            iv: Iv::new(nonce()),
        };
        assert!(build(ProtocolVersion::TLSv1_1, 0, &fine).is_err());
    }
}
