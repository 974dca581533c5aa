"""`grade adequacy`'s rule, on the kit's own course: every public check catches a bug of the table, as
bugs.json records it (read, not graded again), or bugs.py's UNCAUGHT states why (the matrix and its flags,
graded: tests/kit/sandbox/test_adequacy.py)."""

import json

from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT


def test_every_public_check_of_the_kits_course_catches_a_bug_of_the_table_or_says_why():
    # what `grade adequacy` flags, read from bugs.json (`grade expected`: each entry's failing public
    # checks, its component's only, as adequacy grades them) rather than graded again; the hidden tier is
    # not recorded there: `grade adequacy --assignment assignmentN` shows its checks
    import fnmatch

    from grader.authoring.adequacy import uncaught_reasons
    from grader.course import load

    course = load(ROOT / "course.toml")
    table = json.loads((ROOT / "tests" / "grading" / "public" / "expected" / "bugs.json").read_text())
    assert set(table) == set(BUGS), "bugs.json is stale: run grade expected"
    caught = {check for bug in table.values() for check in bug["failing"]}
    reasons = uncaught_reasons(course)
    public = [chk.id for spec in course.assignments.values() for comp in spec.components for chk in comp.checks
              if chk.tier == "public"]
    unexplained = [c for c in public if c not in caught and not any(fnmatch.fnmatchcase(c, p) for p in reasons)]
    assert unexplained == [], f"checks that catch no bug, for no reason bugs.py's UNCAUGHT states: {unexplained}"
    # and every stated reason still applies to a check that catches nothing
    assert all(any(fnmatch.fnmatchcase(c, p) for c in public if c not in caught) for p in reasons), reasons
