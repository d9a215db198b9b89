"""The conformance checks, one module per section of the interface document.

Each check is a plain function with its catalog entry declared right above it (``@check``, see
``conformance.checks``); ``conformance.catalog`` gathers them, the pytest plugin
(``conformance.plugin``) collects and runs them. Modules, in the run's order:

- ``authentication``: Authentication; Endpoints 5 (authorize) and 6 (refresh) -- AUTH
- ``endpoint_cashin_cashout``: Endpoints 1 (cashin) and 2 (cashout) -- TXN
- ``idempotency``: Errors rule 1; Limits (Idempotency-Key) -- IDEM
- ``endpoint_find``: Endpoints 3 (find) -- FIND
- ``states_and_transitions``: States and transitions -- LIFE
- ``endpoint_list_events``: Endpoints 4 (list events); Events -- EVT
- ``privileges``: Authentication rule 5; Resources: Application -- PRIV, ISO
- ``resources_and_fields``: Resources and their fields -- FMT
- ``errors``: Errors rule 2 -- ERR
- ``properties``: every endpoint under generated requests (schemathesis) -- PROP
"""
