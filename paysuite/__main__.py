"""``python -m paysuite`` is the ``paysuite`` command."""

import sys

from paysuite.cli import main

sys.exit(main())
