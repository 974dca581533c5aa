"""Findings as data, words in one place (issue 52): the judging and grading stages (grader/judging/,
grader/grading/) return no English, and nothing under grader/ reads a finding back out of its words or
of an id's prefix.

The rule for a stage's module, read with `ast`, nothing imported: no f-string whose literal text holds
two words side by side ("your {names} fails ..."), and no string constant that does, wherever it
stands (a return value, a dict's value, a dataclass field's default, an argument), but a docstring, a
`raise`'s or an `assert`'s message (for the caller, not a report), the receiver of `.split()` (a list
of words to match, telling's stop words), a pattern given to `re.compile`, and a program handed to a
Python subprocess: the string (or the module-level constant named) right after "-c" in an argv list
(`[sys.executable, "-c", BOOT]`), which is code. Identifiers built with f-strings ("looks_like:{check}",
"{file}:{line}") have no space and pass. Words belong to grader.words; labels that are data are
enums (grader.findings)."""

import ast
import itertools
import re
from pathlib import Path

from tests.kit.conftest import ROOT

GRADER = ROOT / "grader"
WORDING = GRADER / "render" / "words.py"
WORDS = re.compile(r"[A-Za-z]{2,}[,;:]? [A-Za-z]{2,}")  # two words side by side: a phrase

# reading a finding back from text: a diagnosis's kind from its id's prefix or from a ":" in it, its
# sentence taken apart
PARSE_BACK = [
    re.compile(r"""\.(startswith|endswith|removeprefix|removesuffix|partition|split|find|index)\(\s*f?["']"""
               r"""(looks_like|placement):"""),
    re.compile(r"""["'](looks_like|placement):["']\s+(not\s+)?in\b"""),
    re.compile(r"""["']:["']\s+(not\s+)?in\s+\w*bug\b"""),
    re.compile(r"""["'](message|what|note)["']\]?\)?\s*\.\s*(split|partition|startswith|removeprefix|find|index)\("""),
]


STAGES = ("judging", "grading")  # grader's packages that judge and grade: data out, words in grader.words


def programs(tree: ast.AST) -> tuple[set[int], set[str]]:
    """A Python subprocess's program: the constants right after "-c" in an argv list or tuple (their
    ids), and the names there, each a module-level constant that holds one."""
    given, named = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for flag, program in itertools.pairwise(node.elts):
                if isinstance(flag, ast.Constant) and flag.value == "-c":
                    if isinstance(program, ast.Name):
                        named.add(program.id)
                    else:
                        given |= {id(n) for n in ast.walk(program)}
    return given, named


def sentences(source: str, name: str = "<source>") -> list[str]:
    """'name:line: text' for each phrase a module's code (not its docstrings) builds or holds."""
    tree = ast.parse(source)
    allowed, named = programs(tree)
    for stmt in getattr(tree, "body", []):  # a named program: only its module-level constant, bound once
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and getattr(stmt.targets[0], "id", None) in named:
            allowed |= {id(n) for n in ast.walk(stmt.value)}
    found = []
    for node in ast.walk(tree):  # breadth first: a node is allowed before its parts are read
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            allowed.add(id(body[0].value))
        if isinstance(node, ast.Raise):
            allowed |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.Assert) and node.msg is not None:
            allowed |= {id(n) for n in ast.walk(node.msg)}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
            allowed |= {id(n) for n in ast.walk(node.func.value)}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
            allowed |= {id(n) for a in node.args for n in ast.walk(a)}
        if isinstance(node, ast.JoinedStr):
            parts = [v for v in node.values if isinstance(v, ast.Constant)]
            allowed |= {id(v) for v in parts}
            if id(node) not in allowed and any(WORDS.search(str(v.value)) for v in parts):
                found.append(f"{name}:{node.lineno}: f-string {ast.unparse(node)[:80]}")
    found += [f"{name}:{n.lineno}: {n.value[:80]!r}" for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in allowed
              and WORDS.search(n.value)]
    return found


def stage_sentences(grader: Path = GRADER) -> list[str]:
    return [s for stage in STAGES for path in sorted((grader / stage).glob("*.py"))
            for s in sentences(path.read_text(encoding="utf-8"), path.relative_to(grader.parent).as_posix())]


def parsed_back(grader: Path = GRADER) -> list[str]:
    """'path:line: code' for each line outside the wording module that reads a finding back from text."""
    found = []
    for path in sorted(grader.rglob("*.py")):
        if path.name == WORDING.name and path.parent.name == WORDING.parent.name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if any(p.search(line) for p in PARSE_BACK):
                found.append(f"{path.relative_to(grader.parent).as_posix()}:{n}: {line.strip()}")
    return found


def test_the_judging_and_grading_stages_build_no_sentences():
    found = stage_sentences()
    assert not found, "judging and grading return data; grader.words words it:\n" + "\n".join(found)


def test_nothing_reads_a_finding_back_out_of_its_words():
    found = parsed_back()
    assert not found, "read the finding's data (its kind, check, parts), not its words:\n" + "\n".join(found)


def test_the_rule_sees_a_sentence_built_or_held_and_passes_data():
    said = '''
def note(names, n):
    """Docstrings are words."""
    if n < 0:
        raise ValueError(f"n must be at least 0, got {n}")
    return f"your {names} fail{'s' * (n == 1)} their own checks"

MISSING = ("error", "this check did not run")
STOP = frozenset("a an and as".split())
ID = f"looks_like:{MISSING}"
'''
    found = sentences(said)
    assert [f.split(":")[1] for f in found] == ["6", "8"], found
    assert not sentences('key = f"{a}:{b}"\nkind = "looks_like"\n')


def test_the_rule_passes_a_subprocess_program_and_an_assert_message_but_no_sentence_beside():
    code = '''
BOOT = "import sys; from grader import main; main()"
NOTE = "import this, or say it"
assert KINDS == WORKER_KINDS, "course.toml's kinds are the worker's"
subprocess.Popen([sys.executable, "-c", BOOT])
subprocess.run((sys.executable, "-I", "-c", "import sys; print(sys.path)"))
def later():
    BOOT = "a sentence under the program's name"
    return {"note": "the worker ran it"}
'''
    found = sentences(code)
    assert [f.split(":")[1] for f in found] == ["3", "8", "9"], found


def test_the_parse_back_patterns_see_the_old_readings():
    old = ['if bug.startswith("looks_like:"):', 'done["explains"] = [bug.removeprefix("looks_like:")]',
           'if ":" not in bug:', 'name = diagnosis["message"].split(" on ")[0]']
    assert all(any(p.search(line) for p in PARSE_BACK) for line in old)
    assert not any(p.search('if words.kind(found) == Found.LOOKS_LIKE:') for p in PARSE_BACK)


def test_the_json_carries_the_findings_as_data_and_a_rebuilt_report_words_them_alike():
    from grader import words
    from grader.findings import Attributed, Attribution, Diagnosis, Found
    from grader.report_json import from_json
    from grader.results import CheckResult, ComponentResult, Outcome, Report, to_json

    excused = CheckResult("c_matches", "public", 1.0, Outcome("failed", "mismatch", "differs"), ("P", "Q"),
                          Attribution(Attributed.EXCUSED, ("P", "Q")))
    own = CheckResult("c_own", "public", 1.0, Outcome("failed", "mismatch", "differs"),
                      attribution=Attribution(Attributed.OWN, ("P",)))
    placed = Diagnosis(Found.PLACEMENT, "placement:c_own", check="c_own", component="C", where="a/c.py:3",
                       function="C.forward", line="torch.zeros(3)")
    report = Report("a", "A", Path("s"), [ComponentResult("C", "a/c.py", 0.0, 1.0, [excused, own], ("P", "Q"),
                                                         diagnosis=placed, telling="c_own")], 1.0)
    data = to_json(report)
    tests = data["components"][0]["tests"]
    assert [t["attribution"] for t in tests] == [{"kind": "excused", "parts": ["P", "Q"]},
                                                 {"kind": "own", "parts": ["P"]}]
    assert tests[1]["note"] == words.note(own.attribution) and "bug of its own" in tests[1]["note"]
    said = data["components"][0]["diagnosis"]
    assert said["kind"] == "placement" and said["message"] == words.message(placed)
    assert said["message"].startswith("C makes a tensor on the CPU at a/c.py:3 (C.forward: torch.zeros(3))")
    again = from_json(data, depends={"C": ("P", "Q")})
    assert [t.attribution for t in again.components[0].checks] == [excused.attribution, own.attribution]
    assert again.components[0].diagnosis == placed
    assert to_json(again) == data


def test_a_reports_notes_are_data_that_the_json_words_and_a_rebuilt_report_words_alike():
    from grader import words
    from grader.batch import late
    from grader.findings import Note, Noted
    from grader.report_json import from_json
    from grader.results import Report, to_json

    notes = [Note(Noted.PUBLIC_ONLY), Note(Noted.RESTARTED, "timed out"), Note(Noted.NOT_STAGED, "a/big.py"),
             Note(Noted.ONLY, names=("c_one",)), Note(Noted.GPU_SKIPPED, counts=(3,)),
             Note(Noted.GPU_RAN, "H200", counts=(2, 3, 1.5)), Note(Noted.HIDDEN_PASSED, names=("C 2/3",))]
    assert {n.kind for n in notes} | {Noted.LATE, Noted.WORDED} == set(Noted)
    data = to_json(Report("a", "A", Path("s"), [], 1.0, notes))
    assert data["notes"] == [words.noted(n) for n in notes] and all(data["notes"])
    assert len(set(data["notes"])) == len(notes)  # each kind its own words
    again = from_json(data)
    assert again.notes == notes and to_json(again) == data
    # a report written before notes were data: its words, as they were
    old = from_json({k: v for k, v in data.items() if k != "noted"})
    assert [n.kind for n in old.notes] == [Noted.WORDED] * len(notes) and to_json(old)["notes"] == data["notes"]
    # a batch's late penalty is a note of its own kind, taken out again by undo without reading words
    lateness = late.Lateness(hours=30.0, source="gradescope")
    marked = late.apply({**data, "score": 10.0, "components": []}, lateness, None)
    assert from_json(marked).notes[-1].kind == Noted.LATE and marked["notes"][-1] == marked["late"]["note"]
    assert late.undo(marked)["noted"] == data["noted"] and late.undo(marked)["notes"] == data["notes"]
