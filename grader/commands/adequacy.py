"""`grade adequacy --assignment assignmentN [--json PATH] [--html PATH]`: which checks catch which bugs."""

import json
from pathlib import Path

from grader.course import find_course
from grader.usage import UsageParser


def parser() -> UsageParser:
    p = UsageParser(prog="grade adequacy", description="Grade every entry of the course's table of classic bugs "
                    "(the suites' bugs.py) with both tiers of its component's checks, and report which checks "
                    "catch which bugs: first the checks that catch none, the bugs no hidden check catches and "
                    "the bugs the public checks cannot tell apart.")
    p.add_argument("--assignment", required=True, help="the assignment, e.g. assignment1")
    p.add_argument("--json", metavar="PATH", help="also write the matrix as JSON ('-' for stdout)")
    p.add_argument("--html", metavar="PATH", help="also write the matrix as an HTML page")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def main(argv: list[str]) -> int:
    from rich.console import Console

    from grader.authoring import adequacy
    from grader.course import load as load_course
    from grader.course_table import ConfigError
    args = parser().parse_args(argv)
    course = load_course(find_course(args.course))
    course.assignment(args.assignment)
    for option in ("json", "html"):
        where = getattr(args, option)
        if where and where != "-" and not Path(where).resolve().parent.is_dir():
            raise ConfigError(f"--{option}: the folder of {where!r} does not exist")
    found = adequacy.matrix(course, args.assignment)
    text = json.dumps({k: found[k] for k in ("checks", "bugs", "flags")}, indent=2) + "\n"
    if args.json == "-":
        print(text, end="")
    else:
        Console(width=min(Console().width, 100)).print(adequacy.render(found))
        if args.json:
            Path(args.json).write_text(text)
    if args.html:
        Path(args.html).write_text(adequacy.html(found))
    return 0
