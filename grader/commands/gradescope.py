"""`grade gradescope DIR --assignment assignmentN`: write DIR/autograder.zip for Gradescope."""

from pathlib import Path

from grader.course import find_course
from grader.usage import UsageParser


def main(argv: list[str]) -> int:
    from rich.console import Console
    from rich.markup import escape

    from grader.course import load as load_course
    from grader.gradescope.build import write_autograder

    p = UsageParser(prog="grade gradescope", description="Write DIR/autograder.zip: a Gradescope autograder "
                    "that grades one assignment with both tiers (upload it as the assignment's autograder).")
    p.add_argument("dir", metavar="DIR", help="where to write autograder.zip (created if missing)")
    p.add_argument("--assignment", required=True, help="the assignment it grades, e.g. assignment1")
    p.add_argument("--torch-index-url", metavar="URL", default="",
                   help="the package index setup.sh installs torch from (e.g. PyTorch's CPU-only index; "
                        "default: pip's own)")
    p.add_argument("--unsafe-process-isolation", action="store_true",
                   help="grade even where no isolation tier keeps the course out of the submissions' reach (a "
                        "kernel without seccomp filters; Gradescope's own container has one), with resource "
                        "limits only: submissions can then read the autograder's files, the reference included")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    path = write_autograder(course=load_course(find_course(args.course)), assignment=args.assignment,
                            out=Path(args.dir), torch_index_url=args.torch_index_url,
                            unsafe_process_isolation=args.unsafe_process_isolation)
    console = Console(highlight=False)
    console.print(f"[green]wrote[/green] {escape(str(path.resolve()))} ({path.stat().st_size >> 10} KiB)")
    console.print(f"Upload it as the autograder of {escape(args.assignment)} on Gradescope "
                  "(Autograder Configuration, Zip file upload).")
    return 0
