"""Kafka's ``PasswordEncoder``: how a broker's dynamic secrets (keystore passwords, JAAS
configs) sit encrypted in ZooKeeper. The key is PBKDF2-HMAC-SHA512 of
``password.encoder.secret`` over a random 256-byte salt; the value is AES/CBC with PKCS5
padding under a random IV. The stored text carries everything but the secret, in Kafka's
``name:value,name:value`` form (base64 for bytes), so a broker with the same secret
decodes what any other wrote::

    encryptedPassword:...,passwordLength:8,salt:...,iterations:4096,keyLength:128,
    cipherAlgorithm:AES/CBC/PKCS5Padding,initializationVector:...,
    keyFactoryAlgorithm:PBKDF2WithHmacSHA512
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

CIPHER = "AES/CBC/PKCS5Padding"
KEY_FACTORY = "PBKDF2WithHmacSHA512"
SALT_BYTES = 256
SECRET_KEY = "password.encoder.secret"
OLD_SECRET_KEY = "password.encoder.old.secret"


class PasswordEncoderError(Exception):
    """A value cannot be decoded with the secret (wrong secret, or not Kafka's format)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _key(secret: str, salt: bytes, iterations: int, key_length_bits: int) -> bytes:
    kdf = PBKDF2HMAC(
        algorithm=hashes.SHA512(), length=key_length_bits // 8, salt=salt, iterations=iterations
    )
    return kdf.derive(secret.encode())


def is_encoded(value: str) -> bool:
    fields = _fields(value)
    return fields is not None and "encryptedPassword" in fields


def _fields(value: str) -> dict[str, str] | None:
    out = {}
    for item in value.split(","):
        name, sep, v = item.partition(":")
        if not sep:
            return None
        out[name.strip()] = v.strip()
    return out


class PasswordEncoder:
    def __init__(self, secret: str, iterations: int = 4096, key_length: int = 128) -> None:
        if not secret:
            raise ValueError(f"{SECRET_KEY} must not be empty")
        self.secret = secret
        self.iterations = iterations
        self.key_length = key_length

    @classmethod
    def from_settings(cls, settings: Mapping[str, str], secret_key: str = SECRET_KEY):
        """The encoder a broker's settings describe; None without the secret."""
        secret = settings.get(secret_key)
        if not secret:
            return None
        algorithm = settings.get("password.encoder.keyfactory.algorithm") or KEY_FACTORY
        if algorithm != KEY_FACTORY:
            raise PasswordEncoderError(
                f"password.encoder.keyfactory.algorithm {algorithm!r} is not supported "
                f"(kafkalite uses {KEY_FACTORY})"
            )
        return cls(
            secret,
            int(settings.get("password.encoder.iterations") or 4096),
            int(settings.get("password.encoder.key.length") or 128),
        )

    def encode(self, password: str) -> str:
        salt = os.urandom(SALT_BYTES)
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        plain = padder.update(password.encode()) + padder.finalize()
        key = _key(self.secret, salt, self.iterations, self.key_length)
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        encrypted = encryptor.update(plain) + encryptor.finalize()
        fields = {
            "encryptedPassword": _b64(encrypted),
            "passwordLength": str(len(password)),
            "salt": _b64(salt),
            "iterations": str(self.iterations),
            "keyLength": str(self.key_length),
            "cipherAlgorithm": CIPHER,
            "initializationVector": _b64(iv),
            "keyFactoryAlgorithm": KEY_FACTORY,
        }
        return ",".join(f"{k}:{v}" for k, v in fields.items())

    def decode(self, encoded: str) -> str:
        fields = _fields(encoded)
        if fields is None or "encryptedPassword" not in fields:
            raise PasswordEncoderError("not an encrypted value")
        try:
            if fields.get("cipherAlgorithm", CIPHER) != CIPHER:
                raise PasswordEncoderError(f"unsupported cipher {fields['cipherAlgorithm']}")
            if fields.get("keyFactoryAlgorithm", KEY_FACTORY) != KEY_FACTORY:
                raise PasswordEncoderError(
                    f"unsupported key factory {fields['keyFactoryAlgorithm']}"
                )
            salt = base64.b64decode(fields["salt"])
            iv = base64.b64decode(fields["initializationVector"])
            key = _key(self.secret, salt, int(fields["iterations"]), int(fields["keyLength"]))
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            padded = decryptor.update(base64.b64decode(fields["encryptedPassword"]))
            padded += decryptor.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            password = (unpadder.update(padded) + unpadder.finalize()).decode()
        except PasswordEncoderError:
            raise
        except Exception:
            # A wrong secret shows as bad padding or bad UTF-8: never say more.
            raise PasswordEncoderError("cannot decrypt with this secret") from None
        # Kafka's sanity check: a wrong secret that happens to pad correctly.
        if str(len(password)) != fields.get("passwordLength"):
            raise PasswordEncoderError("cannot decrypt with this secret")
        return password
