"""``python -m kafkalite.bench run ...`` (the same as ``kafkalite bench run ...``)."""

import sys

from kafkalite.bench.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
