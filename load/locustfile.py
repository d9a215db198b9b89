"""paysuite's locustfile: ``locust -f load/locustfile.py --paysuite-config creds.yaml``.

Works on its own with Locust's web UI or headless, and is what ``paysuite load`` runs. The load
shape (``--paysuite-shape`` or ``PAYSUITE_SHAPE``, default ``smoke``) picks the ``LoadTestShape``
and the user classes it names; with ``--class-picker`` every shape and user class is offered in
the web UI. Locust's ``-u``, ``-r`` and ``-t`` override the shape's users, spawn rate and
duration. See docs/load.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# a checkout without `pip install -e .` still finds the load and paysuite packages
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from load import hooks  # noqa: E402  (registers the event listeners)
from load.shape_catalog import SHAPES  # noqa: E402
from load.shapes import SHAPE_CLASSES  # noqa: E402
from load.users import USER_CLASSES  # noqa: E402

# Locust runs the first shape class and every user class it finds in this module: only the
# selected shape's are exposed; every one for the web UI's chooser, and every user class on a
# worker, which spawns whatever classes its master names.
_name = hooks.selected_shape(sys.argv)
_name = _name if _name in SHAPE_CLASSES else "smoke"
_exposed: list[type] = [
    SHAPE_CLASSES[_name],
    *(USER_CLASSES[u] for u in SHAPES[_name].user_classes),
]
if "--class-picker" in sys.argv:
    _exposed = [*SHAPE_CLASSES.values(), *USER_CLASSES.values()]
elif "--worker" in sys.argv:
    _exposed = [SHAPE_CLASSES[_name], *USER_CLASSES.values()]
globals().update({cls.__name__: cls for cls in _exposed})
