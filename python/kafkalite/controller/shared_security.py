"""Cluster mode's shared security state: dynamic broker configs (``/config/brokers/<id>``
and ``/config/brokers/<default>``), SCRAM credentials (``/config/users/<user>``) and ACLs
(``acl_znodes``), read out of ZooKeeper for this broker's Rust side
(``BrokerServer.apply_shared_security``) and written there for the admin requests a
client sends any broker (``SecurityOps``). Sensitive broker configs are stored encrypted
with ``password.encoder.secret`` (``password_encoder``) and decrypted only here."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient

from kafkalite import _core
from kafkalite.controller import acl_znodes, entity_configs
from kafkalite.controller.password_encoder import (
    OLD_SECRET_KEY,
    SECRET_KEY,
    PasswordEncoder,
    PasswordEncoderError,
    is_encoded,
)

_log = logging.getLogger("kafkalite.controller")

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
CHANGE_PATHS = (
    entity_configs.CHANGES,
    acl_znodes.LITERAL_CHANGES,
    acl_znodes.EXTENDED_CHANGES,
)


class SecretError(Exception):
    """Encrypted values exist that this broker cannot decrypt (one line, naming the key)."""


def entity_name(broker_id: int | None) -> str:
    return entity_configs.DEFAULT if broker_id is None else str(broker_id)


def encrypt(configs: Mapping[str, str], encoder: PasswordEncoder | None) -> dict[str, str]:
    """``configs`` with every sensitive value encrypted; SecretError without an encoder."""
    out = {}
    for key, value in configs.items():
        if _core.broker_config_is_sensitive(key):
            if encoder is None:
                raise SecretError(
                    f"Password encoder secret not configured: set {SECRET_KEY} in every "
                    f"broker's server.properties to store {key} in ZooKeeper"
                )
            value = encoder.encode(value)
        out[key] = value
    return out


class Decrypter:
    """Decrypts stored values, remembering each (PBKDF2 is slow by design and the state is
    re-read on every change)."""

    def __init__(self, encoder: PasswordEncoder | None) -> None:
        self.encoder = encoder
        self._seen: dict[str, str] = {}
        # At start a value that cannot be decrypted stops the broker; once running, it is
        # logged (by key) and left out, and the broker keeps what it has.
        self.strict = True

    def layer(self, configs: Mapping[str, str], where: str) -> dict[str, str]:
        out = {}
        for key, value in configs.items():
            if _core.broker_config_is_sensitive(key) and is_encoded(value):
                try:
                    value = self._decode(key, value, where)
                except SecretError as e:
                    if self.strict:
                        raise
                    _log.warning("%s; ignoring it", e)
                    continue
            out[key] = value
        return out

    def _decode(self, key: str, value: str, where: str) -> str:
        if value not in self._seen:
            if self.encoder is None:
                raise SecretError(f"{SECRET_KEY} is not set, but {where} holds the encrypted {key}")
            try:
                self._seen[value] = self.encoder.decode(value)
            except PasswordEncoderError:
                raise SecretError(
                    f"{SECRET_KEY} cannot decrypt {key} stored at {where} (wrong secret?)"
                ) from None
        return self._seen[value]


def _broker_path(name: str) -> str:
    return entity_configs.path("brokers", name)


def rotate_secret(zk: KazooClient, broker_id: int, settings: Mapping[str, str]) -> None:
    """``password.encoder.old.secret`` set: re-encrypt this broker's stored secrets with
    ``password.encoder.secret``, as Kafka does at start. Values the new secret already
    decrypts are left as they are."""
    old = PasswordEncoder.from_settings(settings, OLD_SECRET_KEY)
    new = PasswordEncoder.from_settings(settings)
    if old is None or new is None:
        return
    name = entity_name(broker_id)

    def change(config: dict[str, str]) -> dict[str, str]:
        for key, value in config.items():
            if not (_core.broker_config_is_sensitive(key) and is_encoded(value)):
                continue
            try:
                new.decode(value)
                continue
            except PasswordEncoderError:
                pass
            try:
                config[key] = new.encode(old.decode(value))
            except PasswordEncoderError:
                raise SecretError(
                    f"neither {SECRET_KEY} nor {OLD_SECRET_KEY} decrypts {key} stored at "
                    f"{_broker_path(name)}"
                ) from None
        return config

    if entity_configs.read(zk, "brokers", name):
        entity_configs.modify(zk, "brokers", name, change)


def read_dynamic(zk: KazooClient, broker_id: int, decrypter: Decrypter) -> dict[str, Any]:
    """This broker's dynamic layers, decrypted: ``{"broker": {...}, "default": {...}}``."""
    out = {}
    for layer, name in (("broker", str(broker_id)), ("default", entity_configs.DEFAULT)):
        stored = entity_configs.read(zk, "brokers", name)
        out[layer] = decrypter.layer(stored, _broker_path(name))
    return out


def read_users(zk: KazooClient) -> dict[str, dict[str, str]]:
    users = {}
    for user in entity_configs.entities(zk, "users"):
        config = entity_configs.read(zk, "users", user)
        creds = {m: config[m] for m in SCRAM_MECHANISMS if m in config}
        if creds:
            users[user] = creds
    return users


def read_state(zk: KazooClient, broker_id: int, decrypter: Decrypter, watch: Any) -> str:
    """The JSON ``apply_shared_security`` takes. Watches every change-notification path,
    so any broker's write wakes ``watch``."""
    for path in CHANGE_PATHS:
        zk.ensure_path(path)
        zk.get_children(path, watch=watch)
    state = {
        "dynamic": read_dynamic(zk, broker_id, decrypter),
        "users": read_users(zk),
        "acls": acl_znodes.read_all(zk),
    }
    return json.dumps(state)


class SecurityOps:
    """Admin requests on the shared security state, mixed into ``AdminHandler``: each
    writes ZooKeeper with its change notification, then pushes the new state into this
    broker before answering."""

    zk: KazooClient
    sync_now: Callable[[], None]
    encoder: PasswordEncoder | None = None

    def alter_broker_configs(self, op: dict[str, Any]) -> None:
        args = json.loads(op["args"])
        # SecretError (no encoder secret): the handler answers INVALID_CONFIG.
        configs = encrypt(args["configs"], self.encoder)
        entity_configs.replace_owned(self.zk, "brokers", args["entity"], lambda _key: True, configs)
        self.sync_now()

    def alter_scram_credentials(self, op: dict[str, Any]) -> None:
        args = json.loads(op["args"])
        per_user: dict[str, tuple[dict[str, str], list[str]]] = {}
        for user, mechanism, credential in args["upserts"]:
            per_user.setdefault(user, ({}, []))[0][mechanism] = credential
        for user, mechanism in args["deletions"]:
            per_user.setdefault(user, ({}, []))[1].append(mechanism)
        for user, (updates, deletions) in per_user.items():
            entity_configs.set_keys(self.zk, "users", user, updates, deletions)
        self.sync_now()

    def create_acls(self, op: dict[str, Any]) -> None:
        acl_znodes.change(self.zk, add=json.loads(op["args"])["acls"])
        self.sync_now()

    def delete_acls(self, op: dict[str, Any]) -> None:
        acl_znodes.change(self.zk, remove=json.loads(op["args"])["acls"])
        self.sync_now()
