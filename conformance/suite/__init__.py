"""The conformance checks, one test per catalog entry (run by ``paysuite conform``)."""
