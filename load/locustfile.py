"""paysuite's locustfile: ``locust -f load/locustfile.py --paysuite-config creds.yaml``.

Works on its own with Locust's web UI or headless, and is what ``paysuite load`` runs. The load
shape (``--paysuite-shape`` or ``PAYSUITE_SHAPE``, default ``smoke``; ``--paysuite-profile`` /
``PAYSUITE_PROFILE`` is its old name) picks the ``LoadTestShape``; with ``--class-picker`` every
shape is offered in the web UI. See docs/load.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# a checkout without `pip install -e .` still finds the load and paysuite packages
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from load import hooks  # noqa: E402,F401  (registers the event listeners)
from load.shapes import SHAPE_CLASSES  # noqa: E402
from load.users import PaysuiteUser  # noqa: E402,F401  (the user class Locust finds)

_SHAPE_FLAGS = ("--paysuite-shape", "--paysuite-profile")  # the new name first, then the old


def _selected_shape(argv: list[str]) -> str:
    """The shape named on the command line or in the environment, before Locust parses them.

    Locust picks the first shape class it finds in this module, so only the selected shape's
    class is exposed (all of them with --class-picker, for the web UI's chooser).
    """
    for flag in _SHAPE_FLAGS:
        for index, arg in enumerate(argv):
            if arg == flag and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
    return os.environ.get("PAYSUITE_SHAPE") or os.environ.get("PAYSUITE_PROFILE") or "smoke"


if "--class-picker" in sys.argv:
    for _shape in SHAPE_CLASSES.values():
        globals()[_shape.__name__] = _shape
else:
    _chosen = SHAPE_CLASSES.get(_selected_shape(sys.argv), SHAPE_CLASSES["smoke"])
    globals()[_chosen.__name__] = _chosen
