"""The conformance suite: checks any implementation of the service against the document."""
