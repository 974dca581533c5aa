"""What makes `--watch` run a component's checks every time (grader.grading.reuse): code that can import or
read beyond its import statements. Words in docstrings and comments, and methods that share a
builtin's name (`model.eval()`, `re.compile`), do not: the solutions' docstrings say "eval() mode"."""

import pytest

from grader.grading.reuse import _dynamic
from tests.kit.conftest import SOLUTIONS

DYNAMIC = ['eval("1 + 1")', 'exec("x = 1")', 'open("secret")', "__import__('os')", "import importlib",
           "import sys\nsys.modules['torch']", "from pathlib import Path\nPath('x').read_text()", "x = __file__",
           "import runpy", "import pkgutil", "f = compile('1', 'x', 'eval')", "def f(:\n"]
STATIC = ["self.eval()", "model.eval()\nmodel.train()", '"""In eval() mode dropout is off."""\nx = 1',
          "# exec(code) would be wrong here\nx = 1", "import re\nre.compile('a')", "fh.open()",
          "x = 'open(file)'"]


@pytest.mark.parametrize("source", DYNAMIC)
def test_code_that_imports_or_reads_beyond_its_imports_is_dynamic(source):
    assert _dynamic(source.encode())


@pytest.mark.parametrize("source", STATIC)
def test_methods_docstrings_and_comments_named_like_builtins_are_not(source):
    assert not _dynamic(source.encode())


def test_no_solution_file_is_dynamic():
    assert [p.name for p in sorted(SOLUTIONS.rglob("*.py")) if _dynamic(p.read_bytes())] == []
