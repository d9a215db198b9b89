"""paysuite's own benchmarks: how fast the bundled stub is, and how much of a load test's rate or
of a find's latency is paysuite's. They measure paysuite, not a user's target, so they live in the
checkout, outside the installed packages: ``python -m benchmarks`` (or ``tox -e bench``) from the
repository's root; docs/load.md and docs/proxy.md explain the figures. Everything is loopback.
"""
