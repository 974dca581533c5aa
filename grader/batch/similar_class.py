"""`grade similarity`: the batch's similarity check on its own, without grading, and across terms.

The submissions are found as `grade batch` finds them (grader.batch.collect: a folder or zip per
student, nbgrader's layout, an LMS download) and compared by grader.batch.similarity. Earlier terms'
submissions (each folder of `against`) are compared with this term's, never with each other: named
"FOLDER/student", they cannot be taken for this term's students. Nothing is run: the files are read.
The outputs, in OUT: similarity.json (what summary.json's "similarity" holds, with the counts),
similarity.txt (the summary's box) and similarity.html (class.html's groups and pairs).
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grader.batch import collect, lms, outputs, similarity
from grader.course import Course
from grader.course_table import ConfigError


@dataclass
class Found:
    """What `grade similarity` found: summary.json's "similarity" (`listed`) and who was read."""

    listed: dict
    students: int = 0  # of this term, with files to compare
    earlier: int = 0  # of earlier terms
    unreadable: list[str] = field(default_factory=list)  # submissions with none of the assignment's files

    def to_json(self) -> dict:
        return {**self.listed, "students": self.students, "earlier": self.earlier, "unreadable": self.unreadable}


@dataclass
class Options:
    """`grade similarity`'s options: the earlier terms' folders, the share that lists a pair, the
    processes that fingerprint, where the progress goes."""

    against: tuple[Path, ...] = ()
    threshold: float = similarity.THRESHOLD
    jobs: int = 1
    console: Console | None = None


def run_similarity(*, course: Course, assignment: str, root: Path, out: Path, options: Options | None = None) -> Found:
    """Compare the submissions under `root` (and those under each of `options.against` with them) for
    `assignment`; write the outputs into `out`. Bad input (a folder missing or empty, an unknown
    assignment, copydetect missing, two earlier folders of one name) raises ConfigError."""
    options = options or Options()
    spec = course.assignment(assignment)
    why = similarity.available()
    if why:
        raise ConfigError(why)
    names = [p.name for p in options.against]
    if len(set(names)) != len(names):
        raise ConfigError(f"--against: two folders named {next(n for n in names if names.count(n) > 1)!r}")
    work = Path(tempfile.mkdtemp(prefix="grade-similarity-"))
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=options.console or Console(stderr=True), transient=False)
    try:
        with progress:
            read = _read(root, "", course, assignment, work / "term", progress)
            sources = {s: files for s, files in read.items() if files}
            if not sources:
                raise ConfigError(f"DIR: no submission in {str(root)!r} holds any of {assignment}'s files")
            for i, folder in enumerate(options.against):
                read.update(_read(folder, f"{folder.name}/", course, assignment, work / str(i), progress))
            earlier = {s: files for s, files in read.items() if files and s not in sources}
            tasks: dict[str, object] = {}

            def told(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(stage, total=total)
                progress.update(tasks[stage], completed=done)  # type: ignore[arg-type]

            pairs = similarity.compare(sources=sources, stubs=similarity.read(course.assignments_dir, assignment,
                                                                              spec.files),
                                       threshold=options.threshold, earlier=earlier, progress=told, jobs=options.jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = Found({"threshold": options.threshold, "min_match_tokens": similarity.MIN_MATCH,
                   "groups": similarity.groups(pairs), "pairs": pairs}, students=len(sources), earlier=len(earlier),
                  unreadable=sorted(s for s, files in read.items() if not files))
    write(out, assignment, found)
    return found


def _read(root: Path, prefix: str, course: Course, assignment: str, work: Path,
          progress: Progress) -> dict[str, dict[str, str]]:
    """student (with `prefix`) -> the assignment's files ({} where none), of every submission under `root`."""
    root, _ = lms.stage(root, work / "lms")
    sources = collect.find(root, course, assignment)
    task = progress.add_task(f"reading {prefix or 'this term'}", total=len(sources))
    read = {}
    for i, source in enumerate(sources):
        entry = collect.prepare(source, course=course, assignment=assignment, work=work / str(i))
        tree = entry.tree
        read[prefix + entry.student] = similarity.read(tree, assignment, course.assignment(assignment).files) \
            if tree else {}
        progress.advance(task)
    return read


def write(out: Path, assignment: str, found: Found) -> None:
    """similarity.json, similarity.txt and similarity.html in `out`."""
    from grader.batch import html, summary

    out.mkdir(parents=True, exist_ok=True)
    outputs.write_atomic(out / "similarity.json", json.dumps({"assignment": assignment, **found.to_json()},
                                                             indent=2) + "\n")
    recorder = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    recorder.print(summary._similar(found.listed, "similarity.json", "similarity.html"))
    outputs.write_atomic(out / "similarity.txt", recorder.export_text())
    outputs.write_atomic(out / "similarity.html", html.similarity_page(assignment, found.to_json()))
