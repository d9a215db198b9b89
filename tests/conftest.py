"""Shared by every test folder: loading this file puts ``tests/`` on ``sys.path`` (pytest's
prepend import mode), so helpers meant for several suites, such as ``hostile``, import by name."""
