"""`kafkalite acl`, `kafkalite user` and the client verbs with `--command-config`, against
a SASL_SSL broker with an authorizer: the admin (PLAIN, a super user) adds a SCRAM user
and its ACLs, the user produces and consumes, and loses each right when it is removed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from tests.security.certs import Pem
from tests.security.clients import VALUES
from tests.security.conftest import plain_jaas
from tests.security.test_kafka_tools import address, properties, sasl_properties

ADMIN = {"admin": "admin-secret"}


@pytest.fixture(scope="module")
def broker(
    pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Broker]:
    _directory, _ca, server, _client, _stranger = pki
    config = {
        "listeners": "SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.bundle),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(ADMIN),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    with Broker(log_dirs=tmp_path_factory.mktemp("cli"), config=config) as b:
        yield b


def kafkalite(
    broker: Broker, config: Path, *args: str, stdin: str = "", ok: bool = True
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kafkalite.cli", *args]
    cmd += ["-b", address(broker, "SASL_SSL"), "--command-config", str(config)]
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == ok, (args, done.returncode, done.stdout, done.stderr)
    return done


def test_acl_and_user_commands_manage_a_sasl_ssl_broker(
    broker: Broker, pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path: Path
) -> None:
    _directory, ca, _server, _client, _stranger = pki
    admin = sasl_properties(tmp_path, ca, "PLAIN", "admin", ADMIN["admin"])
    grace = sasl_properties(tmp_path, ca, "SCRAM-SHA-512", "grace", "grace-secret")

    kafkalite(
        broker,
        admin,
        "user",
        "add",
        "grace",
        "--mechanism",
        "SCRAM-SHA-512",
        "--password",
        "grace-secret",
    )
    # The password may come on stdin too (kept out of the process list).
    kafkalite(
        broker,
        admin,
        "user",
        "add",
        "henry",
        "--mechanism",
        "SCRAM-SHA-256",
        "--iterations",
        "8192",
        stdin="henry-secret\n",
    )
    listed = kafkalite(broker, admin, "user", "list").stdout
    assert "user-principal 'grace' are SCRAM-SHA-512=iterations=4096" in listed, listed
    assert "user-principal 'henry' are SCRAM-SHA-256=iterations=8192" in listed, listed

    kafkalite(broker, admin, "topic", "create", "cli-secure", "-p", "2")
    # Without an ACL, grace is authenticated but may not write.
    denied = kafkalite(broker, grace, "produce", "cli-secure", stdin="x\n", ok=False)
    assert "authoriz" in denied.stderr.lower(), denied.stderr

    added = kafkalite(
        broker,
        admin,
        "acl",
        "add",
        "--allow-principal",
        "User:grace",
        "--operation",
        "Write",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        "cli-secure",
    )
    assert "ResourcePattern(resourceType=TOPIC, name=cli-secure, patternType=LITERAL)" in (
        added.stdout
    ), added.stdout
    kafkalite(
        broker,
        admin,
        "acl",
        "add",
        "--allow-principal",
        "User:grace",
        "--operation",
        "Read",
        "--group",
        "cli-",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = kafkalite(broker, admin, "acl", "list", "--topic", "cli-secure").stdout
    for op in ("WRITE", "READ", "DESCRIBE"):
        line = f"(principal=User:grace, host=*, operation={op}, permissionType=ALLOW)"
        assert line in listed, listed
    everything = kafkalite(broker, admin, "acl", "list").stdout
    assert "name=cli-, patternType=PREFIXED" in everything, everything

    kafkalite(broker, grace, "produce", "cli-secure", stdin="\n".join(VALUES) + "\n")
    got = kafkalite(
        broker,
        grace,
        "consume",
        "cli-secure",
        "--from-beginning",
        "-g",
        "cli-group",
        "-n",
        str(len(VALUES)),
        "--timeout",
        "30",
    ).stdout
    assert sorted(got.split()) == VALUES
    groups = kafkalite(broker, admin, "group", "list").stdout
    assert "cli-group" in groups.split(), groups

    removed = kafkalite(
        broker,
        admin,
        "acl",
        "remove",
        "--allow-principal",
        "User:grace",
        "--operation",
        "Write",
        "--topic",
        "cli-secure",
    )
    assert "operation=WRITE" in removed.stdout and "READ" not in removed.stdout, removed.stdout
    denied = kafkalite(broker, grace, "produce", "cli-secure", stdin="y\n", ok=False)
    assert "authoriz" in denied.stderr.lower(), denied.stderr

    kafkalite(broker, admin, "user", "remove", "grace", "--mechanism", "SCRAM-SHA-512")
    listed = kafkalite(broker, admin, "user", "list").stdout
    assert "'grace'" not in listed and "'henry'" in listed, listed
    refused = kafkalite(broker, grace, "topic", "list", ok=False)
    assert "authentication" in refused.stderr.lower(), refused.stderr


def test_command_config_mistakes_are_named(broker: Broker, tmp_path: Path) -> None:
    missing = kafkalite(broker, tmp_path / "absent.properties", "topic", "list", ok=False)
    assert "absent.properties" in missing.stderr, missing.stderr
    jks = properties(
        tmp_path / "jks.properties",
        {"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "t.jks")},
    )
    refused = kafkalite(broker, jks, "topic", "list", ok=False)
    assert "ssl.truststore.type=JKS" in refused.stderr, refused.stderr
    unknown = properties(tmp_path / "bad.properties", {"sasl.mechanismz": "PLAIN"})
    refused = kafkalite(broker, unknown, "topic", "list", ok=False)
    assert "sasl.mechanismz" in refused.stderr, refused.stderr
