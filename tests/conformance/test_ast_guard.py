"""``conformance.ast_guard``: while the suite runs threads, every AST conversion (``ast.parse``,
``compile`` of source to an AST or of an AST to code) takes one lock, and everything is given back
once the outermost use ends."""

from __future__ import annotations

import ast
import builtins
import threading

from conformance.ast_guard import _LOCK, serialized


def _lock_held_elsewhere(call: object) -> bool:
    """Whether ``call`` waits while another thread holds the guard's lock."""
    taken, release, finished = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with _LOCK:
            taken.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    taken.wait(5)
    worker = threading.Thread(target=lambda: (call(), finished.set()))  # type: ignore[operator]
    worker.start()
    waited = not finished.wait(0.3)
    release.set()
    worker.join(5)
    thread.join(5)
    return waited and finished.is_set()


def test_ast_conversions_take_the_lock_and_plain_compiles_do_not() -> None:
    original_parse, original_compile = ast.parse, builtins.compile
    tree = ast.parse("x = 1")
    with serialized(), serialized():  # nested: given back once, at the outermost end
        assert ast.parse is not original_parse and builtins.compile is not original_compile
        assert _lock_held_elsewhere(lambda: ast.parse("y = 2"))
        assert _lock_held_elsewhere(lambda: compile(tree, "<t>", "exec"))
        assert _lock_held_elsewhere(lambda: compile("z", "<t>", "eval", ast.PyCF_ONLY_AST))
        assert not _lock_held_elsewhere(lambda: compile("1 + 1", "<t>", "eval"))
        assert eval(compile(ast.parse("2 * 3", mode="eval"), "<t>", "eval")) == 6
    assert ast.parse is original_parse and builtins.compile is original_compile
