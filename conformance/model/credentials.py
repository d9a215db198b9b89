"""Tokens over time: an access token works until it expires, a refresh gives a new pair.

Lenient where the document is silent: whether a refresh revokes the old access token (RC-10:
the reference keeps it working, another target may not) and whether a refresh token works
twice (unless the configuration declares rotation). Strict where it speaks: a token past its
expiry is refused, a token the target issued works until then, a refresh token obtains a pair.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.model.records import OVER_TIME, REFERENCE, Answer, Authorize, Problem, Refresh
from conformance.model.state import State, Token, World
from conformance.model.verdicts import Judged, allow, forbid

#: A gate's verdict: the request went through (judge it), or it was refused for its token.
THROUGH = "through"
REFUSED = "refused"


def gate(
    world: World, state: State, label: str, answer: Answer, at: float
) -> tuple[str, Problem | None]:
    """What the token named ``label`` lets the request do at ``at``, given the answer."""
    token = state.token(label)
    if token is None:
        return THROUGH, None
    expired = at > token.expires + world.skew_s
    if expired:
        if answer.ok:
            return REFUSED, Problem(
                OVER_TIME,
                f"an access token {at - token.expires:.1f} s past its expiry was accepted "
                f"({answer.status})",
                "a refusal (401): the token expired",
            )
        return REFUSED, None
    if answer.status != 401:
        return THROUGH, None
    near_expiry = at > token.expires - 2 * world.skew_s
    if token.standing == "live" and not near_expiry:
        return REFUSED, Problem(
            OVER_TIME,
            f"the access token {label}, issued by the target and not expired, was refused (401)",
            "the request judged on its own: the token is valid until it expires",
        )
    if token.standing == "ref-live" and not near_expiry and world.narrowing == "reference":
        return REFUSED, Problem(
            REFERENCE,
            f"the access token {label} was refused (401) once its refresh token was used",
            "RC-10: the old access token keeps working until it expires",
            reference=True,
        )
    return REFUSED, None


def authorize(state: State, request: Authorize, answer: Answer, at: float) -> Judged:
    """A pair authorized: its access token lives ``ttl_s`` from (at the earliest) ``at``."""
    if not answer.ok or not isinstance(answer.get("access"), str):
        return allow(state)  # the history stops on a refused authorize: not the model's rule
    token = Token(label=request.label, app=request.app, expires=at + request.ttl_s)
    return allow(state.with_token(token))


def refresh(world: World, state: State, request: Refresh, answer: Answer, at: float) -> Judged:
    old = state.token(request.token)
    if old is None:
        return allow(state)
    if answer.status == 404 and not state.unserved - {request.path}:
        # the document gives two shapes of the refresh path; a target may serve one (and
        # answer 404 on the other every time), not neither
        return allow(replace(state, unserved=state.unserved | {request.path}))
    if not answer.ok:
        if old.spent:
            return allow(state)  # a used refresh token may be refused (rotation) or not
        return forbid(
            OVER_TIME,
            f"refresh of a refresh token never used before answered {answer.status}",
            "a new token pair: the client obtains a new pair with its refresh token",
        )
    if old.spent and world.refresh_rotation:
        return forbid(
            OVER_TIME,
            f"a refresh token used once already obtained another pair ({answer.status})",
            "a refusal: the configuration declares refresh_rotation",
        )
    if not isinstance(answer.get("access"), str) or not isinstance(answer.get("refresh"), str):
        return forbid(
            OVER_TIME,
            "refresh answered without an access and a refresh token",
            "the token pair (access, refresh, expires)",
        )
    standing = "ref-live" if old.standing == "live" else old.standing
    state = state.with_token(replace(old, spent=True, standing=standing))
    new = Token(label=request.label, app=request.app, expires=at + request.ttl_s)
    return allow(state.with_token(new))


def spend(world: World, state: State, request: Refresh) -> Judged:
    """A refresh that got no answer, had it taken effect: its refresh token is spent (the new
    pair never reached the history, so nothing else changes)."""
    old = state.token(request.token)
    if old is None or (old.spent and world.refresh_rotation):
        return allow(state)
    standing = "ref-live" if old.standing == "live" else old.standing
    return allow(state.with_token(replace(old, spent=True, standing=standing)))
