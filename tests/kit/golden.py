"""The golden comparison (issue 46, behaviour unchanged): the same grades, reports and JSON before and after.

A fixed list of submissions (ENTRIES, each a name, the assignment graded and patches applied to
solutions/ as tests/kit/conftest.mutant applies them): the solutions of assignments 1-4, every
entry of the course's table of classic bugs (tests/grading/bugs.py, as grader/authoring/expected.py
applies them), the kit's mutant tables (tests/kit/mutants.py: assignment4's bugs, correct variants,
device and half-precision bugs, the survivors and the accepted variants) and the part-and-composite
pairs of tests/kit/sandbox/test_attribution.py. The held-out set (tests/kit/classic.py's entries) has its own
record, tests/kit/heldout_record.json.

Per entry the record keeps the JSON report (`grade --json`) and the terminal report at 100
columns, without what a run or its machine decides: durations, the submission's path, the isolation
tier (the same submission grades the same in each), the temporary folders that messages name, and
the performance feedback's measured seconds, bytes and ratios (found by grading entries twice and
diffing).

    python -m tests.kit.golden            # grade the whole list, rewrite golden_record.json (~50 min; or in
                                          # parts: --shard K/N --out PART, merged by hand)
    python -m tests.kit.golden --check    # grade the whole list, compare with the record; exit 1 on a difference
    python -m tests.kit.golden --check NAME...   # those entries only

tests/kit/sandbox/test_golden.py compares SUBSET, which covers every component of every assignment; the
record holds SUBSET (`python -m tests.kit.golden --out tests/kit/golden_record.json $(SUBSET)`, minutes).
The whole list was graded at 50ff439, before the pipeline's restructuring (49 min): the restructuring
commit against its parent changed nothing on it; what this round's other issues changed on purpose
(the examples' data, the failure's pattern, the shrunk failure shown) is in the record since.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import pytest

RECORD = Path(__file__).with_name("golden_record.json")
WIDTH = 100
PLACEHOLDER = "<submission>"
# the tier this machine grades in (namespaces, seccomp, ...): the same submission grades the same in each
ISOLATION = "<isolation>"
# a folder a grading made and removed: the sandbox's staging folder and the like, named in messages
_TEMP = re.compile(r"/tmp/[^\s'\"():,]*")


class Entry(NamedTuple):
    assignment: str
    patches: dict[str, list[tuple[str, str]]]


def _home(patches: dict) -> str:
    return next(iter(patches)).partition("/")[0]


def entries() -> dict[str, Entry]:
    """The whole list, by name, in a fixed order."""
    from tests.grading.bugs import BUGS
    from tests.kit import mutants
    from tests.kit.sandbox.test_attribution import ALL_BUGS, HOME, PAIRS

    found = {f"solutions/{a}": Entry(a, {}) for a in ("assignment1", "assignment2", "assignment3", "assignment4")}
    found.update({f"bugs/{n}": Entry(b.assignment, b.patches) for n, b in BUGS.items()})
    table = {**mutants.ASSIGNMENT4_BUGS, **mutants.DEVICE_BUGS, **mutants.HALF_PRECISION_BUGS,
             **{n: b for cases in mutants.SURVIVORS.values() for n, b in cases.items()}}
    found.update({f"mutants/{n}": Entry(b.assignment, b.patches) for n, b in table.items() if n not in BUGS})
    variants = {**mutants.VARIANTS, **mutants.DEVICE_VARIANTS}
    found.update({f"variants/{n}": Entry(_home(p), p) for n, p in variants.items()})
    found.update({f"variants/{n}": Entry(a, p) for n, (a, p) in mutants.ACCEPTED_VARIANTS.items()})
    for param in PAIRS:
        part, composite = param.values
        found[f"pairs/{part}+{composite}"] = Entry(HOME[ALL_BUGS[composite].component],
                                                   mutants.patches(part, composite))
    return found


# What tests/kit/sandbox/test_golden.py grades: the solutions, one table bug per component of every assignment
# (assignments 1-3: the first of its component in tests/grading/bugs.py; assignment4: the quickest of
# its component to grade, measured over the whole list, since its training checks cost up to a
# minute a tree) and one part-and-composite pair. Each of these trees is graded by another kit test
# too (test_assignmentN, the solutions' fixture, test_attribution), whose report the cache shares.
SUBSET: tuple[str, ...] = (
    "solutions/assignment1", "solutions/assignment2", "solutions/assignment3", "solutions/assignment4",
    # assignment1
    "bugs/layer_norm_unbiased_variance", "bugs/feed_forward_no_relu", "bugs/positional_encoding_sin_cos_swapped",
    "bugs/token_embedding_no_scale", "bugs/transformer_embedding_no_position",
    # assignment2
    "bugs/softmax_over_the_wrong_dim", "bugs/pad_mask_polarity_inverted", "bugs/causal_mask_off_by_one",
    "bugs/tgt_mask_or_instead_of_and", "bugs/heads_split_with_the_wrong_view",
    # assignment3
    "bugs/post_norm_wired_as_pre_norm", "bugs/encoder_layer_skips_the_mask", "bugs/encoder_missing_final_norm",
    "bugs/cross_attention_fed_the_decoder_input_as_keys", "bugs/decoder_final_norm_always",
    "bugs/forward_without_padding_mask",
    # assignment4
    "bugs/vocab_sos_before_pad", "bugs/collate_pads_with_zero", "bugs/label_smoothing_sums_the_tokens",
    "bugs/noam_lr_no_step_check", "bugs/train_epoch_returns_the_total_loss",
    "bugs/greedy_decode_stops_at_the_first_eos",
    # attribution: a part's bug and its composite's
    "pairs/causal_mask_off_by_one+tgt_mask_or_instead_of_and",
)


# the performance feedback's measurements (informational in the kit's course): seconds, bytes and ratios
_MEASURED = re.compile(r"(seconds|bytes|_vs_torch|_vs_reference)$")


def normalise_json(data: Any, *, measured: bool = False) -> Any:
    """The JSON without what a run or its machine decides: durations, the submission's path, the
    isolation tier, temporary folders, and
    under `performance` what was measured (its fields are kept, their values not)."""
    if isinstance(data, dict):
        return {k: PLACEHOLDER if k == "submission" else
                ISOLATION if k in ("isolation", "isolation_detail") and v else
                "<measured>" if measured and _MEASURED.search(k) and isinstance(v, (int, float)) else
                normalise_json(v, measured=measured or k == "performance")
                for k, v in data.items() if k != "duration_seconds"}
    if isinstance(data, list):
        return [normalise_json(v, measured=measured) for v in data]
    if isinstance(data, str):
        return _TEMP.sub("<tmp>", data)
    return data


def rendered(report) -> str:
    """The terminal report at WIDTH columns, as `grade` prints it, with the run's path and time fixed."""
    import io

    from rich.console import Console

    from grader.render import report as render

    fixed = dataclasses.replace(report, submission=Path(PLACEHOLDER), duration=0.0,
                                isolation=ISOLATION if report.isolation else "", isolation_detail="")
    out = io.StringIO()
    render.render(fixed, Console(file=out, width=WIDTH, no_color=True, force_terminal=False))
    return _TEMP.sub("<tmp>", out.getvalue())


def grade(name: str, entry: Entry, *, cached: bool) -> dict:
    """One entry's record: {"json": ..., "text": ...}."""
    from tests.kit.conftest import as_json, grade_report, mutant

    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        report = grade_report(mutant(Path(tmp), entry.patches), entry.assignment, cached=cached)
    return {"assignment": entry.assignment, "json": normalise_json(as_json(report)), "text": rendered(report)}


def grade_all(names: list[str], *, cached: bool = False, log=None) -> dict[str, dict]:
    import time

    table, out = entries(), {}
    for name in names:
        start = time.monotonic()
        out[name] = grade(name, table[name], cached=cached)
        if log is not None:
            print(f"{name:70s} {time.monotonic() - start:6.1f} s", file=log, flush=True)
    return out


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in ("id", "name", "component", "bug"):
            if isinstance(item.get(key), str):
                return item[key]
    return str(index)


def _walk(before: Any, after: Any, where: str, out: list[str]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            if key not in after:
                out.append(f"{where}.{key}: removed (was {before[key]!r:.200})")
            elif key not in before:
                out.append(f"{where}.{key}: added ({after[key]!r:.200})")
            else:
                _walk(before[key], after[key], f"{where}.{key}", out)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            _walk(b, a, f"{where}[{_label(b, i)}]", out)
    elif not _alike(before, after):
        out.append(f"{where}: {before!r:.300} -> {after!r:.300}")


# Float noise: another CPU's kernels (AVX-512 against AVX2) round float32 otherwise, in the last bits of an
# output and so of an error (a difference of two outputs of order 1: 2e-6 seen through a Transformer), a
# printed value's last digit, and pick another of two tied elements as the largest error. What a grade says
# is the same; a number that moved by more, or a count, is a change.
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_LARGEST = re.compile(r"largest error at index \[[\d, ]*\]: expected ([^,\s]+), got ([^,\s]+)")
REL = ABS = 1e-5


def _alike(before: Any, after: Any) -> bool:
    """The same, but for float noise (above): floats within REL or ABS; in text, the same words and
    integers, decimals within REL or ABS or one unit of their last printed digit, the largest error's
    index aside."""
    if type(before) is float and type(after) is float:
        return math.isclose(before, after, rel_tol=REL, abs_tol=ABS)
    if not (isinstance(before, str) and isinstance(after, str)) or before == after:
        return before == after
    before, after = (" ".join(_LARGEST.sub(_error, t).split()) for t in (before, after))
    words = (_NUMBER.split(before), _NUMBER.split(after))
    numbers = (_NUMBER.findall(before), _NUMBER.findall(after))
    return words[0] == words[1] and len(numbers[0]) == len(numbers[1]) and all(
        _close(b, a) for b, a in zip(*numbers, strict=True))


def _error(found: re.Match) -> str:
    try:
        return f"largest error {abs(float(found[1]) - float(found[2])):.6g}"
    except ValueError:  # nan, inf: as they are
        return found[0]


def _close(before: str, after: str) -> bool:
    if before == after:
        return True
    if not any(c in before + after for c in ".eE"):  # integers: counts, indices, sizes
        return False
    b, a = float(before), float(after)
    places = min(len(t.partition(".")[2].partition("e")[0].partition("E")[0]) for t in (before, after))
    exponent = max(int(t.lower().partition("e")[2] or 0) for t in (before, after))
    return math.isclose(b, a, rel_tol=REL, abs_tol=ABS) or abs(b - a) <= 1.01 * 10.0 ** (exponent - places)


def differences(expected: dict[str, dict], got: dict[str, dict], *, text_lines: int = 40) -> list[str]:
    """Readable differences of `got` from `expected` (the entries of `got`): which submission, which
    field of the JSON, which lines of the terminal report."""
    out: list[str] = []
    for name in got:
        if name not in expected:
            out.append(f"{name}: not in the record")
            continue
        found: list[str] = []
        _walk(expected[name]["json"], got[name]["json"], "json", found)
        out += [f"{name}: {line}" for line in found]
        recorded, now = expected[name]["text"].splitlines(), got[name]["text"].splitlines()
        if len(recorded) == len(now) and all(map(_alike, recorded, now)):
            continue
        text = list(difflib.unified_diff(recorded, now, "recorded", "now", n=1, lineterm=""))
        if text:
            out.append(f"{name}: text:\n" + "\n".join(text[:text_lines])
                       + (f"\n... ({len(text) - text_lines} more lines)" if len(text) > text_lines else ""))
    return out


def load() -> dict[str, dict]:
    return json.loads(RECORD.read_text())


@pytest.fixture(scope="module", name="record")
def record_fixture() -> dict:
    """The record, read once per module: the fixture `record` of the golden tests (imported into their modules)."""
    return load()


def write(record: dict[str, dict], path: Path = RECORD) -> None:
    path.write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    """Grade the list (or the names given) and rewrite the record, or, with --check, compare with it."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.kit.golden", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the record instead of rewriting it")
    parser.add_argument("--shard", default="0/1", help="K/N: grade every Nth entry from the Kth (0-based)")
    parser.add_argument("--out", type=Path, default=RECORD, help="where to write the record (default: %(default)s)")
    parser.add_argument("names", nargs="*", help="entries to grade (default: all)")
    args = parser.parse_args(argv)
    table = entries()
    unknown = [n for n in args.names if n not in table]
    if unknown:
        parser.error(f"no such entry: {unknown[0]!r}")
    k, n = (int(x) for x in args.shard.split("/"))
    names = (args.names or list(table))[k::n]
    got = grade_all(names, log=sys.stderr)
    if args.check:
        found = differences(load(), got)
        print("\n".join(found) if found else f"{len(got)} entries: the same as the record")
        return 1 if found else 0
    record = json.loads(args.out.read_text()) if args.out.exists() and (args.names or n > 1) else {}
    record.update(got)
    write({name: record[name] for name in table if name in record}, args.out)
    print(f"{len(got)} entries graded; {args.out}: {len(record)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
