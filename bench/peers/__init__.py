"""Other projects' test suites run against kafkalite and Apache Kafka, side by side.

``python -m bench.peers SUITE`` (from the checkout's root) fetches the pinned suite the way
its ecosystem ships it, builds it, applies the small fixture patch kept beside this file
(``bench/peers/<suite>.patch``, if the suite needs one), starts each broker with the same
settings, runs the suite against it and writes ``bench/results/peers/<suite>.json``; the
compatibility page ``bench/results/peers/README.md`` is rendered from those files. The
suites' own code is never in the repository: it is fetched into a cache outside it
(``$XDG_CACHE_HOME/kafkalite/peers``).
"""
