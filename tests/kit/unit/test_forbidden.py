"""What course.toml forbids, as the source scan finds it: the scan's own cases, and the no-false-positive
sweep over the kit's correct trees. None needs a grading run (what a forbidden API costs, graded:
tests/kit/sandbox/test_forbidden.py).
"""

import tempfile
from pathlib import Path

import pytest

from grader import course as config
from grader.course_table import ConfigError
from grader.findings import Evasion, Seen, Sighting
from grader.judging import forbidden
from tests.kit import mutants
from tests.kit.conftest import ROOT, SOLUTIONS, mutant
from tests.kit.forbidden_trees import LN, SELF_TESTS, TRAINING, with_self_test
from tests.kit.sandbox import test_torch_backed

COURSE = config.load(ROOT / "course.toml")


def _judge(tree: Path, assignment: str) -> dict:
    return forbidden.judge(COURSE.assignment(assignment), tree, [])


def test_correct_trees_are_never_found(tmp_path):
    """The solutions, the stubs and the correct variants that use only what is allowed."""
    for assignment in COURSE.assignments:
        assert _judge(SOLUTIONS, assignment) == {}, assignment
        assert _judge(COURSE.assignments_dir, assignment) == {}, assignment
    allowed = {n: v for n, v in test_torch_backed.VARIANTS.items() if "F_layer_norm" not in n and "mha_via" not in n
               and n != "all_of_them_under_assignment3"}
    variants = [(n, a, p) for n, (a, p) in allowed.items()]
    variants += [(n, "assignment2", p) for n, p in mutants.VARIANTS.items()]
    for name, assignment, patches in variants:
        tree = mutant(Path(tempfile.mkdtemp(dir=tmp_path)), patches)
        assert _judge(tree, assignment) == {}, name


@pytest.mark.parametrize("name", sorted(SELF_TESTS))
def test_a_self_test_under_main_costs_nothing(tmp_path, name):
    assignment, file, test = SELF_TESTS[name]
    assert _judge(with_self_test(tmp_path, file, test), assignment) == {}


def test_the_same_code_outside_main_is_found(tmp_path):
    test = SELF_TESTS["layer_norm_checked_against_F_layer_norm"][2].replace('if __name__ == "__main__":',
                                                                          "if True:")
    hits, _ = _judge(with_self_test(tmp_path, LN, test), "assignment1")["LayerNorm"]
    assert {h.what for h in hits} == {"torch.nn.functional.layer_norm", "torch.nn.LayerNorm"}


@pytest.mark.parametrize("source, hit, flag", [
    ("from torch.nn.functional import layer_norm as ln\n", "torch.nn.functional.layer_norm", None),
    ("import torch.nn.modules.normalization as m\nclass LayerNorm:\n    f = m.LayerNorm.forward\n",
     "torch.nn.LayerNorm", None),
    ("import torch\ny = torch.ops.aten.native_layer_norm\n", None, "torch.ops"),
    ("z = eval('1')\n", None, "eval"),
    ("import importlib\n", None, "importlib"),
    ("import torch\nclass LayerNorm:\n    def f(self):\n        return getattr(self, 'w' + str(1))\n", None,
     "getattr with a computed name"),
    # __import__ with a constant name is the import statement it spells (an honest `clones` uses it):
    # checked as one; a computed name stays flagged
    ("layers = [__import__('copy').deepcopy(x) for x in ()]\n", None, None),
    ("f = __import__('torch.nn.functional').nn.functional.layer_norm\n", "torch.nn.functional.layer_norm", None),
    ("k = __import__('torch').ops.aten\n", None, "torch.ops"),
    ("m = __import__('importlib')\n", None, "importlib"),
    ("m = __import__('tor' + 'ch')\n", None, "__import__"),
    ("m = __import__('torch', fromlist=['nn'])\n", None, "__import__"),
    # the placement check's devices named or asked of a tensor (issue 51); another device, or the words in a
    # longer text, are not
    ("def f(x):\n    return x.device.type in ('meta', 'lazy')\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return str(x.device) == 'lazy:0'\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return x.is_meta\n", None, Evasion.DEVICE_TELL),
    # or told apart without naming them: the CPU or not, a device's text, a placed run's tensor class
    ("def f(x):\n    return x.device.type != 'cpu'\n", None, Evasion.DEVICE_TELL),
    ("import torch\ndef f(x):\n    return x.device == torch.device('cpu')\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return x.is_cpu\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return str(x.device)[0] == 'm'\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return f'{x.device}'.startswith('m')\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return x.device.type.startswith('c')\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return x.device.index is None\n", None, Evasion.DEVICE_TELL),
    ("import torch\ndef f(x):\n    return type(x) is torch.Tensor\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return type(x).__name__ == 'Tensor'\n", None, Evasion.DEVICE_TELL),
    ("import torch\ndef f(x):\n    return x.__class__ is not torch.Tensor\n", None, Evasion.DEVICE_TELL),
    ("import torch.nn as nn\ndef f(x):\n    return type(x) in (nn.Linear, nn.Parameter)\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    return type(x).__name__ in ('Dropout', 'FakeTensor')\n", None, Evasion.DEVICE_TELL),
    # a read kept in a name and compared later, in any order of the lines
    ("def f(x):\n    kind = x.device.type\n    return kind != 'cpu'\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    def g():\n        return t[0] == 'm'\n    t = str(d)\n    d = x.device\n    return g()\n", None,
     Evasion.DEVICE_TELL),
    ("import torch\ndef f(x):\n    if (t := type(x)) is torch.Tensor:\n        return t\n", None, Evasion.DEVICE_TELL),
    ("def f(x):\n    d = x.device\n    return d.type.startswith('m')\n", None, Evasion.DEVICE_TELL),
    # what honest code does with devices and classes tells nothing: CUDA or not (false on the CPU and the
    # check's devices alike), two devices compared, a device passed on, a class in a message or an
    # argument's check
    ("def f(x):\n    return x.device.type == 'cuda' or x.is_cuda\n", None, None),
    ("def f(x, mask):\n    return mask.to(x.device) if mask.device != x.device else mask\n", None, None),
    ("import torch\ndef f(x, n):\n    return torch.arange(x.size(1), device=x.device)[None] < n[:, None]\n",
     None, None),
    ("def f(d):\n    if type(d) is not int or type(d).__name__ in ('bool', 'float'):\n"
     "        raise ValueError(f'd_model: expected an int, got {type(d).__name__} on {d.device}')\n", None, None),
    ('def f(x):\n    """Runs on any device: meta, lazy or not."""\n    return {"metadata": x}\n', None, None),
    # a module's class, which honest code compares to pick the layers it initialises
    ("import torch.nn as nn\ndef init(m):\n    if type(m) == nn.Linear or type(m) in (nn.Embedding, nn.Dropout):\n"
     "        nn.init.zeros_(m.bias)\n", None, None),
    ("def f(m):\n    return type(m).__name__ == 'Dropout' or m.__class__.__name__ in ('LayerNorm', 'Linear')\n",
     None, None),
    ("def f(m):\n    return type(m).__name__ == 'PositionwiseFeedForward'\n", None, None),
    # a device kept in a name and passed on, or compared with another device or CUDA; a name that holds
    # one in another function
    ("def f(x, mask):\n    device = x.device\n    return mask.to(device) if mask.device != device else mask\n",
     None, None),
    ("def f(x):\n    d = x.device\n    return d.type == 'cuda'\n", None, None),
    ("def g(x):\n    d = x.device\n    return x.to(d)\ndef h(t, d='cpu'):\n    return t.to(d) if d == 'cpu' else t\n",
     None, None),
])
def test_the_scan_names_what_it_finds(tmp_path, source, hit, flag):
    (tmp_path / "assignment1").mkdir()
    (tmp_path / LN).write_text(source)
    hits, flags = _judge(tmp_path, "assignment1").get("LayerNorm", ([], []))
    assert [h.what for h in hits] == ([hit] if hit else [])
    assert [f.what for f in flags][:1] == ([flag] if flag else [])


def test_a_keyword_entry_needs_the_keyword(tmp_path):
    (tmp_path / "assignment4").mkdir()
    (tmp_path / TRAINING).write_text("import torch.nn as nn\nimport torch.nn.functional as F\n"
                                     "class LabelSmoothingLoss:\n    a = F.cross_entropy(x, y, ignore_index=0)\n"
                                     "def train_epoch():\n    nn.CrossEntropyLoss(label_smoothing=0.1)\n"
                                     "class noam_lr:\n    b = nn.CrossEntropyLoss(label_smoothing=0.1)\n")
    # a call without the keyword is allowed; inside another component of the file, the keyword is that one's business
    assert _judge(tmp_path, "assignment4") == {}
    (tmp_path / TRAINING).write_text("import torch.nn as nn\nloss = nn.CrossEntropyLoss(label_smoothing=0.1)\n")
    assert _judge(tmp_path, "assignment4") == {"LabelSmoothingLoss": (
        [Sighting("torch.nn.CrossEntropyLoss(label_smoothing)", f"{TRAINING}:2", Seen.SOURCE)], [])}


def test_course_toml_names_forbidden_apis_under_torch(tmp_path):
    text = (ROOT / "course.toml").read_text().replace('["torch.nn.LayerNorm"', '["nn.LayerNorm"')
    (tmp_path / "course.toml").write_text(text)
    with pytest.raises(ConfigError, match="LayerNorm.forbidden"):
        config.load(tmp_path / "course.toml")
