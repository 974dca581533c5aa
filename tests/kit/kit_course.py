"""The kit's course.toml, loaded once, for the test modules of several tiers that read it."""

from grader import load_course
from tests.kit.conftest import ROOT

COURSE = load_course(ROOT / "course.toml")
