"""Grade one submission for one assignment: stage it, run the suites, attribute failures, score.

A grading is one GradingRun (grader.grading.run) taken through the stages of grader.grading.stages:

    run_checks -> attribute -> shrink -> measure -> judge_forbidden -> collect   (the worker running)
    score -> diagnose                                                            (the sandbox closed)
    report                                                                       (the Report, built once)
"""

from pathlib import Path

from grader.course import Assignment, Course
from grader.course_table import ConfigError
from grader.grading import stages
from grader.grading.run import GradingRun, Options, Services
from grader.grading.suites import frozen_heap, one_intra_op_thread, suite_files
from grader.results import Report, Tier
from grader.sandbox.host import Sandbox
from grader.sandbox.template import Template

WITH_WORKER = (stages.run_checks, stages.attribute, stages.shrink, stages.measure, stages.judge_forbidden,
               stages.collect)
AFTER_WORKER = (stages.score, stages.diagnose)


def start_sandbox(*, course: Course, assignment: Assignment, submission: Path, device: str = "cpu",
                  template: Template | None = None) -> Sandbox:
    """Stage the submission and start its worker. Cheap and torch-free for the CPU: call it first,
    so the worker imports torch while this process imports pytest, Hypothesis and torch. `device`:
    as given to grade_submission; "cuda", where this process sees a CUDA device, trades the
    worker's address-space limit, which CUDA cannot run under, for a data limit of the same size.
    `template`: a started grader.sandbox.template.Template to fork the worker from. `assignment`: as the
    front door resolved it from its name (course.assignment), once."""
    submission = Path(submission).resolve()
    if not submission.is_dir():
        raise ConfigError(f"submission directory {str(submission)!r} does not exist")
    if Tier.PUBLIC not in suite_files(course, assignment.name):
        raise ConfigError(f"no grading suite for {assignment.name}: {course.suites / Tier.PUBLIC} has no "
                          f"test_{assignment.name}.py")
    staged = {a.name: list(a.files) for a in course.closure(assignment.name)}
    sandbox = Sandbox(submission, staged, course.limits, template=template, gpu=_gpu(device) is not None)
    sandbox.start()
    return sandbox


def grade_submission(*, course: Course, assignment: Assignment, submission: Path, sandbox: Sandbox | None = None,
                     options: Options | None = None, services: Services | None = None) -> Report:
    """Run the suites of `assignment` on `submission` and score them.

    The checks of a composite whose parts fail are re-run with the reference's versions of
    those parts swapped in, and that run decides (grader.judging.attribution). Every check runs on the
    CPU; with `device` "cuda" the GPU tier runs too, where this process sees a CUDA device (the
    submission's process is not asked), and is reported skipped elsewhere. `sandbox`: one
    started by start_sandbox for the same submission (closed here). `options`: how to grade
    (grader.grading.run.Options: device, only); `services`: what a warm grader lends
    (grader.grading.run.Services: template, helper, cost, reuse, known)."""
    options, services = options or Options(), services or Services()
    sandbox = sandbox or start_sandbox(course=course, assignment=assignment, submission=submission,
                                       device=options.device, template=services.template)
    with one_intra_op_thread(), frozen_heap():
        return _grade(course, assignment, Path(submission).resolve(), sandbox, options, services)


def _grade(course: Course, assignment: Assignment, submission: Path, sandbox: Sandbox, options: Options,
           services: Services) -> Report:
    with _open(course, assignment, submission, sandbox, options, services) as run:
        for stage in WITH_WORKER:
            stage(run)
    for stage in AFTER_WORKER:
        stage(run)
    return stages.report(run)


def _open(course: Course, assignment: Assignment, submission: Path, sandbox: Sandbox, options: Options,
          services: Services) -> GradingRun:
    """The run, of `assignment` narrowed to --only's checks (grader.grading.only), holding `sandbox` from
    here on (closed here where the run cannot be opened)."""
    from grader.grading.only import narrow
    from grader.suite.remote import Submission

    try:
        spec = narrow(assignment, options.only) if options.only else assignment
        # the instructors' tier: the reference tree is there too
        has_reference = Tier.HIDDEN in suite_files(course, assignment.name)
        gpu = _gpu(options.device)
        student: Submission = Submission(sandbox, gpu, course.reference if has_reference else None)
    except BaseException:
        sandbox.close()
        raise
    student.forbidden = sorted({api for comp in spec.components for api in comp.forbidden})
    return GradingRun(course, spec, submission, options, gpu, has_reference, sandbox=sandbox, student=student,
                      services=services)


def _gpu(device: str) -> str | None:
    """The device the GPU tier runs on: "cuda" when asked for and this process sees a CUDA device.
    Decided here, never by the submission's process (which may hide or fake one)."""
    if device != "cuda":
        return None
    import torch

    return "cuda" if torch.cuda.is_available() and torch.cuda.device_count() > 0 else None
