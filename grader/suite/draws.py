"""The inputs the public checks draw, and the second set the instructor's grade draws them from.

A student's run of the public checks draws its inputs derandomized: the same in every run, so a
table of that run's answers would pass them. The instructor's grade (the reference at hand) runs
each public check that passed and drew anything once more, on inputs drawn from the course's
`hidden_seed`, which the release does not ship, mixed with a digest of the checked component's own
files (`for_component`): a table of the first set answers none of the second, and a resubmission that
changes the component gets another second set.
The first pass is the student's run exactly, so the bug table (bugs.json, made from that run) names
a bug alike in both grades; a failure of the second pass alone is marked (`Drawn.AFRESH`) and left out of
that match (grader.judging.diagnosis).

Every seed a check draws from goes through `seed` (the suites' strategies, tests/strategies.py):
in the first pass it is the seed itself; in the second, mixed with the course's."""

from __future__ import annotations

import hashlib
import random
from contextlib import contextmanager
from pathlib import Path

import hypothesis

from grader.results import Drawn

# a table answers the first set's inputs only: one other input fails it (even Hypothesis's simplest
# example differs, its tensors drawn from mixed seeds), and finding bugs on more inputs is the hidden
# tier's work. Each example costs a round trip to the worker, in every grading of a class
EXAMPLES = 1

_mix = 0  # 0: the first set (the student's run)
_drawn = 0  # seeds handed out in this process


def seed(value: int) -> int:
    """The seed to draw from for `value` in the current set."""
    global _drawn
    _drawn += 1
    return value if not _mix else (value * 1_000_003 + _mix) % 2**62


def drawn() -> int:
    return _drawn


@contextmanager
def tagged(afresh: bool = True):
    """What the block raises is marked as a failure on inputs of the second set (for a check that
    draws its second example itself, as the stored cases do: tests/grading/support.py)."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as e:  # a timeout or a crash of the worker (WorkerFault) too
        if afresh:
            e.drawn = Drawn.AFRESH  # type: ignore[attr-defined]
        raise


def for_component(hidden_seed: int, staged: Path, files: list[str]) -> int:
    """The seed of the instructor's second set for one component of one submission: the course's secret
    seed mixed with a digest of the component's own files as staged (`files`, relative to `staged`; a
    missing one counts as missing). A resubmission that changes the component draws another second set,
    which no earlier report of its own could have shown; the same files draw the same one, so a regrade
    reproduces the grade, and an attribution run or the other half of a split grading draws what the
    first run drew. Only its own files: fixing a bug in another component never changes what this
    one's checks draw, so it never finds this one a bug it did not find before (fixing a bug never
    lowers a grade)."""
    digest = hashlib.sha256(f"{hidden_seed}\0".encode())
    for name in sorted(files):
        path = staged / name
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        digest.update(f"{name}\0{-1 if data is None else len(data)}\0".encode() + (data or b""))
    return int.from_bytes(digest.digest()[:8], "big") % 2**62


def second_set(student, check: str) -> random.Random | None:
    """For a check whose inputs are fixed (a schedule's constants, one pair to shift), in the instructor's
    grade: a generator of its second set of inputs, seeded from the course's secret seed and the check's
    name; None in a student's run and in the bug table's runs (no `fresh_seed` there). Run that set
    inside `tagged()`: a failure on it is marked drawn afresh, and shown without its inputs."""
    seed = getattr(student, "fresh_seed", None)
    if seed is None or getattr(student, "reference", None) is None:
        return None
    return random.Random(f"{seed}:{check}")


def run_again(item, hidden_seed: int) -> None:
    """Runs the pytest test `item` again, its draws from `hidden_seed`; Hypothesis draws `EXAMPLES`."""
    global _mix
    function = item.obj
    kept_seed = getattr(function, "_hypothesis_internal_use_seed", None)
    kept = getattr(function, "_hypothesis_internal_use_settings", None)
    mix = hidden_seed * 7919 + 1  # not the hidden tier's own seed: its properties draw from that
    try:
        if hasattr(function, "hypothesis"):
            hypothesis.seed(mix)(function)
            if kept is not None:
                function._hypothesis_internal_use_settings = hypothesis.settings(
                    kept, max_examples=min(kept.max_examples, EXAMPLES))
        _mix = mix
        with tagged():
            function(**{name: item.funcargs[name] for name in item._fixtureinfo.argnames})
    finally:
        _mix = 0
        if hasattr(function, "hypothesis"):
            function._hypothesis_internal_use_seed = kept_seed
            if kept is not None:
                function._hypothesis_internal_use_settings = kept
