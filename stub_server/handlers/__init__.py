"""The request handlers, one module per section of the interface document.

- ``auth``: Endpoints 5 (authorize) and 6 (refresh tokens), and the Authentication section's
  bearer-token check that every protected operation runs first.
- ``transactions``: Endpoints 1 (cashin), 2 (cashout) and 3 (find a transaction).
- ``events``: Endpoints 4 (list transaction events).
- ``sandbox``: the customer's confirm/cancel (States and transitions) and ``/healthz``; not
  part of the document.
- ``sdk_extensions``: routes the published SDKs call beyond the document (RC-36, RC-37).

``stub_server.app`` puts them on their routes. Rules shared by several handlers are in
``stub_server.rules``; the storage side in ``stub_server.store``.
"""
