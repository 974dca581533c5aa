"""`grade assignmentN --only CHECK[,CHECK...]`: grade a few checks of an assignment, and nothing else.

The assignment is narrowed to the components that hold the checks asked for, each keeping only
those checks: the grading runs them alone, and the report and the JSON list them alone (a
component's other checks are neither run nor reported as failed). Its score counts those checks
only, so the report says that it is no grade.
"""

import difflib
from dataclasses import replace

from grader import words
from grader.course import Assignment
from grader.course_table import ConfigError
from grader.findings import Note, Noted


def check_ids(spec: Assignment) -> list[str]:
    """Every check of the assignment, in course.toml's order."""
    return [chk.id for comp in spec.components for chk in comp.checks]


def unknown(name: str, spec: Assignment, *, option: str = "--only", among: list[str] | None = None) -> ConfigError:
    """The one-line error for a check id the assignment does not have, naming the closest ids."""
    ids = check_ids(spec) if among is None else among
    close = difflib.get_close_matches(name, ids, n=3, cutoff=0.5)
    return ConfigError(words.no_check(option, spec.name, name, close, _prefixes(ids)))


def _prefixes(ids: list[str]) -> list[str]:
    # nothing close: the first word of each component's checks ("sdpa_", "mha_", ...) shows what exists
    return list(dict.fromkeys(i.split("_")[0] + "_" for i in ids))[:6]


def parse(text: str, spec: Assignment) -> frozenset[str]:
    """`--only`'s value, "a,b,c", as check ids of `spec`; an unknown or missing id is a ConfigError."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError(f"--only: expected check ids separated by commas, got {text!r}")
    ids = set(check_ids(spec))
    for name in names:
        if name not in ids:
            raise unknown(name, spec)
    return frozenset(names)


def narrow(spec: Assignment, only: frozenset[str]) -> Assignment:
    """`spec` with only the checks in `only`, and only the components that hold one of them."""
    components = []
    for comp in spec.components:
        checks = tuple(chk for chk in comp.checks if chk.id in only)
        if checks:
            components.append(replace(comp, checks=checks,
                                      isolated=tuple(i for i in comp.isolated if i in only)))
    return replace(spec, components=tuple(components))


def note(only: frozenset[str], spec: Assignment) -> Note:
    """The report's note on a narrowed grading: the checks it ran, in the assignment's order."""
    return Note(Noted.ONLY, names=tuple(i for i in check_ids(spec) if i in only))
