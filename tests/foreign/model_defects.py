"""The defects of ``independent.py --defect NAME`` that no hand-written check was told about.

Why a dict of its own: ``DEFECT_CHECKS`` (defect_checks.py) names, for each defect there, the
check written to catch it, and its self-test demands that check fail. The defects here have no
such check on purpose (issue 30): each is wrong only in a history (requests at the same instant,
a fact read again seconds later, the same thing written another way, two values that must agree),
while a scripted check reads each fact once, right after causing it. The history phase judges
whatever a target does against a model of the document, so it must fail each of these on a
``MODEL-...`` check without being told which defect it faces.

Each breaks a rule the interface document states, not a choice of the project's stub: an
implementation that chose otherwise where the document is silent (letter case of refs it
accepts, numbers with a country code, the status words, trailing slashes served or not) would not
show it. The rule broken is noted beside each.
"""

from __future__ import annotations

#: The four kinds of issue 30, in its order.
KINDS = ("concurrency", "time", "spelling", "derived")

#: defect -> its kind (one of ``KINDS``)
MODEL_DEFECTS: dict[str, str] = {
    # concurrency across operations: each request right alone, wrong together
    "pooled-ref-race": "concurrency",  # ref: unique, generated at creation
    "created-event-lost-race": "concurrency",  # a created event for every transaction
    "key-channels-race": "concurrency",  # one request executes at most once, header or query
    "customer-answers-race": "concurrency",  # pending until the customer confirms OR cancels
    "total-across-await": "concurrency",  # total: the number of matching events
    # time: right now, wrong a few seconds later
    "key-forgotten-after-3s": "time",  # a reused key is rejected, not executed twice
    "settled-status-reverts": "time",  # pending only until the customer confirms or cancels
    "expired-token-grace": "time",  # after its lifetime, a new pair through refresh
    "snapshot-goes-live": "time",  # data: the transaction snapshot of that stage
    # identity through other spellings: reaching what the canonical spelling is refused
    "find-upper-ref-any-merchant": "spelling",  # merchants' transactions apart
    "trailing-slash-no-privilege": "spelling",  # read only creates nothing
    "ref-filter-case-any-merchant": "spelling",  # merchants' transactions apart
    "client-filter-250-any-merchant": "spelling",  # merchants' transactions apart
    # consistency of derived values
    "total-kind-status-drops-kind": "derived",  # total: the number of matching events
    "event-id-by-row": "derived",  # event_id: unique event identifier
    "listed-amount-rounded": "derived",  # data.amount: the snapshot's amount
    "processed-snapshot-before-status": "derived",  # processed: success or failed in it
}
