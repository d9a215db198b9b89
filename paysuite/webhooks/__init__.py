"""``paysuite webhooks``: the commands (``commands``: listen, resend, trigger, verify...) and the
listener's verdict (``listen``: what its receiver saw, judged by the WEBHOOK rules), over the
receiving side in ``paysuite_core.webhooks``."""
