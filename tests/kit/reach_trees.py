"""Trees that reach a forbidden API from elsewhere, for tests/kit/unit/ and sandbox/test_forbidden_reach.py: a
helper in another file or in the package's __init__, the recorder silenced, the kernel behind attrgetter."""

from pathlib import Path

from grader import course as config
from tests.kit.conftest import ROOT, mutant

COURSE = config.load(ROOT / "course.toml")
LN, FF, INIT1 = "assignment1/layer_norm.py", "assignment1/feed_forward.py", "assignment1/__init__.py"
ATT, INIT2 = "assignment2/attention.py", "assignment2/__init__.py"
LN_RETURN = "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta  # (..., d_model)\n"
HELPER = ("\n\nimport torch.nn.functional as _F\n\n\n"
          "def _norm(x, gamma, beta, eps):\n"
          "    return _F.layer_norm(x, (x.size(-1),), gamma, beta, eps)\n")


def _helper_in(tmp_path: Path, file: str, importing: str) -> Path:
    """The solution, with LayerNorm returning F.layer_norm from a helper appended to `file`."""
    tree = mutant(tmp_path, {LN: [(LN_RETURN, f"        {importing}\n"
                                   "        return _norm(x, self.gamma, self.beta, self.eps)  # (..., d_model)\n")]})
    (tree / file).write_text((tree / file).read_text() + HELPER)
    return tree


IN_INIT = (INIT1, "from . import _norm")
# the kit's recorder silenced from the submission, and the API taken where no attribute names it
TAMPERED = {LN: [("import torch.nn as nn\n",
                  "import sys\n\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
                  'sys.modules["grader.sandbox.child.record"].Watch._note = lambda *a, **k: None\n'),
                 (LN_RETURN, '        return vars(F)["layer_norm"](x, (x.size(-1),), self.gamma, self.beta, '
                             "self.eps)\n")]}


def _line(tree: Path, file: str, text: str) -> int:
    return next(i for i, line in enumerate((tree / file).read_text().splitlines(), 1) if text in line)


# LayerNorm by the aten kernel, reached through operator.attrgetter with a computed name: no forbidden name
# in the source (10/10 before issue 51, nothing flagged); the recorder now knows the operator
LN_BODY = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
           "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n" + LN_RETURN)
