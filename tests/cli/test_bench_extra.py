"""`kafkalite bench` without the `bench` extra: one line naming the missing module and the
extra to install, not a ModuleNotFoundError traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

# The interpreter hides yaml (or matplotlib) as if it were not installed: `import yaml` then
# raises ModuleNotFoundError, exactly as in an environment without the extra.
HIDE_AND_RUN = (
    "import sys; sys.modules[{module!r}] = None; "
    "from kafkalite.cli import main; sys.exit(main({argv!r}))"
)


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("yaml", ["bench", "run", "tiny", "--quick"]),
        ("matplotlib", ["bench", "run", "tiny", "--quick"]),
        ("yaml", ["bench", "list"]),
    ],
)
def test_bench_without_the_extra_names_the_module_and_the_extra(
    module: str, argv: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDE_AND_RUN.format(module=module, argv=argv)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"'{module}'" in lines[0] and "install kafkalite[bench]" in lines[0]


def test_bench_list_works_with_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", "bench", "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "max-throughput-1kb" in done.stdout
