"""PyTorch's own warnings raised in the student's code reach the terminal report (issue 52), one line
each, from passing checks too: the scheduler stepped before the optimizer is warned of by PyTorch, which
goes on and only skips the schedule's first rate."""

import io
from pathlib import Path

from rich.console import Console

from grader import course as config
from grader.judging import scoring, warned
from grader.render import report
from grader.results import Outcome
from tests.kit.conftest import ROOT

COURSE = config.load(ROOT / "course.toml")
A4 = COURSE.assignment("assignment4")
# as the worker printed it, grading the table's train_epoch_steps_the_scheduler_before_the_optimizer
SCHEDULER = ("/scratch/submission/assignment4/training.py:111: UserWarning: Detected call of `lr_scheduler.step()` "
             "before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: "
             "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping "
             "the first value of the learning rate schedule. See more details at "
             "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate\n  scheduler.step()\n")


def _graded(outputs: dict[str, str]):
    results = {chk.id: Outcome("passed", output=outputs.get(chk.id, "")) for c in A4.components for chk in c.checks}
    return scoring.score(COURSE, A4, Path("/sub"), scoring.Judged(results), 1.0)


def _text(graded, width: int = 100) -> list[str]:
    out = io.StringIO()
    report.render(graded, Console(file=out, width=width, no_color=True, force_terminal=False))
    return out.getvalue().splitlines()


def test_a_warning_in_a_passing_check_is_one_line_of_the_report():
    graded = _graded({"train_epoch_steps_the_scheduler_once_per_batch": SCHEDULER,
                      "end_to_end_training_lowers_the_loss": SCHEDULER})  # the same warning twice: said once
    message = SCHEDULER.split(": ", 2)[2][:warned.MAX_MESSAGE]
    assert warned.found(graded) == [{"check": "train_epoch_steps_the_scheduler_once_per_batch",
                                     "component": "train_epoch", "file": "assignment4/training.py", "line": 111,
                                     "category": "UserWarning", "message": message}]
    lines = _text(graded, width=200)
    said = [line for line in lines if line.startswith("Warning in")]
    assert said == ["Warning in train_epoch (assignment4/training.py:111, during "
                    "train_epoch_steps_the_scheduler_once_per_batch): UserWarning: Detected call of "
                    "`lr_scheduler.step()` before `optimizer.step()`."], lines


def test_no_warning_no_line():
    assert not any(line.startswith("Warning in") for line in _text(_graded({})))
