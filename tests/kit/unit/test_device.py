"""The performance feedback's points: they count only where course.toml gives some, and a component timed
as a kind the grader does not know is refused (device placement and the GPU tier:
tests/kit/sandbox/test_device.py).
"""

import re
from pathlib import Path

import pytest

from grader import load_course
from grader.course_table import ConfigError
from grader.grading import performance
from grader.results import Outcome, Report
from tests.kit.conftest import ROOT


class Timed:
    """A stand-in for the submission's process that reports fixed times (as a forging one could)."""

    def __init__(self, seconds: dict[str, float]):
        self.seconds = seconds

    def begin_check(self):
        pass

    def reset(self):
        pass

    def profile(self, kind, target, device, repeat, shape):
        return {"student": {"seconds": self.seconds[kind], "memory_bytes": 30}, "torch": {"seconds": 1.0,
                                                                                         "memory_bytes": 10}}


def test_performance_points_count_only_where_course_toml_gives_some(tmp_path):
    text = (ROOT / "course.toml").read_text().replace("points = 0\nmax_ratio = 4.0", "points = 6\nmax_ratio = 2.0")
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    (tmp_path / "course.toml").write_text(text)
    course = load_course(tmp_path / "course.toml")
    spec = course.assignment("assignment2")
    ran = {chk.id: Outcome("passed") for comp in spec.components for chk in comp.checks}
    perf = performance.measure(course, spec, Timed({"attention": 1.5, "multi_head_attention": 3.0}), ran, None, False)
    assert perf is not None and not perf.informational and (perf.score, perf.max_score) == (3.0, 6)  # one of two
    assert [e.time_vs_torch for e in perf.entries] == [1.5, 3.0]
    assert [e.memory_vs_torch for e in perf.entries] == [3.0, 3.0]
    report = Report("assignment2", "", Path("/sub"), [], 0.0, performance=perf)
    assert (report.score, report.max_score) == (3.0, 6)
    bad = text.replace('EncoderLayer = "encoder_layer"', 'EncoderLayer = "convolution"')
    (tmp_path / "course.toml").write_text(bad)
    with pytest.raises(ConfigError, match="performance.components.EncoderLayer"):
        load_course(tmp_path / "course.toml")
