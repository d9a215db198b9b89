"""paysuite: conformance and load testing for the Payments Transactions Service."""

__version__ = "0.1.0"
