"""The submission's resource limits hold whatever the command line asks for."""

import re

import pytest
import torch

from tests.kit.conftest import grade_json, mutant

LN = "assignment1/layer_norm.py"
REPORT_LIMITS = ("import resource\n"
                 "print('limits', *(resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)))\n")


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU, --device cuda trades the address-space limit "
                                                     "for a data limit (grader.sandbox.limits.rlimits)")
def test_device_cuda_without_a_gpu_keeps_the_memory_limit(tmp_path, quick_course):
    tree = mutant(tmp_path, {LN: [("import torch\n", "import torch\n" + REPORT_LIMITS)]})
    report = grade_json(tree, "assignment1", course=quick_course, device="cuda")
    printed = "".join(t.get("output", "") for c in report["components"] for t in c["tests"])
    seen = {tuple(map(int, m)) for m in re.findall(r"limits (-?\d+) (-?\d+)", printed)}
    memory = 4096 << 20  # course.toml [limits] memory_mb
    assert seen == {(memory, memory)}, printed[-2000:]
    assert report["score"] == report["max_score"]
