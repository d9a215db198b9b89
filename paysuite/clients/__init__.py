"""``paysuite clients``: run the live service's published SDKs, unchanged, against a target.

A contract tester says whether an implementation follows the document; this says whether the
clients its users already have will work with it. Each SDK runs in its own process (a *driver*:
``paypack_py_driver.py``, ``paypack_js_driver.js``) that reads a job on stdin and prints one JSON
result; ``cache`` installs the SDKs on first use, ``matrix`` runs the drivers and prints the
SDK x operation matrix, ``cli`` is the command.
"""
