"""The check catalog: one stable entry per rule, gathered from the ``@check`` declarations of
the section modules, and the one place that lists and looks them up. The section modules need
neither pytest nor httpx nor schemathesis, so ``--list``, the documentation table and the reports
describe every check without them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import import_module

from conformance.checks import entry_of
from paysuite_core.results.rule import SECTIONS, Check
from paysuite_core.usage import UsageError

#: The modules of ``conformance.suite``, one per section of the document, in the run's order.
SECTION_MODULES: tuple[str, ...] = (
    "authentication",
    "endpoint_cashin_cashout",
    "idempotency",
    "endpoint_find",
    "states_and_transitions",
    "endpoint_list_events",
    "privileges",
    "resources_and_fields",
    "errors",
    "webhooks",
    "history",
    "properties",
)
#: The check groups (the ID's prefix) in the run's order: the history phase, then the property
#: phase come last.
GROUPS: tuple[str, ...] = (
    "AUTH",
    "TXN",
    "IDEM",
    "FIND",
    "LIFE",
    "EVT",
    "PRIV",
    "ISO",
    "FMT",
    "ERR",
    "WEBHOOK",
    "MODEL",
    "PROP",
)


def implementations() -> list[tuple[Check, Callable[..., object]]]:
    """Every check function of the section modules with its entry, in module order."""
    found: list[tuple[Check, Callable[..., object]]] = []
    for name in SECTION_MODULES:
        module = import_module(f"conformance.suite.{name}")
        for value in vars(module).values():
            entry = entry_of(value)
            if entry is not None and getattr(value, "__module__", None) == module.__name__:
                found.append((entry, value))
    return found


def _run_order(check: Check) -> tuple[int, int, str]:
    if check.group not in GROUPS:
        raise ValueError(f"{check.id}: group {check.group} is not in catalog.GROUPS")
    number = check.id.split("-", 1)[1]
    return GROUPS.index(check.group), int(number) if number.isdigit() else 0, check.id


CATALOG: tuple[Check, ...] = tuple(
    sorted((entry for entry, _ in implementations()), key=_run_order)
)

_BY_ID = {check.id: check for check in CATALOG}


class UnknownCheckError(UsageError, ValueError):
    """An --only entry that names no check and no group: the run cannot start (exit status 2)."""


def get(check_id: str) -> Check:
    return _BY_ID[check_id]


def parse_only(spec: str | Iterable[str] | None) -> frozenset[str] | None:
    """Resolve ``--only`` (IDs and group prefixes, comma-separated) into check IDs.

    ``None`` or an empty value selects everything. An unknown entry raises ``UnknownCheckError``
    naming it, so a typo is a usage error rather than a silently empty run.
    """
    if spec is None:
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    wanted = [item.strip().upper() for item in items if item and item.strip()]
    if not wanted:
        return None
    selected: set[str] = set()
    for item in wanted:
        if item in _BY_ID:
            selected.add(item)
        elif item in GROUPS:
            selected.update(check.id for check in CATALOG if check.group == item)
        else:
            raise UnknownCheckError(
                f"--only: {item!r} is neither a check ID nor a group ({', '.join(GROUPS)})"
            )
    return frozenset(selected)


def section_order() -> list[str]:
    """Sections in the order of the document, for the scorecard."""
    order = list(SECTIONS)
    extra = [s for s in dict.fromkeys(c.section for c in CATALOG) if s not in order]
    return [s for s in order if any(c.section == s for c in CATALOG)] + extra


def render_list() -> str:
    """The catalog as aligned text, what ``paysuite conform --list`` prints."""
    lines = []
    for section in section_order():
        lines.append(section)
        for check in CATALOG:
            if check.section == section:
                profile = "  [reference]" if check.profile == "reference" else ""
                lines.append(f"  {check.id:<9} {check.level:<6} {check.title}{profile}")
    lines.append(f"{len(CATALOG)} checks")
    return "\n".join(lines)


def render_markdown() -> str:
    """The catalog as a Markdown table, embedded in docs/conformance.md."""
    rows = [
        "| ID | level | profile | section | check |",
        "|---|---|---|---|---|",
    ]
    for check in CATALOG:
        title = check.title.replace("|", "\\|")
        rows.append(f"| {check.id} | {check.level} | {check.profile} | {check.section} | {title} |")
    return "\n".join(rows)
