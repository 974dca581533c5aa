"""The graded files and the students' self-tests of the forbidden-API tests (tests/kit/unit/ and
sandbox/test_forbidden.py): a solution tree with a self-test under `__main__` appended to a file."""

from pathlib import Path

from tests.kit.conftest import mutant

LN, ATT, MHA = "assignment1/layer_norm.py", "assignment2/attention.py", "assignment2/multi_head_attention.py"
TRAINING = "assignment4/training.py"
# a student's self-test, run as `python layer_norm.py`: never when grading imports the file
SELF_TESTS = {
    "layer_norm_checked_against_F_layer_norm": ("assignment1", LN, (
        'if __name__ == "__main__":\n'
        "    import torch.nn.functional as F\n"
        "    from torch.nn.functional import layer_norm\n"
        "    x, norm = torch.randn(2, 3, 8), LayerNorm(8)\n"
        "    assert torch.allclose(norm(x), F.layer_norm(x, (8,), norm.gamma, norm.beta, norm.eps), atol=1e-6)\n"
        "    assert torch.allclose(norm(x), torch.nn.LayerNorm(8)(x), atol=1e-6)\n")),
    "label_smoothing_checked_against_cross_entropy": ("assignment4", TRAINING, (
        'if "__main__" == __name__:\n'
        "    logits, targets = torch.randn(5, 7), torch.randint(1, 7, (5,))\n"
        "    ours = LabelSmoothingLoss(7, pad_idx=0, smoothing=0.1)(logits, targets)\n"
        "    theirs = F.cross_entropy(logits, targets, ignore_index=0, label_smoothing=0.1)\n"
        "    print(ours.item(), theirs.item())\n")),
}


def with_self_test(tmp_path: Path, file: str, test: str) -> Path:
    tree = mutant(tmp_path, {})
    (tree / file).write_text((tree / file).read_text() + "\n\n" + test)
    return tree
