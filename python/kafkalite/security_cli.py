"""The ``kafkalite acl`` and ``kafkalite user`` verbs, after Kafka's ``kafka-acls`` and the
SCRAM part of ``kafka-configs``: add, list and remove ACLs (CreateAcls, DescribeAcls,
DeleteAcls) and SCRAM credentials (AlterUserScramCredentials,
DescribeUserScramCredentials), over the wire through the admin API."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from kafkalite.client_cli import (
    BROKER_TIMEOUT_HELP,
    CliError,
    _admin,
    _explain,
    _verb,
    add_common_arguments,
)

OPERATIONS = [
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
]
MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
# kafka-configs' default (and Kafka's minimum) for new SCRAM credentials.
DEFAULT_ITERATIONS = 4096


def _result(future: Any, what: str, args: argparse.Namespace) -> Any:
    try:
        return future.result(args.timeout)
    except Exception as e:
        raise CliError(f"{what}: {_explain(e, args)}") from None


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value))


def _resources(args: argparse.Namespace, *, filtering: bool) -> list[tuple[Any, str | None]]:
    """(ResourceType, name) for each resource flag; with none given, a filter matches all."""
    from confluent_kafka.admin import ResourceType

    out: list[tuple[Any, str | None]] = []
    out += [(ResourceType.TOPIC, t) for t in args.topic]
    out += [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.BROKER, "kafka-cluster"))
    if not out:
        if not filtering:
            raise CliError("name a resource: --topic, --group, --transactional-id or --cluster")
        out.append((ResourceType.ANY, None))
    return out


def _pattern_type(args: argparse.Namespace, *, filtering: bool) -> Any:
    from confluent_kafka.admin import ResourcePatternType

    default = "any" if filtering else "literal"
    name = (args.resource_pattern_type or default).upper()
    if not filtering and name not in ("LITERAL", "PREFIXED"):
        raise CliError("--resource-pattern-type for add is literal or prefixed")
    return ResourcePatternType[name]


def _grants(
    args: argparse.Namespace, *, filtering: bool
) -> list[tuple[str | None, str | None, Any]]:
    """(principal, host, permission) for each --allow-/--deny-principal."""
    from confluent_kafka.admin import AclPermissionType

    out: list[tuple[str | None, str | None, Any]] = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        for principal in principals:
            if not principal.startswith("User:"):
                raise CliError(f"principal {principal!r} must be of the form User:NAME")
            # A filter without a host matches every host; a new ACL defaults to all hosts.
            for host in hosts or ([None] if filtering else ["*"]):
                out.append((principal, host, permission))
    if not out:
        if not filtering:
            raise CliError("name who: --allow-principal or --deny-principal")
        principal = getattr(args, "principal", None)
        out.append((principal, None, AclPermissionType.ANY))
    return out


def _operations(args: argparse.Namespace, *, filtering: bool) -> list[Any]:
    from confluent_kafka.admin import AclOperation

    names = args.operation or (["Any"] if filtering else [])
    if not names:
        raise CliError("name an --operation")
    return [AclOperation[_upper_snake(n)] for n in names]


def _upper_snake(name: str) -> str:
    # "DescribeConfigs" -> "DESCRIBE_CONFIGS"
    out = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name))
    return out.upper()


def _bindings(args: argparse.Namespace, *, filtering: bool) -> list[Any]:
    from confluent_kafka.admin import AclBinding, AclBindingFilter

    kind = AclBindingFilter if filtering else AclBinding
    pattern = _pattern_type(args, filtering=filtering)
    return [
        kind(rtype, name, pattern, principal, host, op, permission)
        for rtype, name in _resources(args, filtering=filtering)
        for principal, host, permission in _grants(args, filtering=filtering)
        for op in _operations(args, filtering=filtering)
    ]


def _describe(binding: Any) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host}, "
        f"operation={_enum_name(binding.operation)}, "
        f"permissionType={_enum_name(binding.permission_type)})"
    )


def _pattern(binding: Any) -> str:
    # librdkafka calls the cluster resource BROKER; Kafka's tools print CLUSTER.
    rtype = _enum_name(binding.restype).replace("BROKER", "CLUSTER")
    return (
        f"ResourcePattern(resourceType={rtype}, name={binding.name}, "
        f"patternType={_enum_name(binding.resource_pattern_type)})"
    )


def _print_grouped(bindings: list[Any], heading: str) -> None:
    """Kafka's layout: one heading per resource pattern, its ACLs indented below."""
    by_pattern: dict[str, list[str]] = {}
    for b in bindings:
        by_pattern.setdefault(_pattern(b), []).append(_describe(b))
    for pattern, acls in sorted(by_pattern.items()):
        print(f"{heading} `{pattern}`:")
        for acl in sorted(acls):
            print(f" \t{acl}")
        print()


@_verb
def acl_add(args: argparse.Namespace) -> int:
    admin = _admin(args)
    bindings = _bindings(args, filtering=False)
    for binding, future in admin.create_acls(bindings, request_timeout=args.timeout).items():
        _result(future, f"adding {_describe(binding)}", args)
    _print_grouped(bindings, "Adding ACLs for resource")
    return 0


@_verb
def acl_list(args: argparse.Namespace) -> int:
    admin = _admin(args)
    found: list[Any] = []
    for flt in _bindings(args, filtering=True):
        future = admin.describe_acls(flt, request_timeout=args.timeout)
        found += _result(future, "listing ACLs", args)
    _print_grouped(found, "Current ACLs for resource")
    return 0


@_verb
def acl_remove(args: argparse.Namespace) -> int:
    admin = _admin(args)
    filters = _bindings(args, filtering=True)
    removed: list[Any] = []
    for _flt, future in admin.delete_acls(filters, request_timeout=args.timeout).items():
        removed += _result(future, "removing ACLs", args)
    _print_grouped(removed, "Removed ACLs for resource")
    if not removed:
        print("No ACL matched.", file=sys.stderr)
    return 0


def _mechanism(name: str) -> Any:
    from confluent_kafka.admin import ScramMechanism

    return ScramMechanism[name.replace("-", "_")]


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        return str(args.password)
    if sys.stdin.isatty():
        return getpass.getpass(f"Password for {args.user}: ")
    line = sys.stdin.readline().rstrip("\n")
    if not line:
        raise CliError("no password: give --password or one line on stdin")
    return line


@_verb
def user_add(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion

    if args.iterations < DEFAULT_ITERATIONS:
        raise CliError(f"--iterations must be at least {DEFAULT_ITERATIONS}")
    admin = _admin(args)
    info = ScramCredentialInfo(_mechanism(args.mechanism), args.iterations)
    upsert = UserScramCredentialUpsertion(args.user, info, _password(args).encode())
    futures = admin.alter_user_scram_credentials([upsert], request_timeout=args.timeout)
    _result(futures[args.user], f"adding {args.mechanism} credentials of {args.user}", args)
    print(f"Completed updating config for user {args.user}.")
    return 0


@_verb
def user_list(args: argparse.Namespace) -> int:
    admin = _admin(args)
    users = args.user or None
    futures = admin.describe_user_scram_credentials(users, request_timeout=args.timeout)
    if isinstance(futures, dict):
        described = {u: _result(f, f"describing user {u}", args) for u, f in futures.items()}
    else:
        described = _result(futures, "listing users", args)
    for user in sorted(described):
        infos = described[user].scram_credential_infos
        shown = ",".join(
            f"{_enum_name(i.mechanism).replace('_', '-')}=iterations={i.iterations}" for i in infos
        )
        print(f"SCRAM credential configs for user-principal '{user}' are {shown}")
    return 0


@_verb
def user_remove(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import UserScramCredentialDeletion

    admin = _admin(args)
    deletion = UserScramCredentialDeletion(args.user, _mechanism(args.mechanism))
    futures = admin.alter_user_scram_credentials([deletion], request_timeout=args.timeout)
    _result(futures[args.user], f"removing {args.mechanism} credentials of {args.user}", args)
    print(f"Completed updating config for user {args.user}.")
    return 0


def _acl_arguments(p: argparse.ArgumentParser, *, filtering: bool) -> None:
    p.add_argument(
        "--allow-principal",
        action="append",
        default=[],
        metavar="User:NAME",
        help="principal the ACL allows (repeatable)",
    )
    p.add_argument(
        "--deny-principal",
        action="append",
        default=[],
        metavar="User:NAME",
        help="principal the ACL denies (repeatable)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="host the allowed principals connect from (default: *)",
    )
    p.add_argument(
        "--deny-host",
        action="append",
        default=[],
        metavar="HOST",
        help="host the denied principals connect from (default: *)",
    )
    p.add_argument(
        "--operation",
        action="append",
        choices=OPERATIONS,
        default=[],
        help="operation allowed or denied (repeatable)" + ("; default: any" if filtering else ""),
    )
    p.add_argument("--topic", action="append", default=[], help="topic name (repeatable)")
    p.add_argument("--group", action="append", default=[], help="consumer group (repeatable)")
    p.add_argument(
        "--transactional-id",
        action="append",
        default=[],
        help="transactional id (repeatable)",
    )
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument(
        "--resource-pattern-type",
        choices=["literal", "prefixed", "match", "any"] if filtering else ["literal", "prefixed"],
        default=None,
        help="how the resource name matches (default: " + ("any" if filtering else "literal") + ")",
    )


def add_parsers(sub: Any) -> None:
    acl = sub.add_parser("acl", help="add, list or remove ACLs (like kafka-acls)")
    asub = acl.add_subparsers(dest="acl_command", required=True, metavar="COMMAND")
    add = asub.add_parser("add", help="add ACLs")
    _acl_arguments(add, filtering=False)
    add.set_defaults(func=acl_add)
    lst = asub.add_parser("list", help="list the ACLs matching the filter")
    _acl_arguments(lst, filtering=True)
    lst.add_argument("--principal", default=None, help="only ACLs of this principal")
    lst.set_defaults(func=acl_list)
    remove = asub.add_parser("remove", help="remove the ACLs matching the filter")
    _acl_arguments(remove, filtering=True)
    remove.set_defaults(func=acl_remove)
    for p in (add, lst, remove):
        add_common_arguments(p, BROKER_TIMEOUT_HELP)

    user = sub.add_parser("user", help="add, list or remove SCRAM users (like kafka-configs)")
    usub = user.add_subparsers(dest="user_command", required=True, metavar="COMMAND")
    uadd = usub.add_parser("add", help="add or update a user's SCRAM credential")
    uadd.add_argument("user", help="user name")
    uadd.add_argument(
        "--mechanism", choices=MECHANISMS, default="SCRAM-SHA-256", help="SCRAM mechanism"
    )
    uadd.add_argument(
        "--password", default=None, help="the password (default: prompt, or stdin's first line)"
    )
    uadd.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help="PBKDF2 iterations (default: %(default)s)",
    )
    uadd.set_defaults(func=user_add)
    ulist = usub.add_parser("list", help="users with SCRAM credentials, and their mechanisms")
    ulist.add_argument("user", nargs="*", help="only these users (default: all)")
    ulist.set_defaults(func=user_list)
    uremove = usub.add_parser("remove", help="remove a user's SCRAM credential")
    uremove.add_argument("user", help="user name")
    uremove.add_argument(
        "--mechanism", choices=MECHANISMS, default="SCRAM-SHA-256", help="SCRAM mechanism"
    )
    uremove.set_defaults(func=user_remove)
    for p in (uadd, ulist, uremove):
        add_common_arguments(p, BROKER_TIMEOUT_HELP)
