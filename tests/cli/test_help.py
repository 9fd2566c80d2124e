"""`kafkalite --help` and every subcommand's help: what kafkalite is, one line per command,
one line of help for every flag."""

from __future__ import annotations

import argparse
import subprocess
import sys

from kafkalite.cli import build_parser


def subparsers(parser: argparse.ArgumentParser, path: str = "kafkalite"):  # type: ignore[no-untyped-def]
    """(command path, parser) for the parser and every subcommand under it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from subparsers(child, f"{path} {name}")


def test_every_flag_and_argument_has_a_one_line_help() -> None:
    missing = []
    for path, parser in subparsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            text = action.help
            if not text or text == argparse.SUPPRESS:
                missing.append(f"{path}: {'/'.join(action.option_strings) or action.dest}")
            elif "\n" in text:
                missing.append(f"{path}: {action.dest} help spans lines")
    assert not missing, missing


def test_every_subcommand_has_a_one_line_summary() -> None:
    missing = []
    for path, parser in subparsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in action._choices_actions}
                missing += [f"{path} {n}" for n in action.choices if not helps.get(n)]
    assert not missing, missing


def test_top_level_help_says_what_kafkalite_is_and_lists_the_commands() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "Kafka-compatible commit log" in out
    listing = out[out.index("commands:") :].split("\n\n")[0].splitlines()[2:]
    names = [
        "broker",
        "topic",
        "produce",
        "consume",
        "group",
        "acl",
        "user",
        "cluster",
        "configs",
        "log",
        "top",
        "bench",
        "conformance",
        "demo",
    ]
    # One line each, the name then its summary: no wrapped continuation lines.
    assert [line.split()[0] for line in listing] == names, out
    assert all(len(line.split()) > 2 for line in listing), out
    assert "The ``kafkalite`` command" not in out


def test_timeout_help_says_what_it_means_for_each_verb() -> None:
    parser = build_parser()

    def timeout_help(*path: str) -> str:
        p = parser
        for name in path:
            sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
            p = sub.choices[name]
        return next(a.help for a in p._actions if "--timeout" in a.option_strings) or ""

    produce, consume = timeout_help("produce"), timeout_help("consume")
    assert "deliver" in produce and "idle" not in produce and "record" in produce
    assert "without a record" in consume and "deliver" not in consume
    assert "broker" in timeout_help("group", "describe")
