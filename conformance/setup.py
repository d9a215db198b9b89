"""Compatibility alias, to be deleted: the module was split into ``conformance.options`` (the
run's options) and ``conformance.preflight`` (loading, reachability, the bundled stub).

``paysuite/demo.py`` still imports ``BUNDLED_STUB_ACCESS_TTL_S`` from here; once it imports it
from ``conformance.preflight``, delete this file. Nothing in ``conformance`` imports it.
"""

from conformance.preflight import BUNDLED_STUB_ACCESS_TTL_S

__all__ = ["BUNDLED_STUB_ACCESS_TTL_S"]
