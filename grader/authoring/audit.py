"""The release's audit: what a student kit must not hold (solution markers, hidden check ids, a fix or
message its `reveal` holds back, code that does a component's job), checked on the written kit.

Apart from grader.authoring.release, which writes the kit and runs this on it, so that the audit
reads as one idea: every reason a kit is refused."""

import functools
import json
import re
from pathlib import Path

from grader.course import Course
from grader.results import Tier


def hidden_ids(course: Course) -> set[str]:
    return {chk.id for a in course.assignments.values() for comp in a.components for chk in comp.checks
            if chk.tier == Tier.HIDDEN}


def audit(out: Path, course: Course) -> list[str]:
    """What must never ship, found under `out`: solution markers, solution files, hidden folders or check ids."""
    from grader.authoring.stubs import BEGIN, END

    hidden = hidden_ids(course)
    hidden_id = re.compile(rb"(?<![A-Za-z0-9_])(?:test_)?(" + b"|".join(re.escape(h.encode()) for h in hidden)
                           + rb")(?![A-Za-z0-9_])") if hidden else None
    solutions = {p.read_bytes() for p in course.reference.rglob("*.py") if BEGIN in p.read_text()}
    problems = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data, rel = path.read_bytes(), path.relative_to(out)
        if Tier.HIDDEN in rel.parts:
            problems.append(f"{rel} is in a hidden folder")
        if any(line.strip() in (BEGIN.encode(), END.encode()) for line in data.splitlines()):
            problems.append(f"{rel} holds a solution marker")
        if data in solutions:
            problems.append(f"{rel} is a copy of a solution file")
        if hidden_id and (m := hidden_id.search(data)):
            problems.append(f"{rel} names the hidden check {m.group(1).decode()}")
    return problems + untold(out, course) + shared_code(out, course)


def untold(out: Path, course: Course) -> list[str]:
    """What the instructor's [feedback] reveal does not show of the bug table, found in the kit's data
    files (its JSON, README.md and course.toml, which `grade release` writes): a fix below "fix", a bug's
    message or name at "check". The stubs and the public checks are the instructor's own words and may say
    what a fix says (a docstring's formula, a hint); the table is what the level holds back."""
    from grader.judging import diagnosis
    from grader.reveal import Reveal

    table, level = diagnosis.load(course), Reveal(getattr(course, "reveal", Reveal.FIX))
    texts, names = {}, {}
    for name, entry in table.items():
        if level is not Reveal.FIX and entry.get("fix"):
            texts[str(entry["fix"])] = f"the fix of {name}"
        if level is Reveal.CHECK:
            texts[str(entry.get("message", ""))] = f"the message of {name}"
            names[name] = f"the name of {name}"
    texts.pop("", None)
    problems = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and (p.suffix == ".json" or p.name in
                                                                        ("README.md", "course.toml"))):
        rel, said = path.relative_to(out), _strings(path)
        found = sorted({what for text, what in texts.items() if any(text in s for s in said)}
                       | {what for name, what in names.items() if name in said})
        if found:
            problems.append(f"{rel} holds {found[0]}, which [feedback] reveal = \"{level}\" does not show "
                            f"({len(found)} such)")
    return problems


def shared_code(out: Path, course: Course) -> list[str]:
    """Shipped Python files outside assignments/ that share code with a solution beyond what its stub
    holds, by the kit's own measure (grader.batch.similarity's winnowed fingerprints, names replaced):
    a stretch of at least similarity.MIN_MATCH tokens in common, the least that lists a pair of students.
    A helper that does a component's job (the greedy decoding the kit once shipped) is found; a formula in
    a check, a line that the contract's names dictate, is not."""
    from grader.batch import similarity

    if why := similarity.available():
        return [f"the shipped code cannot be compared with the solutions: {why}"]
    stubs: set[int] = set()
    stub_texts: set[bytes] = set()  # a release ships them under assignments/, nbgrader under source/<name>/
    for path in course.assignments_dir.rglob("*.py"):
        stubs |= _fingerprint(path.name, path.read_text(errors="replace")).hashes
        stub_texts.add(path.read_bytes())
    solutions = {path: _fingerprint(path.name, path.read_text(errors="replace"))
                 for path in sorted(course.reference.rglob("*.py")) if "__pycache__" not in path.parts}
    problems = []
    for path in sorted(out.rglob("*.py")):
        rel = path.relative_to(out)
        if path.read_bytes() in stub_texts:
            continue
        mine = _fingerprint(path.name, path.read_text(errors="replace"))
        for solution, theirs in solutions.items():
            shared = (mine.hashes & theirs.hashes) - stubs
            tokens = len({i for h in shared for start in mine.hash_idx[h] for i in range(start, start + mine.k)})
            if tokens >= similarity.MIN_MATCH:
                problems.append(f"{rel} shares {tokens} tokens of code with the solution "
                                f"{solution.relative_to(course.reference)} (beyond its stub)")
    return problems


@functools.lru_cache(maxsize=1024)
def _fingerprint(name: str, text: str):
    """similarity.fingerprint, kept: a kit's audits (each reveal level's, `grade release`'s after
    writing) fingerprint the same few hundred files again, and tokenising is most of an audit's time."""
    from grader.batch import similarity

    return similarity.fingerprint(name, text)


def _strings(path: Path) -> set[str]:
    """The strings of a JSON file (its keys too), as they read back; another file's text, whole."""
    text = path.read_text(errors="replace")
    if path.suffix != ".json":
        return {text}
    try:
        stack = [json.loads(text)]
    except ValueError:
        return {text}
    found: set[str] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.update(map(str, value))
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            found.add(value)
    return found


# generated files ----------------------------------------------------------------------------
