"""Webhooks as a client receives them: the signature both formats carry (``signature``, which the
stub signs with too), the record of what arrived (``ledger``) and the receiving server
(``receiver``). The suite's WEBHOOK checks, the load runs' journal and ``paysuite webhooks``
(``paysuite.webhooks``: the listener's verdict and the commands) all stand on these."""
