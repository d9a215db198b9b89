"""Drive the mutation score: cosmic-ray mutants of the stub, judged by ``paysuite conform`` in
every configuration of ``configurations.py`` (``judge.py``).

    python mutation/run.py --sample 400    # a stratified sample of 400 (per module, seed 62)
    python mutation/run.py                 # every pending mutant of the sample (or all)
    python mutation/run.py --workers 1     # one worker (a machine that is busy)
    python mutation/report.py              # the tables and the survivors, in markdown

The session is cosmic-ray's sqlite work database (``mutation/results/session.sqlite``): the first
run creates it (``cosmic-ray init`` over the scope of ``cosmic-ray.toml``, then
``cr-filter-operators`` with the config's exclusions, then ``annotation_filter``); every later run
continues with the mutants that have no result yet, so an interrupted run (Ctrl-C, a session
that ends) loses at most the mutants that were running. ``--fresh`` starts a new session.

Sampled: ``--sample N`` draws N mutants stratified by module (each module's share of the
population, at least one each), with ``--seed``; the draw is written to
``mutation/results/sample.json`` and every later run keeps to it, so the score is the sample's
and the report gives its confidence interval.

Parallel: each worker is a ``cosmic-ray http-worker`` (cosmic-ray's http distributor) running in
its own copy of the tree, made anew at every start, so a mutant applied on disk by one worker
never reaches another, and a worker killed half-way leaves no mutated file behind in the tree
you work in. The work is handed out through cosmic-ray's own client of that distributor
(``cosmic_ray.distribution.http.send_request``) and every result is stored as it arrives.

The test command of a mutant is ``judge.py``, run from the worker's copy: it runs
``python -m paysuite conform`` in each configuration, with the copy as working directory, so
the stub (and the suite) judged are the copy's, mutant included. Killed = exit status != 0
in some configuration (1: a check failed; 2: no verdict, e.g. the stub did not start); a mutant
still running after the timeout is killed too and counted apart (timeout). A baseline run of
the unmutated copy in every configuration must pass first: a red suite would "kill" every mutant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "mutation"
CONFIG = HERE / "cosmic-ray.toml"
RESULTS = HERE / "results"
SESSION = RESULTS / "session.sqlite"
#: Where the workers' copies of the tree live (not committed: .gitignore).
WORK = HERE / ".work"
#: Not copied into a worker's tree: environments, history, outputs, this folder.
COPY_IGNORE = shutil.ignore_patterns(
    ".venv", "venv", ".git", ".tox", "mutation", "reports", "__pycache__", "*.pyc",
    ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis", "*.egg-info", "*.db*",
)  # fmt: skip
SAMPLE = RESULTS / "sample.json"
JUDGE = HERE / "judge.py"


@dataclass
class Worker:
    url: str
    tree: Path
    process: subprocess.Popen[bytes]
    log: Path


def venv_tool(name: str) -> str:
    """A console script of the environment this driver runs in (cosmic-ray, paysuite)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise SystemExit(
            f"{path} not found: install the mutation extra first (pip install -e '.[mutation]')"
        )
    return str(path)


def test_command(*extra: str) -> str:
    """``python mutation/judge.py``: run from a worker's copy, it judges the copy's stub."""
    return shlex.join([sys.executable, str(JUDGE), *extra])


def timeout_s() -> float:
    with open(CONFIG, "rb") as handle:
        return float(tomllib.load(handle)["cosmic-ray"]["timeout"])


def run_tool(*argv: str) -> None:
    """A cosmic-ray command line tool, from the tree's root (the config's module paths)."""
    subprocess.run(argv, cwd=ROOT, check=True)


def ensure_session(session: Path, fresh: bool) -> None:
    """Create the session (init + operator filter) unless it exists and ``fresh`` is false."""
    if session.exists() and not fresh:
        return
    session.parent.mkdir(parents=True, exist_ok=True)
    session.unlink(missing_ok=True)
    run_tool(venv_tool("cosmic-ray"), "init", str(CONFIG), str(session))
    run_tool(venv_tool("cr-filter-operators"), str(session), str(CONFIG))
    from annotation_filter import skip_annotations  # mutation/annotation_filter.py, beside this

    skipped = skip_annotations(session, ROOT)
    print(f"{skipped} mutants inside annotations left out (never evaluated)", flush=True)
    SAMPLE.unlink(missing_ok=True)  # a draw belongs to the session it was drawn from


def make_tree(index: int) -> Path:
    """A fresh copy of the tree for worker ``index`` (a stale one may hold a mutant)."""
    tree = WORK / f"worker-{index}"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(ROOT, tree, ignore=COPY_IGNORE)
    return tree


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_worker(index: int) -> Worker:
    tree = make_tree(index)
    port = free_port()
    log = WORK / f"worker-{index}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [venv_tool("cosmic-ray"), "http-worker", "--port", str(port)],
            cwd=tree,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"worker {index} ended at start: see {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return Worker(url, tree, process, log)
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"worker {index} did not listen on {url} within 30 s: see {log}")


def descendants(pid: int) -> list[int]:
    """The processes a worker started: its conform run (cosmic-ray starts the test command in a
    session of its own, which a signal to the worker's group would miss) and that run's stub."""
    try:
        import psutil  # a dependency of locust, so of paysuite
    except ImportError:
        return []
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def stop_workers(workers: Sequence[Worker]) -> None:
    """End the workers this driver started, with the conform runs and stubs they started."""
    for worker in workers:
        if worker.process.poll() is None:
            for pid in [*descendants(worker.process.pid), worker.process.pid]:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
    for worker in workers:
        try:
            worker.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(worker.process.pid, signal.SIGKILL)
            worker.process.wait(5)


def baseline(tree: Path, command: str, timeout: float) -> float:
    """The unmutated copy must pass in every configuration: otherwise every mutant would count
    as killed."""
    started = time.monotonic()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            shlex.split(command), cwd=tree, env=env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise SystemExit(f"baseline: the unmutated stub took over {timeout:g} s") from None
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-15:])
        raise SystemExit(f"baseline: conform failed on the unmutated stub:\n{tail}")
    print(done.stdout.strip(), flush=True)
    return elapsed


def describe(item: object) -> str:
    mutation = item.mutations[0]  # type: ignore[attr-defined]
    line = mutation.start_pos[0]
    operator = mutation.operator_name.removeprefix("core/")
    return f"{mutation.module_path}:{line} {operator}#{mutation.occurrence}"


async def dispatch(
    session: Path, items: Sequence[object], workers: Sequence[Worker], command: str, timeout: float
) -> dict[str, int]:
    """Hand ``items`` to the free workers; store each result in the session as it arrives."""
    from cosmic_ray.distribution.http import send_request
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    counts = {"killed": 0, "survived": 0, "timeout": 0, "other": 0}
    free: asyncio.Queue[str] = asyncio.Queue()
    for worker in workers:
        free.put_nowait(worker.url)
    total = len(items)
    started = time.monotonic()

    with use_db(str(session), WorkDB.Mode.open) as db:

        async def one(number: int, item: object) -> None:
            url = await free.get()
            begun = time.monotonic()
            try:
                result = await send_request(url, item, command, timeout)  # type: ignore[arg-type]
            except Exception as exc:  # a worker that failed: abnormal, retried later
                result = WorkResult(worker_outcome=WorkerOutcome.ABNORMAL, output=str(exc))
            finally:
                free.put_nowait(url)
            if result.worker_outcome == WorkerOutcome.ABNORMAL:
                verdict = "other"  # not stored: the next run tries it again
            else:
                db.set_result(item.job_id, result)  # type: ignore[attr-defined]
                if result.test_outcome == TestOutcome.KILLED:
                    verdict = "timeout" if result.output == "timeout" else "killed"
                elif result.test_outcome == TestOutcome.SURVIVED:
                    verdict = "survived"
                else:
                    verdict = "other"
            counts[verdict] += 1
            where = next(
                (line for line in (result.output or "").splitlines() if line.startswith("MUTANT:")),
                "",
            )
            elapsed = time.monotonic() - started
            print(
                f"[{number}/{total}] {verdict:8} {time.monotonic() - begun:5.1f} s  "
                f"{describe(item)}  {where.removeprefix('MUTANT: ')}  "
                f"(elapsed {elapsed / 60:.1f} min)",
                flush=True,
            )

        await asyncio.gather(*(one(n, item) for n, item in enumerate(items, 1)))
    return counts


def mutant_key(item: object) -> str:
    """cosmic-ray's identity of a mutant as classification.toml keys it (``report.Mutant.key``)."""
    mutation = item.mutations[0]  # type: ignore[attr-defined]
    operator = mutation.operator_name.removeprefix("core/")
    return f"{mutation.module_path}:{operator}:{mutation.occurrence}"


def classified(wanted: str) -> set[str]:
    """The keys ``mutation/classification.toml`` puts in class ``wanted`` (read once)."""
    from report import CLASSIFICATION, load_classification  # mutation/report.py, beside this

    entries = load_classification(CLASSIFICATION)
    return {key for key, entry in entries.items() if entry.get("class") == wanted}


def population(session: Path) -> dict[str, list[str]]:
    """The mutants the score is about, by module: every work item no filter left out."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        results = {item.job_id: result for item, result in db.completed_work_items}
        by_module: dict[str, list[str]] = {}
        for item in db.work_items:
            result = results.get(item.job_id)
            if result is not None and result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            key = mutant_key(item)
            by_module.setdefault(key.split(":", 1)[0], []).append(key)
    return {module: sorted(keys) for module, keys in sorted(by_module.items())}


def allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Proportional allocation with at least one mutant a module (largest remainders): each
    module's share of the sample is its share of the population, so the sample's score is the
    population's estimate without weights."""
    everyone = sum(sizes.values())
    exact = {module: total * size / everyone for module, size in sizes.items()}
    counts = {module: min(size, max(1, int(exact[module]))) for module, size in sizes.items()}
    by_remainder = sorted(sizes, key=lambda name: exact[name] - int(exact[name]), reverse=True)
    while sum(counts.values()) < min(total, everyone):
        for module in by_remainder:
            if counts[module] < sizes[module] and sum(counts.values()) < total:
                counts[module] += 1
    return counts


def draw(session: Path, size: int, seed: int) -> dict[str, object]:
    """A stratified random sample of ``size`` mutants, written to ``sample.json``."""
    modules = population(session)
    counts = allocate({module: len(keys) for module, keys in modules.items()}, size)
    drawn = {
        module: sorted(random.Random(f"{seed}:{module}").sample(keys, counts[module]))
        for module, keys in modules.items()
    }
    sample: dict[str, object] = {
        "seed": seed,
        "size": sum(len(keys) for keys in drawn.values()),
        "population": {module: len(keys) for module, keys in modules.items()},
        "drawn": drawn,
    }
    SAMPLE.write_text(json.dumps(sample, indent=1) + "\n", encoding="utf-8")
    return sample


def drawn_keys() -> set[str] | None:
    """The keys of the recorded draw, or None when the session is run whole."""
    if not SAMPLE.exists():
        return None
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return {key for keys in sample["drawn"].values() for key in keys}


def survived_in(output: str) -> set[str]:
    """The configurations a survivor's judge run passed (``judge.py``'s last line)."""
    for line in output.splitlines():
        if line.startswith("MUTANT: survived "):
            return set(line.removeprefix("MUTANT: survived ").split(","))
    return set()


def pending(
    session: Path,
    survivors: bool = False,
    only_class: str | None = None,
    configurations: str | None = None,
    again: bool = False,
) -> list[object]:
    """The mutants to run: those of the draw (or of the session) without a result, or
    (``survivors``) those that survived an earlier run, judged again by today's checks (killed
    ones stay killed: a check added never makes a kill undone, and the suite's own tests keep
    every check's teeth)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        if survivors:
            wanted_in = set(configurations.split(",")) if configurations else set()
            chosen = [
                item
                for item, result in db.completed_work_items
                if result is not None
                and result.test_outcome == TestOutcome.SURVIVED
                # a survivor already judged in every configuration asked for is not run again,
                # unless checks were added since (``again``)
                and (again or not wanted_in or not wanted_in <= survived_in(result.output or ""))
            ]
        else:
            chosen = list(db.pending_work_items)
        if only_class is not None:
            keys = classified(only_class)
            chosen = [item for item in chosen if mutant_key(item) in keys]
        wanted = drawn_keys()
        if wanted is not None:
            chosen = [item for item in chosen if mutant_key(item) in wanted]
        items = sorted(chosen, key=lambda item: item.job_id)
    return list(items)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python mutation/run.py",
        description="Run the pending cosmic-ray mutants of the stub against paysuite conform.",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="draw N mutants stratified by module (recorded in results/sample.json; later runs "
        "keep to the draw)",
    )
    parser.add_argument("--workers", type=int, default=2, metavar="N", help="parallel workers (2)")
    parser.add_argument("--seed", type=int, default=62, help="seed of --sample's draw (62)")
    parser.add_argument("--session", type=Path, default=SESSION, help="the sqlite session")
    parser.add_argument("--fresh", action="store_true", help="start a new session")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="judge the survivors of earlier runs again (after checks were added)",
    )
    parser.add_argument(
        "--only-class",
        metavar="CLASS",
        choices=("observable", "not-observable", "equivalent", "killed-by-check"),
        help="with --survivors: only the survivors classification.toml puts in CLASS (e.g. "
        "observable, once checks were added for them; killed-by-check, to confirm the kills in "
        "a session run before those checks)",
    )
    parser.add_argument(
        "--configurations",
        metavar="NAME,...",
        help="judge in these configurations of configurations.py only (with --survivors: a "
        "configuration added or widened since; a kill in any configuration is a kill)",
    )
    parser.add_argument(
        "--again",
        action="store_true",
        help="with --survivors --configurations: judge every chosen survivor, even in "
        "configurations it passed before (checks were added since)",
    )
    args = parser.parse_args(argv)
    if args.only_class and not args.survivors:
        parser.error("--only-class goes with --survivors")
    if args.workers < 1 or (args.sample is not None and args.sample < 1):
        parser.error("--workers and --sample must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    session = args.session.resolve()
    ensure_session(session, args.fresh)
    if args.sample is not None:
        if SAMPLE.exists():
            recorded = json.loads(SAMPLE.read_text(encoding="utf-8"))
            if (recorded["seed"], recorded["size"]) != (args.seed, args.sample):
                raise SystemExit(
                    f"{SAMPLE} holds a draw of {recorded['size']} with seed {recorded['seed']}: "
                    "run without --sample to go on with it, or --fresh to start over"
                )
        else:
            draw(session, args.sample, args.seed)
            print(f"drew {args.sample} mutants (seed {args.seed}): {SAMPLE}", flush=True)
    items = pending(session, args.survivors, args.only_class, args.configurations, args.again)
    print(f"session {session}: {len(items)} mutant(s) to run", flush=True)
    if not items:
        return 0
    extra = ("--only", args.configurations) if args.configurations else ()
    command, timeout = test_command(*extra), timeout_s()
    WORK.mkdir(parents=True, exist_ok=True)
    workers: list[Worker] = []
    try:
        for index in range(min(args.workers, len(items))):
            workers.append(start_worker(index))
        if not args.no_baseline:
            took = baseline(workers[0].tree, command, timeout)
            print(f"baseline: conform passes on the unmutated stub ({took:.1f} s)", flush=True)
        started = time.monotonic()
        counts = asyncio.run(dispatch(session, items, workers, command, timeout))
    except KeyboardInterrupt:
        print("interrupted: the results so far are in the session; run again to go on")
        return 130
    finally:
        stop_workers(workers)
    minutes = (time.monotonic() - started) / 60
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    print(f"done in {minutes:.1f} min with {len(workers)} worker(s): {summary}")
    print("table and survivors: python mutation/report.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
