"""Reports are read typed (issue 56): outside grader/results.py, which writes a report's JSON, and
grader/report_json.py, which reads it back (with what a batch adds to it), no module of grader/ reads a
report's dict by one of its keys; it reads the Report's attributes (`report.components`, `c.checks`,
`t.outcome.status`, `t.tier`, ...), which a renamed field breaks at once where a string goes on reading
nothing.

A read is a subscript loaded (`x["score"]`, not `x["score"] = ...`: a document written is the batch's edit)
or `x.get("score")` / `x.pop("score")`, by one of KEYS. Whose dict it is cannot be told from the code, so a
dict of those keys that is no report (a process event, a CSV row, the class summary) is named in NOT_REPORTS
with what it is; a name there that no longer reads fails too, so the list stays true. Read with `ast`,
nothing imported."""

import ast
from pathlib import Path

from tests.kit.conftest import ROOT

GRADER = ROOT / "grader"
# a report's keys, and what a batch adds to its document (grader.report_json.graded reads those)
KEYS = frozenset({"components", "tests", "status", "score", "max_score", "hidden", "excused_by", "reason", "notes",
                  "noted", "late", "batch", "graded_score", "override", "held", "flagged", "forbidden", "diagnosis",
                  "submission", "start_here", "duration_seconds", "isolation",
                  # a check's details (grader.results.Details), read by their fields
                  "expected", "got", "max_abs_error", "where", "example", "hint", "looks_like", "basis", "pattern",
                  "inputs", "subject", "made", "parameters", "drawn"})
# grader/measured.py: what a grading measured beside its checks, written and read back by the report's JSON
# grader/findings.py: the findings a report holds (a diagnosis, an attribution, a sighting, a note), each with
# its own from_json
READERS = frozenset({"grader/results.py", "grader/report_json.py", "grader/measured.py", "grader/findings.py"})

# 'path:qualified.name:the dict read' -> what that dict is, where it is no report
NOT_REPORTS: dict[str, str] = {
    "grader/sandbox/template.py:Forked.wait:event": "the template server's event for a worker: its exit status",
    "grader/judging/diagnosis.py:diagnose:s": "a failing check's signature (grader.judging.signatures)",
    "grader/authoring/adequacy.py:matrix:v": "a bug's row of the adequacy matrix: the checks that catch it",
    "grader/authoring/adequacy.py:render:bug": "a bug's row of the adequacy matrix",
    "grader/gradebook/cells.py:performance:perf": "the report's performance record (grader.grading.performance)",
    "grader/gradebook/cells.py:performance:entry": "a performance entry: a component's timing",
    "grader/batch/export.py:comment:row": "a grades.csv row",
    "grader/batch/regrade.py:load_overrides:row": "a row of the overrides file",
    "grader/batch/regrade.py:write_changes:r": "a changes.csv row (regrade.changes)",
    "grader/batch/html.py:write_class:summary": "the class summary (grader.batch.summary.summarise's data)",
    "grader/batch/html.py:_plots:summary": "the class summary",
    "grader/batch/html.py:_plots:c": "a component's line of the class summary",
    "grader/batch/summary.py:summarise:g": "a row of the summary's public_gap",
    "grader/batch/summary.py:render:summary": "the class summary",
    "grader/batch/summary.py:render:c": "a component's line of the class summary",
    "grader/batch/summary.py:render:g": "a row of the summary's public_gap",
    "grader/gradescope/results.py:results:data": "Gradescope's results.json (grader.batch.outputs.gradescope)",
    "grader/gradescope/results.py:results:test": "a test of Gradescope's results.json",
    "grader/batch/run.py:write_student:record": "the student's files to write: the report, the batch's record, "
                                                 "the feedback (grader.batch.run._Run.finish)",
    "grader/batch/lms.py:kind_and_late:found": "a Canvas file name matched (its `late` mark)",
    "grader/batch/summary.py:render:f": "a row of the class summary's flagged lines",
    "grader/course.py:_component:c": "a component's table in course.toml",
    "grader/course.py:load:policy": "course.toml's [policy] table",
    "grader/sandbox/child/profile.py:inputs:shape": "the sizes the timing stage draws its inputs at",
    "grader/sandbox/child/worker.py:Worker.op_import:req": "the grader's request to import the submission",
    "grader/suite/remote.py:Submission.reset:answer": "the worker's answer to a reset",
    "grader/batch/summary.py:_flagged:f": "a row of the class summary's flagged lines",
    "grader/render/review.py:summary_row:f": "a flagged line of a held component in the class summary",
    "grader/interactive/repro/script.py:stored_body:c": "a stored case of the course's expected outputs (.pt)",
    "grader/sandbox/child/standins/calls.py:Call.backward:answer":
        "the grader's answer to a backward call of a stand-in",
    "grader/sandbox/child/standins/standin.py:Link.make:node": "a reference part's tree, as the grader describes it",
    "grader/sandbox/child/standins/standin.py:Link.populate:node":
        "a reference part's tree, as the grader describes it",
    "grader/sandbox/host.py:Sandbox.request:e": "the worker's account of an exception it raised",
    "grader/suite/handle.py:Remote.parameters:self.owner._request({'op': 'params', 'target': self})":
        "the worker's answer to a request for a module's parameters",
    "grader/suite/placement.py:bounded:answer": "the worker's answer to a placed run",
}


def _read(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(the dict, the key) where `node` reads a dict by one of KEYS."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
            and isinstance(node.slice, ast.Constant) and node.slice.value in KEYS:
        return node.value, node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in KEYS:
        return node.func.value, node.args[0].value
    return None


def reads(package: Path = GRADER) -> dict[str, set[str]]:
    """'path:qualified.name:the dict' -> the KEYS it is read by, in every module of `package` but READERS."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        if rel in READERS:
            continue
        todo: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text(encoding="utf-8")), "")]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                scoped = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                todo.append((child, f"{prefix}{child.name}." if scoped else prefix))  # type: ignore[attr-defined]
                if (read := _read(child)) is not None:
                    found.setdefault(f"{rel}:{prefix.rstrip('.')}:{ast.unparse(read[0])}", set()).add(read[1])
    return found


def test_no_module_but_the_reports_own_reads_a_report_by_its_keys():
    unexplained = {k: v for k, v in reads().items() if not NOT_REPORTS.get(k, "").strip()}
    assert not unexplained, (
        "a report read by string: read the typed Report (grader.report_json.from_json, or graded for a batch's "
        "document), or, where the dict is no report, say what it is in NOT_REPORTS:\n"
        + "\n".join(f"  {k}: {', '.join(sorted(v))}" for k, v in sorted(unexplained.items())))


def test_the_list_names_only_dicts_still_read():
    done = sorted(set(NOT_REPORTS) - set(reads()))
    assert not done, f"no longer read by those keys, take them out of NOT_REPORTS: {done}"


def test_the_reader_finds_reads_and_leaves_writes(tmp_path):
    package = tmp_path / "grader"
    package.mkdir()
    (package / "results.py").write_text("def f(report):\n    return report['score']\n")
    (package / "m.py").write_text(
        "def total(report):\n    return report['score'] + report.get('max_score', 0)\n\n\n"
        "class C:\n    def hidden(self, t):\n        return [x for x in t if x.get('hidden')]\n\n\n"
        "def write(out, c):\n    out['score'] = 1\n    return c['name'], c[0], out.pop('reason', '')\n")
    assert reads(package) == {"grader/m.py:total:report": {"score", "max_score"},
                              "grader/m.py:C.hidden:x": {"hidden"}, "grader/m.py:write:out": {"reason"}}
