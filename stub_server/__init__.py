"""The reference stub: an aiohttp implementation of the Payments Transactions Service.

What it offers:
- ``python -m stub_server`` / ``paysuite stub`` (``cli``): serve it, create applications, rotate
  the signing key; ``server.run`` serves from Python.
- ``app.build_app(state.StubApp(settings))``: the aiohttp application, for in-process use.
- ``settings``: ``StubSettings`` and the config file; ``faults``: the fault switches (each with
  the conformance checks it must trip) and the conformant variants.

Layout, by the interface document's sections: ``handlers/`` (auth, transactions, events,
sandbox, SDK extensions), ``rules/`` (request body, fields, idempotency, privileges, rendering,
lifecycle), ``store/`` (SQLite, one module per table or mechanism), ``fault_injection`` (what each
fault changes). ``docs/stub.md`` lists where each rule of the document is enforced.
"""
