"""paysuite's locustfile: ``locust -f load/locustfile.py --paysuite-config creds.yaml``.

Works on its own with Locust's web UI or headless, and is what ``paysuite load`` runs. The load
shape (``--paysuite-shape`` or ``PAYSUITE_SHAPE``, default ``smoke``; ``--paysuite-profile`` /
``PAYSUITE_PROFILE`` is its old name) picks the ``LoadTestShape``; with ``--class-picker`` every
shape is offered in the web UI. Locust's ``-u``, ``-r`` and ``-t`` override the shape's users,
spawn rate and duration. See docs/load.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# a checkout without `pip install -e .` still finds the load and paysuite packages
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from load import hooks  # noqa: E402  (registers the event listeners)
from load.shapes import SHAPE_CLASSES  # noqa: E402
from load.users import PaysuiteUser  # noqa: E402,F401  (the user class Locust finds)

# Locust picks the first shape class it finds in this module, so only the selected shape's class
# is exposed (all of them with --class-picker, for the web UI's chooser).
if "--class-picker" in sys.argv:
    for _shape in SHAPE_CLASSES.values():
        globals()[_shape.__name__] = _shape
else:
    _chosen = SHAPE_CLASSES.get(hooks.selected_shape(sys.argv), SHAPE_CLASSES["smoke"])
    globals()[_chosen.__name__] = _chosen
