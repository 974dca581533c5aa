"""course.toml loading (grader.course): the kit's course as parsed, and every bad key or value refused in
one line that names the file, the key and the value."""

import copy
import tempfile
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given
from hypothesis import strategies as st

from grader.course import Course, load
from grader.course_table import ConfigError
from grader.limits import Limits
from tests.kit import strategies as s
from tests.kit.conftest import ROOT

DATA = tomllib.loads((ROOT / "course.toml").read_text())
LIMITS = [name for name, value in vars(Limits()).items() if isinstance(value, int | float)]
COMPONENT_KEYS = [(a, c) for a in DATA if a.startswith("assignment") for c in DATA[a] if isinstance(DATA[a][c], dict)]


def loaded(data: dict) -> Course | str:
    """The course `data` makes, or the ConfigError's message."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "course.toml"
        path.write_text(tomli_w.dumps(data))
        try:
            return load(path)
        except ConfigError as e:
            return str(e)


def edited(**where) -> dict:
    data = copy.deepcopy(DATA)
    for dotted, value in where.items():
        *tables, key = dotted.split("__")
        table = data
        for name in tables:
            table = table.setdefault(name, {})
        table[key] = value
    return data


def test_the_kits_course_loads_every_assignment_and_component_in_order_with_parts_listed_earlier():
    course = loaded(DATA)
    assert [a.name for a in course.assignments.values()] == [a for a in DATA if a.startswith("assignment")]
    seen: set[str] = set()
    for a in course.assignments.values():
        assert [c.name for c in a.components] == [c for x, c in COMPONENT_KEYS if x == a.name]
        for c in a.components:
            assert set(c.depends) <= seen, c.name
            assert set(c.isolated) <= {chk.id for chk in c.checks}
            seen.add(c.name)
    assert course.assignment("assignment3").max_score == sum(c.points for c in course.assignment("assignment3")
                                                            .components)


@s.KIT
@given(st.sampled_from(LIMITS), st.sampled_from([-1, 0, -2.5, "ten", [3], True]))
def test_a_bad_limit_is_refused_naming_the_file_the_key_and_the_value(name, value):
    said = loaded(edited(**{f"limits__{name}": value}))
    assert isinstance(said, str), f"limits.{name} = {value!r} was accepted"
    assert said.startswith("course.toml: ") and f"limits.{name}" in said and repr(value) in said
    assert "\n" not in said


@s.KIT
@given(st.sampled_from(["course", "limits", "hypothesis", *[f"{a}__{c}" for a, c in COMPONENT_KEYS]]),
       st.from_regex(r"[a-z]{3,8}_key", fullmatch=True))
def test_an_unknown_key_is_refused_naming_it_and_its_value(table, key):
    said = loaded(edited(**{f"{table}__{key}": 7}))
    assert isinstance(said, str) and "unknown key" in said and key in said and "7" in said


@s.KIT
@given(st.sampled_from([(a, c) for a, c in COMPONENT_KEYS if DATA[a][c].get("depends")]))
def test_a_component_that_depends_on_one_not_listed_before_it_is_refused(where):
    a, c = where
    later = [x for y, x in COMPONENT_KEYS if y == a][-1]
    for bad in ("NoSuchPart", c, *([later] if later != c else [])):  # itself: it would excuse its own failures
        said = loaded(edited(**{f"{a}__{c}__depends": [bad]}))
        assert isinstance(said, str) and f"{a}.{c}.depends" in said and repr(bad) in said


@s.KIT
@given(st.sampled_from(COMPONENT_KEYS))
def test_a_check_listed_twice_in_a_component_is_refused(where):
    a, c = where
    public = DATA[a][c]["public"]
    said = loaded(edited(**{f"{a}__{c}__public": [*public, public[0]]}))
    assert isinstance(said, str) and "listed twice" in said and repr(public[0]) in said


def test_a_missing_or_unreadable_course_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load(tmp_path / "course.toml")
    (tmp_path / "course.toml").write_text("[course\nname = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(tmp_path / "course.toml")
    with pytest.raises(ConfigError, match="unknown assignment 'assignment9'"):
        s.COURSE.assignment("assignment9")


def test_the_policy_on_flags_is_hold_or_count_and_anything_else_is_refused_naming_it():
    without = {k: v for k, v in DATA.items() if k != "policy"}  # the default: a flag is a score (issue 51)
    assert "policy" in DATA and loaded(without).flagged == "hold" and s.COURSE.flagged == "hold"
    assert loaded(edited(policy__flagged="hold")).flagged == "hold"
    assert loaded(edited(policy__flagged="count")).flagged == "count"
    said = loaded(edited(policy__flagged="zero"))
    assert isinstance(said, str) and "policy.flagged" in said and "'zero'" in said and '"hold"' in said
    said = loaded(edited(policy__other=1))
    assert isinstance(said, str) and "unknown key" in said and "other" in said
