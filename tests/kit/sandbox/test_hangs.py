"""A hang costs about one timeout, not one per check or per component built on the part that
hangs, and no checks the component passes on inputs that do not make it hang; its report says
where the code was."""

from tests.kit.conftest import ROOT, assert_loses_only_in, grade_json, mutant

PE = "assignment1/positional_encoding.py"
MHA = "assignment2/multi_head_attention.py"
EMB = "assignment1/embedding.py"
MASKS = "assignment2/masks.py"
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
    # after the full wait, shorter ones; on a machine slow enough to spend the component's budget
    # (6 x 3 s) first, waits as long as what was left of it, then "not run": never a second full wait
    shorter = ("shortened from 3 s (", "MultiHeadAttention hung in an earlier check")
    budget = "course.toml [limits] component_seconds, unset: 6 x timeout_seconds = 18"
    assert all(FULL in m or all(s in m for s in shorter) or budget in m for m in hung), hung
    # where the code was, taken from the worker before it was killed: the loop's line, in the student's file
    line = (ROOT / "solutions" / MHA).read_text().splitlines().index(forward.rstrip("\n")) + 1
    loop = {f"{MHA}:{line} in forward: while True:", f"{MHA}:{line + 1} in forward: pass"}  # either line of it
    timeouts = [t for t in checks_of(report, "MultiHeadAttention")
                if t["status"] == "timeout" and t["message"].startswith("no answer within")]
    assert all(t["where"].splitlines()[-1] in loop for t in timeouts), timeouts
    assert all(t["message"].endswith("it was at " + t["where"].splitlines()[-1].partition(": ")[0])
               for t in timeouts), timeouts


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
    course.write_text(quick_course.read_text().replace("[limits]\n", "[limits]\ncomponent_seconds = 4\n", 1))
    ln = "assignment1/layer_norm.py"
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    tree = mutant(tmp_path, {ln: [(forward, forward + "        __import__('time').sleep(0.4)\n")]})
    report = grade_json(tree, "assignment1", course=course)
    assert_loses_only_in(report, "LayerNorm")
    timed_out = [t["message"] for t in checks_of(report, "LayerNorm") if t["status"] == "timeout"]
    budget = "course.toml [limits] component_seconds = 4"
    assert timed_out and all(budget in m for m in timed_out), timed_out
    assert any(m.startswith("not run: LayerNorm has used its time budget") for m in timed_out), timed_out


def test_answers_just_under_the_deadline_hold_a_component_for_a_few_deadlines_by_default(tmp_path, quick_course):
    """Issue 51: with component_seconds unset (the kit's course), a LayerNorm whose every answer takes 2 s
    of the quick course's 3 s deadline is stopped by a budget of 6 deadlines (18 s), not the 300 s that a
    component had before (it held its grading for minutes); the other components keep every point."""
    assert "\ncomponent_seconds" not in quick_course.read_text()  # the kit's course leaves it unset
    ln = "assignment1/layer_norm.py"
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    tree = mutant(tmp_path, {ln: [(forward, forward + "        __import__('time').sleep(2.0)\n")]})
    report = grade_json(tree, "assignment1", course=quick_course)
    assert_loses_only_in(report, "LayerNorm")
    timed_out = [t["message"] for t in checks_of(report, "LayerNorm") if t["status"] == "timeout"]
    budget = "course.toml [limits] component_seconds, unset: 6 x timeout_seconds = 18"
    assert timed_out and all(budget in m for m in timed_out), timed_out
    assert any(m.startswith("not run: LayerNorm has used its time budget") for m in timed_out), timed_out


def test_a_hang_in_a_part_costs_one_timeout_for_the_components_built_on_it(tmp_path, quick_course):
    """make_pad_mask loops forever; make_tgt_mask, correct, calls it: its checks get the short
    deadline from their first request, and they are excused (the reference's make_pad_mask passes
    them), so the hang costs one full timeout and points in make_pad_mask only."""
    pad = "    return (tokens != pad_idx)[:, None, None, :]  # (B, 1, 1, T)\n"
    tree = mutant(tmp_path, {MASKS: [(pad, "    while True:\n        pass\n" + pad)]})
    report = grade_json(tree, "assignment2", course=quick_course)
    assert_loses_only_in(report, "make_pad_mask")
    timeouts = [t for c in report["components"] for t in c["tests"] if t["status"] == "timeout"]
    assert sum(FULL in t["message"] for t in timeouts) == 1, [t["message"] for t in timeouts]
    tgt = [t for t in checks_of(report, "make_tgt_mask") if t["status"] == "timeout"]
    assert tgt and all(t["message"].endswith("in make_pad_mask") for t in tgt), tgt
    # the chain in the student's files: make_tgt_mask's call, then the loop in make_pad_mask
    chain = [line.partition(": ")[0].rpartition(" in ")[2] for line in tgt[0]["where"].splitlines()]
    assert chain == ["make_tgt_mask", "make_pad_mask"], tgt[0]["where"]
