"""paysuite's locustfile: ``locust -f load/locustfile.py --paysuite-config creds.yaml``.

Works on its own with Locust's web UI or headless, and is what ``paysuite load`` runs. The
profile (``--paysuite-profile`` or ``PAYSUITE_PROFILE``, default ``smoke``) picks the load shape;
with ``--class-picker`` every profile's shape is offered in the web UI. See docs/load.md.
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
from load.shapes import SHAPES  # noqa: E402
from load.users import PaysuiteUser  # noqa: E402,F401  (the user class Locust finds)


def _selected_profile(argv: list[str]) -> str:
    """The profile named on the command line or in the environment, before Locust parses them.

    Locust picks the first shape class it finds in this module, so only the selected profile's
    shape is exposed (all of them with --class-picker, for the web UI's chooser).
    """
    for index, arg in enumerate(argv):
        if arg == "--paysuite-profile" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--paysuite-profile="):
            return arg.split("=", 1)[1]
    return os.environ.get("PAYSUITE_PROFILE", "smoke")


if "--class-picker" in sys.argv:
    for _shape in SHAPES.values():
        globals()[_shape.__name__] = _shape
else:
    _chosen = SHAPES.get(_selected_profile(sys.argv), SHAPES["smoke"])
    globals()[_chosen.__name__] = _chosen
