"""Webhook delivery (RC-40): the stub calls back the way merchants integrate.

- ``endpoint_url``: which URLs may be called (loopback only unless allowed) and valid modes.
- ``endpoints``: adding endpoints, each with its signing secret (config file, CLI).
- ``retry_policy``: backoff and giving up.
- ``dispatcher``: the outbox's consumer, signing with ``paysuite_core.webhook_signature``; its
  ``DeliveryHooks`` are where the ``webhook-*`` fault switches act.

The outbox and endpoint tables are the store's (``stub_server.store.webhook_outbox``): a delivery is
written in the same SQL transaction as its event. The delivery log is served by
``stub_server.handlers.webhook_deliveries``.
"""
