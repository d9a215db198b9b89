"""``ast.parse`` one call at a time while the suite runs threads (``--concurrency``).

CPython 3.11 keeps the recursion depth of its AST-to-Python conversion in the interpreter's
state, shared by every thread: two ``ast.parse`` calls at once can fail with "AST constructor
recursion depth mismatch" (CPython issue 106905, fixed in later versions). hypothesis parses
source as it builds strategies (the constants of the code under test, lambdas' sources, pretty
printing), and so does schemathesis; with several workers that error was one generated case's
engine error, an operation left unexercised and a PROP check not judged. The same state is used
the other way, when ``compile`` is handed an AST (hypothesis compiles the trees of the lambdas
it describes, in the stateful phase among others). While ``serialized()`` is active,
``ast.parse`` and a ``compile`` that makes or takes an AST (both looked up at each call by every
caller) hold one lock.
"""

from __future__ import annotations

import ast
import builtins
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_LOCK = threading.RLock()
_STATE_LOCK = threading.Lock()
_active = 0
_original: Callable[..., Any] = ast.parse
_original_compile: Callable[..., Any] = builtins.compile


def _parse(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        return _original(*args, **kwargs)


def _compile(source: Any, *args: Any, **kwargs: Any) -> Any:
    flags = kwargs.get("flags", args[2] if len(args) > 2 else 0)
    if isinstance(source, ast.AST) or int(flags) & ast.PyCF_ONLY_AST:
        with _LOCK:
            return _original_compile(source, *args, **kwargs)
    return _original_compile(source, *args, **kwargs)


@contextmanager
def serialized() -> Iterator[None]:
    """``ast.parse`` and AST ``compile`` behind one lock until the outermost of nested uses
    ends."""
    global _active
    with _STATE_LOCK:
        _active += 1
        if _active == 1:
            ast.parse = _parse
            builtins.compile = _compile
    try:
        yield
    finally:
        with _STATE_LOCK:
            _active -= 1
            if _active == 0:
                ast.parse = _original
                builtins.compile = _original_compile
