"""`--command-config client.properties`, as Kafka's tools take it: a Java properties file of
client keys (security.protocol, sasl.*, ssl.*), turned into the librdkafka settings the
CLI's clients use.

Kafka's Java keys that librdkafka spells differently are translated: `sasl.jaas.config`
(PlainLoginModule / ScramLoginModule credentials -> sasl.username / sasl.password),
truststores (PEM file, inline PEM, or PKCS12 -> ssl.ca.location / ssl.ca.pem), keystores
(PEM bundle, inline PEM, or PKCS12 -> librdkafka's PEM or PKCS12 keys) and
`ssl.endpoint.identification.algorithm=` (empty: no host check). Every other key is handed
to librdkafka as written, which refuses one it does not know, naming it."""

from __future__ import annotations

import re
from pathlib import Path


class CommandConfigError(ValueError):
    """A client.properties file that cannot be used, naming the file and the key."""


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java .properties file: `key=value` or `key: value`, `#`/`!` comments, a trailing
    backslash continuing the line."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CommandConfigError(f"cannot read --command-config {path}: {e.strerror}") from None
    lines: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is None and (not line or line[0] in "#!"):
            continue
        line = line if pending is None else pending + line
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = None
        lines.append(line)
    if pending:
        lines.append(pending)
    out: dict[str, str] = {}
    for line in lines:
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            out[line] = ""
        else:
            out[match.group(1)] = match.group(2)
    return out


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _jaas_credentials(jaas: str, path: str) -> dict[str, str]:
    """username/password of a PlainLoginModule or ScramLoginModule line."""
    if "OAuthBearerLoginModule" in jaas:
        # The unsecured development token (unsecuredLoginStringClaim_sub) has a librdkafka
        # twin; a real OAuth token comes from sasl.oauthbearer.* keys given as they are.
        options = dict(_JAAS_OPTION.findall(jaas))
        sub = options.get("unsecuredLoginStringClaim_sub")
        if sub is None:
            return {}
        return {
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": f"principal={sub}",
        }
    if "PlainLoginModule" not in jaas and "ScramLoginModule" not in jaas:
        raise CommandConfigError(
            f"{path}: sasl.jaas.config: only PlainLoginModule, ScramLoginModule and "
            "OAuthBearerLoginModule are understood"
        )
    options = dict(_JAAS_OPTION.findall(jaas))
    if "username" not in options or "password" not in options:
        raise CommandConfigError(f'{path}: sasl.jaas.config needs username="…" password="…"')
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _pkcs12_truststore_pem(location: str, password: str | None, path: str) -> str:
    """The certificates of a PKCS12 truststore as PEM text (librdkafka reads CAs as PEM)."""
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    try:
        store = pkcs12.load_pkcs12(
            Path(location).read_bytes(), password.encode() if password else None
        )
    except (OSError, ValueError) as e:
        raise CommandConfigError(f"{path}: ssl.truststore.location {location}: {e}") from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.append(store.cert.certificate)
    if not certs:
        raise CommandConfigError(f"{path}: ssl.truststore.location {location} has no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _store_type(props: dict[str, str], key: str, path: str) -> str:
    kind = props.pop(key, "JKS" if props.get(key.replace("type", "location")) else "PEM")
    kind = kind.strip().upper()
    if kind == "JKS":
        raise CommandConfigError(
            f"{path}: {key}=JKS is not supported; convert the store to PKCS12 "
            "(keytool -importkeystore -deststoretype PKCS12) or give PEM"
        )
    if kind not in ("PEM", "PKCS12"):
        raise CommandConfigError(f"{path}: {key}={kind} is not one of PEM, PKCS12")
    return kind


def librdkafka_settings(path: str | Path) -> dict[str, str]:
    """The librdkafka settings for a Kafka client.properties file."""
    name = str(path)
    props = read_properties(path)
    out: dict[str, str] = {}
    jaas = props.pop("sasl.jaas.config", None)
    if jaas is not None:
        out.update(_jaas_credentials(jaas, name))
    # Truststore.
    if "ssl.truststore.location" in props or "ssl.truststore.certificates" in props:
        kind = _store_type(props, "ssl.truststore.type", name)
        inline = props.pop("ssl.truststore.certificates", None)
        location = props.pop("ssl.truststore.location", None)
        password = props.pop("ssl.truststore.password", None)
        if inline is not None:
            out["ssl.ca.pem"] = inline
        elif kind == "PKCS12" and location is not None:
            out["ssl.ca.pem"] = _pkcs12_truststore_pem(location, password, name)
        elif location is not None:
            out["ssl.ca.location"] = location
    else:
        props.pop("ssl.truststore.type", None)
        props.pop("ssl.truststore.password", None)
    # Keystore (the client certificate for mTLS).
    if "ssl.keystore.location" in props or "ssl.keystore.key" in props:
        kind = _store_type(props, "ssl.keystore.type", name)
        if "ssl.keystore.key" in props:
            out["ssl.key.pem"] = props.pop("ssl.keystore.key")
            out["ssl.certificate.pem"] = props.pop("ssl.keystore.certificate.chain", "")
        else:
            location = props.pop("ssl.keystore.location")
            if kind == "PKCS12":
                out["ssl.keystore.location"] = location
                if "ssl.keystore.password" in props:
                    out["ssl.keystore.password"] = props.pop("ssl.keystore.password")
            else:
                # A PEM keystore holds key and chain in one file; OpenSSL finds each in it.
                out["ssl.key.location"] = location
                out["ssl.certificate.location"] = location
        props.pop("ssl.keystore.password", None)
    else:
        props.pop("ssl.keystore.type", None)
    if "ssl.endpoint.identification.algorithm" in props:
        value = props.pop("ssl.endpoint.identification.algorithm").strip()
        out["ssl.endpoint.identification.algorithm"] = value or "none"
    out.update(props)
    return out
