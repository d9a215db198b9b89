"""Leave out the mutants inside annotations: a filter over the session, as cosmic-ray's own
``cr-filter-operators`` is (the work item gets a SKIPPED result, and the report counts it apart).

Why: every module of the stub starts with ``from __future__ import annotations``, so an
annotation is a string nobody evaluates; ``str | None`` turned into ``str + None`` changes no
behaviour of any program. Running such a mutant costs a whole ladder of conform runs to learn
nothing, and counting it would only pad the class ``equivalent``. A module without that import
evaluates its annotations at definition time, where a mutant may break the import: its mutants
are kept.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REASON = "annotation: never evaluated (from __future__ import annotations)"


@cache
def annotation_spans(path: str) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """(start, end) positions, as (line, column), of every annotation of a postponing module."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    postponed = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    if not postponed:
        return ()
    spans = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for annotation in found:
            if annotation is not None and annotation.end_lineno is not None:
                start = (annotation.lineno, annotation.col_offset)
                end = (annotation.end_lineno, annotation.end_col_offset or 0)
                spans.append((start, end))
    return tuple(spans)


def in_annotation(path: str, position: tuple[int, int]) -> bool:
    return any(start <= position < end for start, end in annotation_spans(path))


def skip_annotations(session: Path, root: Path) -> int:
    """Mark the session's pending mutants inside annotations SKIPPED; how many were."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            mutation = item.mutations[0]
            line, column = mutation.start_pos
            if in_annotation(str(root / mutation.module_path), (int(line), int(column))):
                result = WorkResult(output=REASON, worker_outcome=WorkerOutcome.SKIPPED)
                db.set_result(item.job_id, result)
                skipped += 1
    return skipped
