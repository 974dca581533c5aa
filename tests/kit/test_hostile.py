"""Hostile submissions earn nothing for what they attack, cost nothing elsewhere, and the grader survives."""

import re

import pytest

from tests.kit.conftest import ROOT, assert_loses_only_in, grade_json, mutant


@pytest.fixture(scope="module")
def quick_course(tmp_path_factory):
    """The course with a 3 s request timeout, so that hanging submissions are cheap to test."""
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    text = re.sub(r"^timeout_seconds = \d+", "timeout_seconds = 3", text, flags=re.M)
    path = tmp_path_factory.mktemp("course") / "course.toml"
    path.write_text(text)
    return path


FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"

ATTACKS = {
    "exits_at_import": ("assignment1/layer_norm.py", '"""', 'import os\nos._exit(0)\n"""', "LayerNorm"),
    "hangs_ignoring_signals": (
        "assignment1/feed_forward.py", FORWARD,
        FORWARD + "        import signal\n        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n"
                  "            signal.signal(s, signal.SIG_IGN)\n        while True:\n            pass\n",
        "PositionwiseFeedForward"),
    "skips_the_check": ("assignment1/layer_norm.py", FORWARD,
                        FORWARD + "        import pytest\n        pytest.skip('nothing to see')\n", "LayerNorm"),
    "patches_the_comparison": (
        "assignment1/layer_norm.py", FORWARD,
        FORWARD + "        torch.allclose = lambda *a, **k: True\n        torch.equal = lambda *a, **k: True\n"
                  "        torch.testing.assert_close = lambda *a, **k: None\n        return torch.zeros_like(x)\n",
        "LayerNorm"),
    "allocates_too_much": ("assignment1/positional_encoding.py", FORWARD,
                           FORWARD + "        hog = torch.ones(1 << 40)\n", "PositionalEncoding"),
    "exits_in_forward": ("assignment1/feed_forward.py", FORWARD,
                         FORWARD + "        raise SystemExit(0)\n", "PositionwiseFeedForward"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_earns_nothing_and_costs_nothing_elsewhere(tmp_path, quick_course, attack):
    file, old, new, component = ATTACKS[attack]
    if old == '"""':
        tree = mutant(tmp_path, {})
        path = tree / file
        path.write_text(new.removesuffix('"""') + path.read_text())
    else:
        tree = mutant(tmp_path, {file: [(old, new)]})
    report = grade_json(tree, "assignment1", "--course", str(quick_course))
    assert_loses_only_in(report, component)
    attacked = next(c for c in report["components"] if c["name"] == component)
    assert not any(t["status"] == "skipped" for t in attacked["tests"])


CHEAT = '''
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import importlib.util, os, sys
        for name, module in list(sys.modules.items()):
            other = getattr(module, "TransformerEmbedding", None)
            if other is not None and other is not type(self) and isinstance(other, type):
                return other.forward(self, x)
        for folder, _, files in os.walk(os.getcwd()):
            path = os.path.join(folder, "embedding.py")
            if "embedding.py" in files and path != os.path.abspath(__file__):
                spec = importlib.util.spec_from_file_location("found", path)
                found = importlib.util.module_from_spec(spec)
                try:
                    spec.loader.exec_module(found)
                    return found.TransformerEmbedding.forward(self, x)
                except Exception:
                    pass
        return self.token(x)
'''


def test_the_reference_is_nowhere_in_the_submissions_process(tmp_path):
    """Isolated checks run the reference's parts in the grader: a submission that looks for the
    reference to delegate to finds nothing, and its own bug still costs its points."""
    old = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        ### BEGIN SOLUTION\n" \
          "        return self.position(self.token(x))  # (B, T, d_model)\n        ### END SOLUTION\n"
    tree = mutant(tmp_path, {"assignment1/embedding.py": [(old, CHEAT)]})
    assert_loses_only_in(grade_json(tree, "assignment1"), "TransformerEmbedding")
