"""How good the checks are: every entry of the course's table of classic bugs (`<suites>/bugs.py`) is
graded with both tiers of its component's checks, and the matrix says which checks catch which bugs.

Flags, which the text report leads with:
- `catches_nothing`: a check that fails for no bug of the table (it may guard what no entry has,
  or it may be unable to fail: either way worth a look, or a bug entry), unless bugs.py's
  `UNCAUGHT` states why (`catches_nothing_for_a_stated_reason`: check id -> the reason);
- `no_hidden_check`: a bug only the public tier catches (a student who fits the public tier's
  fixed examples is not caught by the instructor's grade);
- `same_public_signature`: two bugs of one component whose failing public checks say the same
  (grader.judging.diagnosis cannot tell them apart, so it names neither).
`named`: grader.judging.diagnosis names the bug as itself from the stored bugs.json (`grade expected`).
"""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

from grader.authoring.expected import bug_tree, load_bugs
from grader.course import Course
from grader.course_table import ConfigError
from grader.results import Status, Tier

TIERS = (Tier.PUBLIC, Tier.HIDDEN)  # the GPU tier's checks need a GPU: left out


def matrix(course: Course, assignment: str) -> dict:
    """{"checks", "bugs", "flags"} for `assignment` (see the module's docstring)."""
    from grader.grading.suites import one_intra_op_thread, pytest_run
    from grader.grading.warm import Grader
    from grader.judging import diagnosis
    from grader.suite.remote import Submission

    spec = course.assignment(assignment)
    table = {name: bug for name, bug in load_bugs(course).items()
             if next(iter(bug.patches)).partition("/")[0] == assignment}
    if not course.reference.is_dir():
        raise ConfigError(f"the reference ({course.reference}) is not here: adequacy grades it with each bug")
    stored = diagnosis.load(course)
    checks: dict[str, dict] = {chk.id: {"tier": chk.tier, "component": comp.name, "catches": []}
              for comp in spec.components for chk in comp.checks if chk.tier in TIERS}
    bugs: dict[str, dict] = {}
    signatures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="grade-adequacy-") as tmp, Grader(course) as grader:
        for name, bug in table.items():
            comp = next((c for c in spec.components if c.name == bug.component), None)
            if comp is None:
                raise ConfigError(f"bugs.py: {name}: no component {bug.component!r} in {assignment}")
            tree = bug_tree(course, bug.patches, Path(tmp) / name, name)
            sandbox = grader.sandbox(assignment=spec, submission=tree)
            try:
                with one_intra_op_thread():
                    results = pytest_run(course, Submission(sandbox, None, course.reference),
                                         {chk.id: () for chk in comp.checks if chk.tier in TIERS})
            finally:
                sandbox.close()
            caught = [chk for chk in comp.checks if chk.id in results and results[chk.id].status != Status.PASSED]
            for chk in caught:
                checks[chk.id]["catches"].append(name)
            signatures[name] = diagnosis.failing_public(spec, bug.component, results)
            named = [n for n, b in stored.items()
                     if b["component"] == bug.component and b["failing"] == signatures[name]]
            bugs[name] = {"component": bug.component, "public": [c.id for c in caught if c.tier == Tier.PUBLIC],
                          # diagnosis names a bug from its failing public checks: none, no name
                          "hidden": [c.id for c in caught if c.tier == Tier.HIDDEN],
                          "named": bool(signatures[name]) and named == [name]}
    names = list(bugs)
    same = [[a, b] for i, a in enumerate(names) for b in names[i + 1:]
            if bugs[a]["component"] == bugs[b]["component"] and signatures[a] == signatures[b]]
    stated = uncaught_reasons(course)
    why = {c: next((r for pattern, r in stated.items() if fnmatch.fnmatchcase(c, pattern)), "")
           for c, v in checks.items() if not v["catches"]}
    return {"assignment": assignment, "checks": checks, "bugs": bugs,
            "flags": {"catches_nothing": [c for c, r in why.items() if not r],
                      "catches_nothing_for_a_stated_reason": {c: r for c, r in why.items() if r},
                      "no_hidden_check": [b for b, v in bugs.items() if not v["hidden"]],
                      "same_public_signature": same}}


def uncaught_reasons(course: Course) -> dict[str, str]:
    """The bug table's `UNCAUGHT` (optional): check id patterns (fnmatch) -> why a check of theirs is
    expected to catch no entry of the table (it guards what the table's kind of bug cannot break)."""
    from grader.authoring.expected import bugs_module

    return dict(getattr(bugs_module(course), "UNCAUGHT", {}))


def render(found: dict):
    """The report: the flags first, then per component the bugs and the checks that catch each."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    flags = found["flags"]
    n_checks, n_bugs = len(found["checks"]), len(found["bugs"])
    parts: list = [Text.assemble((found["assignment"], "bold"), f": {n_bugs} bugs of the table, {n_checks} "
                                 "checks (public and hidden)")]
    explained = len(flags.get("catches_nothing_for_a_stated_reason", {}))
    lines = [(f"{len(flags['catches_nothing'])} checks catch no bug of the table"
              + (f" ({explained} more for a reason bugs.py states)" if explained else ""), flags["catches_nothing"]),
             (f"{len(flags['no_hidden_check'])} bugs no hidden check catches", flags["no_hidden_check"]),
             (f"{len(flags['same_public_signature'])} pairs of bugs the public checks cannot tell apart",
              [" = ".join(p) for p in flags["same_public_signature"]])]
    for head, items in lines:
        parts.append(Text(head + (":" if items else ""), style="bold" if items else ""))
        parts += [Text(f"  {item}", no_wrap=True, overflow="ellipsis") for item in items]
    table = Table(title="Bugs and the checks that catch them", title_justify="left")
    table.add_column("component", no_wrap=True)
    table.add_column("bug", overflow="fold")
    table.add_column("named", no_wrap=True)
    table.add_column("public", justify="right")
    table.add_column("hidden", justify="right")
    for name, bug in sorted(found["bugs"].items(), key=lambda kv: (kv[1]["component"], kv[0])):
        table.add_row(bug["component"], Text(name), "yes" if bug["named"] else "no",
                      str(len(bug["public"])), str(len(bug["hidden"])))
    parts.append(table)
    return Group(*parts)


def html(found: dict) -> str:
    """The matrix as a self-contained page: a row per check, a column per bug."""
    import jinja2

    template = jinja2.Environment(autoescape=True).from_string(PAGE)
    return template.render(f=found, bugs=sorted(found["bugs"]), checks=found["checks"])


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ f.assignment }}: adequacy of the checks</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}
th,td{border:1px solid #d0d7de;padding:.2em .4em;font-size:.85em}th.bug{writing-mode:vertical-rl}
td.x{background:#4c78a8;color:#fff;text-align:center}.flag{background:#fff8c5}</style></head><body>
<h1>{{ f.assignment }}: which checks catch which bugs</h1>
<p>Checks that catch nothing: {{ f.flags.catches_nothing|join(", ") or "none" }}.</p>
<p>Bugs no hidden check catches: {{ f.flags.no_hidden_check|join(", ") or "none" }}.</p>
<p>Bugs the public checks cannot tell apart:
{% for p in f.flags.same_public_signature %}{{ p|join(" = ") }}{% if not loop.last %}; {% endif %}
{% else %}none{% endfor %}.</p>
<table><tr><th>check</th><th>tier</th>{% for b in bugs %}<th class="bug">{{ b }}</th>{% endfor %}</tr>
{% for id, c in checks.items() %}<tr{% if not c.catches %} class="flag"{% endif %}>
<td>{{ id }}</td><td>{{ c.tier }}</td>
{% for b in bugs %}<td{% if b in c.catches %} class="x">&#x2715;{% else %}>{% endif %}</td>{% endfor %}</tr>
{% endfor %}</table></body></html>
"""
