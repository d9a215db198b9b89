"""``python -m stub_server`` is ``paysuite stub``."""

import sys

from stub_server.cli import main

sys.exit(main())
