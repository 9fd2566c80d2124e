"""server.properties parsing as java.util.Properties does it, the settings the daemon builds
from file, overrides and flags, and the checks added on top of the Rust validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.broker.properties import (
    broker_settings,
    default_log_dir,
    parse_properties,
    read_properties,
    validate_settings,
)
from kafkalite.errors import InvalidConfigError


def test_separators_comments_and_whitespace() -> None:
    text = (
        "# a comment\n"
        "   ! another, indented\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d\t=\t4  \n"
        "e=\n"
        "f\n"
        "g = x = y\n"
        "h:1:2\n"
        "\fi=form feed is whitespace\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4  ",  # Java keeps trailing whitespace in values
        "e": "",
        "f": "",
        "g": "x = y",
        "h": "1:2",
        "i": "form feed is whitespace",
    }


def test_line_continuations() -> None:
    text = (
        "listeners=PLAINTEXT://127.0.0.1:9092,\\\n"
        "          PLAINTEXT2://127.0.0.1:9093\n"
        "# a comment ending in a backslash does not continue \\\n"
        "after=comment\n"
        "even=two backslashes\\\\\n"
        "odd=three\\\\\\\n"
        "  continued\n"
        "last=unfinished\\"
    )
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT2://127.0.0.1:9093",
        "after": "comment",
        "even": "two backslashes\\",
        "odd": "three\\continued",
        "last": "unfinished",
    }


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parse_properties("a=1,\\\n  #2\n") == {"a": "1,#2"}


def test_escapes() -> None:
    text = (
        "key\\ with\\ spaces=v\n"
        "k\\=eq=\\t\\n\\u00e9\\\\\\q\n"
        "colon\\:key=1\r\n"
        "windows=crlf\r\n"
        "mac=cr\r"
    )
    assert parse_properties(text) == {
        "key with spaces": "v",
        "k=eq": "\t\n\u00e9\\q",
        "colon:key": "1",
        "windows": "crlf",
        "mac": "cr",
    }


def test_later_keys_win() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_malformed_unicode_escape_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("a=\\u12x4\n")
    with pytest.raises(InvalidConfigError, match="malformed"):
        read_properties(path)


def test_file_in_latin1_is_read(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes("log.dirs=/data/caf\u00e9\n".encode("latin-1"))
    assert read_properties(path) == {"log.dirs": "/data/caf\u00e9"}


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert broker_settings() == {
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": str(tmp_path / "kafkalite" / "logs"),
    }
    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    assert default_log_dir() == Path.home() / ".local" / "share" / "kafkalite" / "logs"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_log_dir() == Path.home() / ".local" / "share" / "kafkalite" / "logs"


def test_precedence_file_then_overrides_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("listeners=PLAINTEXT://0.0.0.0:1\nnum.partitions=2\nlog.dir=/file\nnode.id=4\n")
    settings = broker_settings(path, {"num.partitions": "3", "listeners": "PLAINTEXT://:2"})
    assert settings == {
        "listeners": "PLAINTEXT://:2",
        "num.partitions": "3",
        "log.dirs": "/file",  # log.dir alone is used, under the key Kafka prefers
        "node.id": "4",
    }
    settings = broker_settings(path, {"log.dirs": "/override"}, "PLAINTEXT://:3", "/flag")
    assert settings["listeners"] == "PLAINTEXT://:3"
    assert settings["log.dirs"] == "/flag"
    assert "log.dir" not in settings


@pytest.mark.parametrize(
    "settings",
    [
        {"listeners": "PLAINTEXT://127.0.0.1:0"},
        {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}
        | {"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
        {"listeners": "PLAINTEXT://[::1]:9092"},
        {"advertised.listeners": "PLAINTEXT://broker.example:9092"},
        {"log.retention.hours": "-1", "log.retention.bytes": "-1", "node.id": "0"},
        {"log.cleanup.policy": "compact,delete", "auto.create.topics.enable": "false"},
        {"node.id": "3", "broker.id": "3", "some.key.we.ignore": "anything"},
    ],
)
def test_valid_settings(settings: dict[str, str]) -> None:
    validate_settings(settings)


def test_unknown_keys_are_warned_about_not_refused() -> None:
    warnings = validate_settings(
        {"node.id": "3", "log.retention.hourz": "1", "num.partitions": "2"}
    )
    assert warnings == [
        "The configuration 'log.retention.hourz' was supplied but isn't a known config."
    ]
    assert validate_settings({"listener.name.plaintext.ssl.keystore.location": "k"}) == []


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (
            {"listeners": "SASL_SSL://:9094,SASL_SSL://:9095"},
            "listener name SASL_SSL appears twice",
        ),
        ({"listeners": "INTERNAL://:9094"}, "listener.security.protocol.map"),
        ({"listeners": "PLAINTEXT://:1,OTHER://:1"}, "for configuration listeners"),
        ({"listeners": "PLAINTEXT://:70000"}, "out of range"),
        (
            {"listeners": "PLAINTEXT://::1:9092"},
            "Invalid value PLAINTEXT://::1:9092 for configuration listeners",
        ),
        ({"listeners": " , "}, "no listener given"),
        ({"advertised.listeners": "OTHER://h:1"}, "OTHER is not in listeners"),
        ({"advertised.listeners": "PLAINTEXT://:9092"}, "wildcard"),
        ({"advertised.listeners": "PLAINTEXT://h:0"}, "port 0"),
        (
            {"listener.security.protocol.map": "A:TLS"},
            "Invalid value A:TLS for configuration listener.security.protocol.map",
        ),
        ({"node.id": "one"}, "Invalid value one for configuration node.id"),
        ({"broker.id": "-1"}, "Invalid value -1 for configuration broker.id"),
        ({"node.id": "1", "broker.id": "2"}, "must equal node.id"),
        ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions"),
        (
            {"default.replication.factor": "0"},
            "Invalid value 0 for configuration default.replication.factor",
        ),
        ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas"),
        ({"log.retention.ms": "-2"}, "Invalid value -2 for configuration log.retention.ms"),
        ({"log.retention.bytes": "1GB"}, "Invalid value 1GB for configuration log.retention.bytes"),
        ({"log.roll.hours": "0"}, "Invalid value 0 for configuration log.roll.hours"),
        ({"log.segment.bytes": "13"}, "Invalid value 13 for configuration log.segment.bytes"),
        (
            {"socket.request.max.bytes": "10"},
            "Invalid value 10 for configuration socket.request.max.bytes",
        ),
        (
            {"auto.create.topics.enable": "yes"},
            "Invalid value yes for configuration auto.create.topics.enable",
        ),
        ({"log.cleanup.policy": ""}, "Invalid value  for configuration log.cleanup.policy"),
        (
            {"log.cleanup.policy": "delete,shred"},
            "Invalid value delete,shred for configuration log.cleanup.policy",
        ),
        ({"log.dirs": " , "}, "no directory given"),
        (
            {"log.retention.minutes": "99999999999"},
            "Invalid value 99999999999 for configuration log.retention.minutes",
        ),
        ({"group.min.session.timeout.ms": "9", "group.max.session.timeout.ms": "8"}, "must not"),
        # Kafka 4.1.1 refuses these at start too ("group.consumer.heartbeat.interval.ms must
        # be greater than or equal to group.consumer.min.heartbeat.interval.ms").
        (
            {"group.consumer.heartbeat.interval.ms": "500"},
            "Invalid value 500 for configuration group.consumer.heartbeat.interval.ms: must be "
            "greater than or equal to group.consumer.min.heartbeat.interval.ms",
        ),
        (
            {
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.session.timeout.ms": "4000",
            },
            "Invalid value 5000 for configuration group.consumer.heartbeat.interval.ms: must be "
            "less than group.consumer.session.timeout.ms",
        ),
        ({"group.consumer.assignors": "sticky"}, "unknown assignor sticky"),
        ({"group.streams.num.standby.replicas": "3"}, "group.streams.max.standby.replicas"),
        (
            {"offset.metadata.max.bytes": "-1"},
            "Invalid value -1 for configuration offset.metadata.max.bytes",
        ),
        ({"log.dirs": __file__}, "is not a directory"),
        ({"log.level": "VERBOSE"}, "Invalid value VERBOSE for configuration log.level"),
    ],
)
def test_invalid_settings_name_key_and_value(settings: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        validate_settings(settings)
    assert named in str(info.value)
    # Kafka's wording (ConfigException), so a search for the message finds Kafka's answers.
    assert str(info.value).startswith("Invalid value ")
