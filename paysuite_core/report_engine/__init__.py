"""One report engine: every HTML page paysuite writes (conform's report.html, the proxy's and
``paysuite clients``' pages, load.html and the demo's index) is a Jinja2 template over one base.

The base (``base.html``) is the page every report shares: the title, a verdict banner, the
failures first, then the scorecard, with one stylesheet (``report.css``) inlined so that a page
stays self-contained (no script, nothing fetched: a CI artifact opens anywhere, offline).
``exchange.html`` is the one partial that shows an exchange (request, answer, its curl), used by
conform's failures and the proxy's client faults alike. Autoescape is on for every template: a
target's answer or a check's message is text, never markup, and no module escapes by hand.

All templates live here, in ``templates/``, rather than beside each front-end: one loader and one
package-data entry ship them all, a page extends another by name (the proxy's extends conform's)
without a loader that knows several packages, and ``paysuite_core`` is the package every
front-end may import. Each front-end hands its run's own objects (results, verdict, the load
summary) to :func:`render`; nothing here reads a report back from disk.
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined


def _g(value: object) -> str:
    """A number as ``{:g}`` writes it (``2.0`` -> ``2``); ``n/a`` for a missing one."""
    if value is None:
        return "n/a"
    return f"{value:g}" if isinstance(value, float) else str(value)


_ENV = Environment(
    loader=PackageLoader(__name__, "templates"),
    autoescape=True,
    undefined=StrictUndefined,  # a name a template misspells fails the render, never blank
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["g"] = _g


def render(template: str, /, **context: object) -> str:
    """The page ``template`` (a name under ``templates/``) filled with ``context``."""
    return _ENV.get_template(template).render(**context)
