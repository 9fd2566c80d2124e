"""Microbenchmarks of the Rust core paths (pytest-benchmark).

Not part of the normal test run: pytest's testpaths is tests/, so only an explicit
``python -m pytest bench/micro --benchmark-only`` collects these.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_benchmark", reason="pip install pytest-benchmark")
