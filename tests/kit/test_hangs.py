"""A hang costs about one timeout per component, not one per check, and no checks the
component passes on inputs that do not make it hang."""

from tests.kit.conftest import assert_loses_only_in, grade_json, mutant

PE = "assignment1/positional_encoding.py"
MHA = "assignment2/multi_head_attention.py"
EMB = "assignment1/embedding.py"
FULL = "no answer within 3 s while"  # the course's timeout_seconds (3 in the quick course)


def checks_of(report: dict, component: str) -> list[dict]:
    return next(c for c in report["components"] if c["name"] == component)["tests"]


def test_a_component_that_always_hangs_waits_the_full_timeout_once(tmp_path, quick_course):
    forward = "        B, T_q, _ = q.shape\n"
    tree = mutant(tmp_path, {MHA: [(forward, "        while True:\n            pass\n" + forward)]})
    report = grade_json(tree, "assignment2", course=quick_course)
    assert_loses_only_in(report, "MultiHeadAttention")
    hung = [t["message"] for t in checks_of(report, "MultiHeadAttention") if t["status"] == "timeout"]
    assert len(hung) >= 5, hung
    assert sum(FULL in m for m in hung) == 1, hung
    shortened = "shortened from 3 s (course.toml [limits] timeout_seconds = 3): MultiHeadAttention hung in an earlier"
    assert all(FULL in m or shortened in m for m in hung), hung


def test_a_component_that_hangs_on_some_inputs_keeps_the_checks_it_passes(tmp_path, quick_course):
    # hangs in train mode only: its eval-mode checks, before and after the first hang, still pass
    forward = "        T = x.size(1)\n"
    tree = mutant(tmp_path, {PE: [(forward, "        while self.training:\n            pass\n" + forward)]})
    report = grade_json(tree, "assignment1", course=quick_course)
    assert_loses_only_in(report, "PositionalEncoding")
    statuses = [t["status"] for t in checks_of(report, "PositionalEncoding")]
    assert set(statuses) == {"passed", "timeout"}, statuses
    first = statuses.index("timeout")
    assert "passed" in statuses[first:], statuses  # a pass after the first hang


def test_a_composite_that_hung_through_its_part_gets_the_full_deadline_on_the_reference_part(tmp_path,
                                                                                               quick_course):
    """PositionalEncoding hangs in train mode; TransformerEmbedding, correct but slow in train mode
    (1.5 s a call, within the 3 s timeout), hangs through it. Run again on the reference's
    PositionalEncoding (attribution), its checks must pass: the hang was its part's, so that run
    does not inherit the short deadline of the hung component."""
    forward = "        T = x.size(1)\n"
    slow = "        return self.position(self.token(x))  # (B, T, d_model)\n"
    sleep = "        if self.training:\n            __import__('time').sleep(1.5)\n"
    tree = mutant(tmp_path, {PE: [(forward, "        while self.training:\n            pass\n" + forward)],
                             EMB: [(slow, sleep + slow)]})
    report = grade_json(tree, "assignment1", course=quick_course)
    assert_loses_only_in(report, "PositionalEncoding")
    failing = [t for t in checks_of(report, "TransformerEmbedding") if t["status"] != "passed"]
    assert failing and all(t.get("excused_by") == ["PositionalEncoding"] for t in failing), failing


def test_a_component_slow_in_every_answer_stops_at_its_time_budget(tmp_path, quick_course):
    """Each forward sleeps 0.4 s, well inside the 3 s deadline of a request: only the component's time
    budget (component_seconds) stops it. Its later checks time out without running; the other
    components keep every point."""
    course = tmp_path / "course.toml"
    course.write_text(quick_course.read_text().replace("component_seconds = 300", "component_seconds = 4"))
    ln = "assignment1/layer_norm.py"
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    tree = mutant(tmp_path, {ln: [(forward, forward + "        __import__('time').sleep(0.4)\n")]})
    report = grade_json(tree, "assignment1", course=course)
    assert_loses_only_in(report, "LayerNorm")
    timed_out = [t["message"] for t in checks_of(report, "LayerNorm") if t["status"] == "timeout"]
    budget = "course.toml [limits] component_seconds = 4"
    assert timed_out and all(budget in m for m in timed_out), timed_out
    assert any(m.startswith("not run: LayerNorm has used its time budget") for m in timed_out), timed_out
