"""`grade release DIR`: write the student kit to DIR, a new or empty folder outside the kit."""

from pathlib import Path

from grader.commands import UsageParser, find_course


def main(argv: list[str]) -> int:
    from rich.console import Console
    from rich.markup import escape

    from grader import load_course
    from grader.authoring.release import write_release

    p = UsageParser(prog="grade release", description="Write the student kit (stubs, grader, public tier, "
                    "course.toml without hidden material) to DIR, a new or empty folder outside the kit.")
    p.add_argument("dir", metavar="DIR", help="where to write the student kit")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    out = Path(args.dir)
    written = write_release(course=load_course(find_course(args.course)), out=out)
    console = Console(highlight=False)
    console.print(f"[green]wrote[/green] {len(written)} files to {escape(str(out.resolve()))}")
    console.print("Students install it with [bold]pip install -e .[/bold] there, then run "
                  "[bold]grade assignment1[/bold].")
    return 0
