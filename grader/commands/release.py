"""`grade release DIR`: write the student kit to DIR, a new or empty folder outside the kit; `--update`:
bring a kit already handed out to this release without losing a student's work."""

import time
from pathlib import Path

from grader.course import find_course
from grader.usage import UsageParser


class Shown:
    """grader.authoring.release.Steps drawn with rich: a live bar on a terminal (the bug table's check
    is the long step: a bug at a time), elsewhere (a pipe, CI's log) one line per step."""

    def __init__(self, console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console, self.live = console, console.is_terminal
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
        self.task = None

    def __enter__(self):
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc):
        if self.live:  # a Progress never started prints an empty line when stopped
            self.progress.stop()

    def step(self, what: str, total: int | None = None) -> None:
        if not self.live:
            self.console.print(f"{what} ...", markup=False, highlight=False)
            return
        if self.task is not None:
            self.progress.update(self.task, visible=False)
        self.task = self.progress.add_task(what, total=total)

    def advance(self, item: str) -> None:
        if self.live and self.task is not None:
            self.progress.advance(self.task)


def main(argv: list[str]) -> int:
    from rich.console import Console

    p = UsageParser(prog="grade release", description="Write the student kit (stubs, grader, public tier, "
                    "course.toml without hidden material) to DIR, a new or empty folder outside the kit; with "
                    "--update, bring the kit in DIR, handed out earlier, to this release.")
    p.add_argument("dir", metavar="DIR", help="where to write the student kit")
    p.add_argument("--update", action="store_true",
                   help="DIR holds a kit written by grade release (a student's copy, or the repository students "
                        "pull from): replace its kit files by this release's and add the new ones, keeping every "
                        "assignment file a student edited and every file they added; prints what changed")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    console, start = Console(highlight=False), time.monotonic()  # stderr: the error alone, one line
    with Shown(console) as shown:
        shown.step("reading the course")
        from grader.authoring import release, update
        from grader.course import load as load_course

        course = load_course(find_course(args.course))
        if args.update:
            done = update.update_release(course=course, out=Path(args.dir), steps=shown)
        else:
            written = release.write_release(course=course, out=Path(args.dir), steps=shown)
    took = _duration(time.monotonic() - start)
    out = Console(highlight=False)
    if args.update:
        _show_update(out, done, Path(args.dir).resolve(), took)
        return 0
    from rich.markup import escape

    out.print(f"[green]wrote[/green] {len(written)} files to {escape(str(Path(args.dir).resolve()))} in {took}")
    out.print("Students install it with [bold]pip install -e .[/bold] there, then run [bold]grade assignment1[/bold]. "
              "A later change reaches them with [bold]grade release DIR --update[/bold].")
    return 0


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _show_update(console, done, out: Path, took: str) -> None:
    from rich.text import Text

    def listed(what: str, paths: list[str]) -> None:
        if paths:
            shown = ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")
            console.print(Text(f"{what} ({len(paths)}): {shown}"))

    console.print(Text(f"updated the kit in {out} in {took}"))
    listed("added", done.added)
    listed("replaced", done.replaced)
    listed("removed", done.removed)
    listed("kept as the student edited them", done.kept)
    listed("kept, though their stub changed (compare with the new stub's docstring)", done.stale_stubs)
    listed("edited kit files kept beside the new ones as FILE.before-update", done.set_aside)
    if not (done.added or done.replaced or done.removed):
        console.print("Nothing changed: the kit was this release already.")
    elif any(p == "pyproject.toml" for p in done.replaced):
        console.print("pyproject.toml changed: run pip install -e . again in the kit's venv.")
