"""Device placement, the GPU tier and the performance feedback.

- A device-placement bug (a tensor made on the CPU inside forward, a table kept as a plain
  attribute) costs its own component its `*_stays_on_the_inputs_device` check on a machine
  without a GPU, names the line, and costs nothing elsewhere; correct placements keep every point.
- `--device cuda` without a CUDA device changes no score: the GPU checks are reported skipped and
  not counted; a submission that hides the GPU changes nothing either way.
- The GPU tier's checks run for real where there is a GPU, and on every machine with the CPU
  standing in for it (what they compare, and half precision under autocast, are the same).
- The performance feedback is in the JSON as positive ratios, and decides no points by default.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.sandbox.child import protocol
from grader.sandbox.child.placement import watch
from tests.kit.conftest import ROOT, SOLUTIONS, assert_loses_only_in, full_marks, grade_json, mutant, scores
from tests.kit.mutants import DEVICE_BUGS, DEVICE_VARIANTS, HALF_PRECISION_BUGS

HIDES_THE_GPU = {"assignment2/attention.py": [(
    "import torch\n",
    "import torch\n\ntorch.cuda.is_available = lambda: False\ntorch.cuda.device_count = lambda: 0\n")]}

# the GPU tier run with the CPU standing in for the GPU: the grader's choice of device, made here
ON_THE_CPU = """
import json, sys
from grader.grading import pipeline as grading
from grader.grading.run import Options
from grader import load_course
from grader.results import to_json
grading._gpu = lambda device: "cpu" if device == "cuda" else None
course = load_course(sys.argv[1])
report = grading.grade_submission(course=course, assignment=course.assignment(sys.argv[2]), submission=sys.argv[3],
                                  options=Options(device="cuda"))
print(json.dumps(to_json(report)))
"""


def checks(report: dict) -> dict[str, dict]:
    return {t["id"]: {**t, "component": c["name"]} for c in report["components"] for t in c["tests"]}


def line_of(tree: Path, file: str, text: str) -> str:
    """"assignment3/transformer.py:78": where `text` is in the submission's file."""
    lines = (tree / file).read_text().splitlines()
    return f"{file}:{next(i for i, line in enumerate(lines, 1) if text in line)}"


@pytest.mark.parametrize("bug", sorted(DEVICE_BUGS))
def test_a_device_bug_costs_its_own_device_check_on_a_machine_without_a_gpu(tmp_path, bug):
    spec = DEVICE_BUGS[bug]
    tree = mutant(tmp_path, spec.patches)
    report = grade_json(tree, spec.assignment)
    assert_loses_only_in(report, spec.component)
    check = checks(report)[spec.check]
    assert check["component"] == spec.component and check["status"] == "failed", check
    file = next(iter(spec.patches))
    assert any(sign in check["message"] for sign in ("mixes devices", "copies a tensor to the host",
                                                     "returns a tensor on cpu")), check
    assert line_of(tree, file, spec.line) in check["message"] + check["where"], check
    assert check["hint"] and check["where"], check


@pytest.mark.parametrize("variant", sorted(DEVICE_VARIANTS))
def test_tensors_placed_correctly_keep_every_point(tmp_path, variant):
    patches = DEVICE_VARIANTS[variant]
    report = grade_json(mutant(tmp_path, patches), next(iter(patches)).partition("/")[0])
    assert not any(c["diagnosis"] for c in report["components"])  # correct code: nothing named, no "looks like"
    assert scores(report) == full_marks(report), [(t["id"], t["message"]) for t in checks(report).values()
                                                  if t["status"] != "passed"]


def grade(tree: Path, *args: str, env: dict | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-m", "grader", "assignment2", "--submission", str(tree), "--json", "-",
                           *args], cwd=ROOT, env={**os.environ, "NO_COLOR": "1", **(env or {})},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_device_cuda_without_a_gpu_reports_the_gpu_checks_skipped_and_changes_no_score(solution_reports):
    plain = solution_reports("assignment2")
    # the grader's process sees no GPU here, whatever this machine has
    report = grade(SOLUTIONS, "--device", "cuda", env={"CUDA_VISIBLE_DEVICES": ""})
    assert scores(report) == scores(plain) == full_marks(report)
    gpu = [t for t in checks(report).values() if t["tier"] == "cuda"]
    assert len(gpu) >= 5 and all(t["status"] == "skipped" and t["reason"] == "no_cuda" for t in gpu), gpu
    assert not any(t["tier"] == "cuda" for t in checks(plain).values())  # without --device cuda: not listed
    ordinary = {i: t["status"] for i, t in checks(report).items() if t["tier"] != "cuda"}
    assert ordinary == {i: t["status"] for i, t in checks(plain).items()}
    assert report["gpu"]["available"] is False and plain["gpu"] is None
    assert any("GPU checks skipped" in note for note in report["notes"])


def test_a_submission_that_hides_the_gpu_changes_nothing(tmp_path):
    honest, hider = (grade(tree, "--device", "cuda") for tree in (SOLUTIONS, mutant(tmp_path, HIDES_THE_GPU)))
    assert scores(hider) == scores(honest)
    assert {i: t["status"] for i, t in checks(hider).items()} == {i: t["status"] for i, t in checks(honest).items()}
    assert hider["gpu"]["available"] == honest["gpu"]["available"] == torch.cuda.is_available()


def on_the_cpu(tree: Path, assignment: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", ON_THE_CPU, str(ROOT / "course.toml"), assignment, str(tree)],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_gpu_tier_with_the_cpu_standing_in_passes_the_solutions_and_catches_half_precision(tmp_path):
    report = on_the_cpu(SOLUTIONS, "assignment2")
    gpu = [t for t in checks(report).values() if t["tier"] == "cuda"]
    assert gpu and all(t["status"] == "passed" for t in gpu), gpu
    assert scores(report) == full_marks(report) and report["gpu"]["available"]
    bug = HALF_PRECISION_BUGS["attention_masks_with_minus_1e9"]
    report = on_the_cpu(mutant(tmp_path, bug.patches), "assignment2")
    assert_loses_only_in(report, bug.component)
    failed = {i for i, t in checks(report).items() if t["status"] != "passed" and not t.get("excused_by")}
    # fine in float32, on the meta device too; the public tier catches it in float16 on the CPU (issue 37)
    assert failed == {"sdpa_under_autocast", "sdpa_masks_in_half_precision"}, failed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine: nothing to run the GPU "
                                                          "tier on (the CPU stands in for it in the test above)")
def test_the_gpu_tier_runs_on_a_gpu_and_catches_a_device_bug(tmp_path):
    report = grade_json(SOLUTIONS, "assignment3", device="cuda")
    gpu = [t for t in checks(report).values() if t["tier"] == "cuda"]
    assert gpu and all(t["status"] == "passed" for t in gpu), gpu
    assert scores(report) == full_marks(report) and report["gpu"]["available"] and report["gpu"]["seconds"] > 0
    spec = DEVICE_BUGS["transformer_builds_its_causal_mask_on_the_cpu"]
    tree = mutant(tmp_path, spec.patches)
    report = grade_json(tree, "assignment3", device="cuda")
    assert_loses_only_in(report, spec.component)
    on_gpu = checks(report)["transformer_on_the_gpu"]
    assert on_gpu["status"] == "failed" and line_of(tree, next(iter(spec.patches)), spec.line) in on_gpu["message"]


def test_performance_feedback_is_ratios_in_the_json_and_worth_nothing_by_default(solution_reports):
    for assignment, timed in (("assignment2", {"scaled_dot_product_attention", "MultiHeadAttention"}),
                              ("assignment3", {"EncoderLayer"})):
        report = solution_reports(assignment)
        perf = report["performance"]
        assert perf["informational"] and perf["score"] == perf["max_score"] == 0
        assert report["score"] == report["max_score"] == sum(full_marks(report).values())
        assert {e["component"] for e in perf["entries"]} == timed
        for entry in perf["entries"]:
            assert entry["status"] == "measured", entry
            for key in ("time_vs_torch", "time_vs_reference", "memory_vs_torch", "memory_vs_reference"):
                assert isinstance(entry[key], float) and 0 < entry[key] < float("inf"), (key, entry)
    assert solution_reports("assignment1")["performance"] is None  # nothing of assignment1 is timed


def test_the_stubs_are_not_timed():
    report = grade_json(ROOT / "assignments", "assignment2")
    assert {e["status"] for e in report["performance"]["entries"]} == {"not attempted"}


# the worker's side, in this process ---------------------------------------------------------------

def test_meta_tensors_travel_as_shapes_and_dtypes():
    value = {"out": torch.empty(2, 3, device="meta"), "mask": torch.ones(4, dtype=torch.bool)}
    frame = protocol.encode(value)
    header = protocol.decode_header(frame[8:8 + int.from_bytes(frame[:8], "big")])
    sizes = protocol.tensor_sizes(header)
    assert [s[2:] for s in sizes] == [(0, True), (4, False)]
    got = protocol.decode_value(header, [b"", frame[-4:]], sizes)
    assert got["out"].device.type == "meta" and got["out"].shape == (2, 3) and torch.equal(got["mask"], value["mask"])
    with pytest.raises(protocol.ProtocolError):
        protocol.tensor_sizes({"tensors": [["float32", [1 << 30, 1 << 30], "meta"]]})


def run_placed(fn, *args):
    """What the worker's Placement finds when `fn(*args)` runs with its tensors on meta."""
    placed = watch.Placement("meta")
    try:
        with placed:
            fn(*[a.to("meta") for a in args])
    except watch.Stray:
        pass
    return placed.found


def test_placement_stops_a_cpu_tensor_where_it_meets_the_device():
    def bad(x):
        return x @ torch.ones(x.size(-1), x.size(-1)).tril()  # meta's own matmul would let this through

    found = run_placed(bad, torch.randn(2, 3))
    assert found and found["function"] in ("matmul", "__matmul__"), found
    assert found["created"] == found["met"] == []  # lines are named only in a submission's files


def test_placement_allows_what_a_gpu_allows():
    def fine(x, mask):
        scale = torch.tensor(2.0)  # a 0-dim CPU tensor: CUDA takes it as a number
        causal = torch.ones(x.size(-1), x.size(-1), dtype=torch.bool, device=x.device).tril()
        y = (x * scale).masked_fill(~(mask & causal), torch.finfo(x.dtype).min)
        return y[torch.tensor([0])] + torch.arange(3).to(x.device)  # CPU indices, moved tensors

    assert run_placed(fine, torch.randn(3, 3), torch.ones(3, 3, dtype=torch.bool)) is None
