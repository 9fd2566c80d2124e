"""Files the bench ships inside the package (hardware profiles, workloads), found by name.

They are package data read through ``importlib.resources``, so an installed wheel finds
them from any working directory; a checkout's ``hw_profiles/`` and ``bench/workloads/`` are
symlinks to the same files, so each exists once in git.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

PROFILES = "hw_profiles"
WORKLOADS = "workloads"


def shipped_dir(kind: str) -> Traversable:
    """The package's directory of ``kind`` (``PROFILES`` or ``WORKLOADS``)."""
    return files("kafkalite.bench") / kind


def shipped_names(directory: Traversable, suffix: str) -> list[str]:
    """Names (file stems) of the ``suffix`` files in ``directory``, sorted."""
    if not directory.is_dir():
        return []
    return sorted(
        entry.name.removesuffix(suffix)
        for entry in directory.iterdir()
        if entry.name.endswith(suffix) and entry.is_file()
    )


def is_path(spec: str | Path, suffix: str) -> bool:
    """Whether ``spec`` names a file of the user's rather than a shipped name: an existing
    file, or anything spelled like a path (a directory part or the file suffix)."""
    if isinstance(spec, Path):
        return True
    return Path(spec).is_file() or "/" in spec or spec.endswith(suffix)


def find(name: str, directory: Traversable, suffix: str) -> Traversable | None:
    """The shipped file called ``name`` in ``directory``, or None."""
    entry = directory / f"{name}{suffix}"
    return entry if entry.is_file() else None
