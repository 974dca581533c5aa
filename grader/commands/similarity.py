"""`grade similarity DIR --assignment assignmentN`: list the submissions that share code, without grading."""

from pathlib import Path

from grader.commands import positive_int
from grader.commands.batch import percent, similarity_default
from grader.course import find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser


def parser() -> UsageParser:
    p = UsageParser(prog="grade similarity", description="List the pairs and groups of submissions in DIR that "
                    "share code (as grade batch does, without grading), this term's against each other and "
                    "against earlier terms' (--against).")
    p.add_argument("dir", metavar="DIR", help="the folder of submissions (as grade batch takes it)")
    p.add_argument("--assignment", required=True, help="the assignment compared, e.g. assignment1")
    p.add_argument("--out", metavar="OUT", default=".", help="where the outputs go (default: the current folder)")
    p.add_argument("--against", metavar="EARLIER_DIR", action="append", default=[],
                   help="a folder of an earlier term's submissions, compared with this term's, not with the other "
                        "earlier ones (repeat for several terms)")
    p.add_argument("--similarity", type=percent, default=similarity_default(), metavar="PERCENT",
                   help="list the pairs that share PERCENT%% of either's code or more (default %(default)g; the "
                        "stubs are not counted)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="processes that fingerprint the submissions (default 1)")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def main(argv: list[str]) -> int:
    from grader.course import load as load_course

    args = parser().parse_args(argv)
    course = load_course(find_course(args.course))
    course.assignment(args.assignment)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out: {args.out!r} is not a directory")
    for given in [args.dir, *args.against]:
        if not Path(given).is_dir():
            raise ConfigError(f"{'DIR' if given == args.dir else '--against'}: {given!r} is not a directory")

    from rich.console import Console

    from grader.batch import similar_class, summary

    console = Console(width=min(Console().width, 100))
    options = similar_class.Options(against=tuple(Path(a) for a in args.against), threshold=args.similarity / 100,
                                    jobs=args.jobs, console=console)
    found = similar_class.run_similarity(course=course, assignment=args.assignment, root=Path(args.dir), out=out,
                                         options=options)
    console.print(summary._similar(found.listed, "similarity.json", "similarity.html"))
    skipped = f"; {len(found.unreadable)} without the assignment's files" if found.unreadable else ""
    earlier = f" with {found.earlier} of earlier terms" if found.earlier else ""
    console.print(f"{found.students} submissions compared{earlier}{skipped}; {len(found.listed['pairs'])} pairs "
                  f"in {out / 'similarity.json'}, "
                  f"{out / 'similarity.txt'} and {out / 'similarity.html'}.")
    return 0
