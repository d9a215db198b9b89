"""The document's rules that are more than one handler's business, one module per rule.

- ``request_body``: a JSON object body, its media type, size and arrival time (Endpoints,
  Limits, Errors rule 2).
- ``fields``: the creation fields ``amount``, ``number`` and ``X-Webhook-Mode`` (Endpoints 1-2).
- ``idempotency``: the ``Idempotency-Key`` (Errors rule 1, Limits, RC-6) and how a creation is
  stored under it.
- ``privileges``: which application privilege may create which kind (Authentication, 5).
- ``single_values``: a header or query parameter the stub reads is sent once (RC-41).
- ``rendering``: transactions and events as the document's resources show them.
- ``lifecycle``: pending -> processed, by the sandbox or the simulated customer (States and
  transitions).

The handlers (``stub_server.handlers``) call them; a fault switch (``stub_server.fault_injection``)
replaces one of them through ``stub_server.state.RuleHooks``.
"""
