"""Webhook delivery (RC-40): which URLs may be called, the endpoints and their secrets, the
retry policy and the dispatcher. The outbox and endpoint tables are the store's
(``store.webhook_outbox``): a delivery is written in the same SQL transaction as its event.
"""
