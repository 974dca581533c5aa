"""`grade export canvas|moodle GRADES ...`: a batch's grades.csv into the sheet Canvas or Moodle imports."""

from pathlib import Path

from grader.commands import UsageParser


def parser() -> UsageParser:
    p = UsageParser(prog="grade export", description="Write the grades of `grade batch` (its grades.csv, read "
                    "from a Canvas or Moodle download, so that it has lms_id) into the sheet the LMS imports.")
    lms = p.add_subparsers(dest="lms", required=True, metavar="LMS", parser_class=UsageParser)
    c = lms.add_parser("canvas", help="fill a column of Canvas's exported gradebook (Grades > Export)")
    c.add_argument("grades", metavar="GRADES", help="grades.csv of `grade batch`")
    c.add_argument("--gradebook", required=True, metavar="EXPORT.csv", help="the gradebook Canvas exported")
    c.add_argument("--column", required=True, metavar="COLUMN",
                   help="the assignment's column, e.g. 'Assignment 1' or 'Assignment 1 (12345)'")
    c.add_argument("--out", metavar="FILE", help="the filled gradebook (default: canvas-import.csv beside GRADES)")
    m = lms.add_parser("moodle", help="fill Moodle's offline grading worksheet (Grade, Feedback comments)")
    m.add_argument("grades", metavar="GRADES", help="grades.csv of `grade batch`")
    m.add_argument("--worksheet", required=True, metavar="WORKSHEET.csv",
                   help="the grading worksheet Moodle's assignment downloaded")
    m.add_argument("--out", metavar="FILE", help="the filled worksheet (default: moodle-import.csv beside GRADES)")
    return p


def main(argv: list[str]) -> int:
    from grader.batch import export
    from grader.batch.outputs import write_atomic
    from grader.course import ConfigError

    args = parser().parse_args(argv)
    grades = Path(args.grades)
    if args.lms == "canvas":
        filled = export.canvas(grades, Path(args.gradebook), args.column)
    else:
        filled = export.moodle(grades, Path(args.worksheet))
    out = Path(args.out) if args.out else grades.parent / f"{args.lms}-import.csv"
    if not out.parent.is_dir():
        raise ConfigError(f"--out: the folder of {str(out)!r} does not exist")
    write_atomic(out, filled.text)
    for line in filled.unmatched:
        print(line)
    print(f"{filled.filled} grades written to {out}; import it into {args.lms.capitalize()}.")
    return 0
