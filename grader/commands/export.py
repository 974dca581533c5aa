"""`grade export canvas|moodle GRADES ...`: a batch's grades.csv into the sheet Canvas or Moodle imports."""

from pathlib import Path

from grader.usage import UsageParser

ROSTER = ("the class roster (student ids to Canvas and Moodle identities), for grades of folders or Gradescope; "
          "default: roster.csv beside GRADES, which `grade batch --roster` keeps there")


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
    c.add_argument("--roster", metavar="FILE", help=ROSTER)
    m = lms.add_parser("moodle", help="fill Moodle's offline grading worksheet (Grade, Feedback comments)")
    m.add_argument("grades", metavar="GRADES", help="grades.csv of `grade batch`")
    m.add_argument("--worksheet", required=True, metavar="WORKSHEET.csv",
                   help="the grading worksheet Moodle's assignment downloaded")
    m.add_argument("--out", metavar="FILE", help="the filled worksheet (default: moodle-import.csv beside GRADES)")
    m.add_argument("--roster", metavar="FILE", help=ROSTER)
    return p


def main(argv: list[str]) -> int:
    from grader.batch import export, roster
    from grader.batch.outputs import write_atomic
    from grader.course_table import ConfigError
    args = parser().parse_args(argv)
    grades = Path(args.grades)
    kept = grades.parent / "roster.csv"
    mapping = roster.load(Path(args.roster)) if args.roster else (
        roster.load(kept, str(kept)) if kept.is_file() else None)
    if args.lms == "canvas":
        filled = export.canvas(grades, Path(args.gradebook), args.column, mapping)
    else:
        filled = export.moodle(grades, Path(args.worksheet), mapping)
    out = Path(args.out) if args.out else grades.parent / f"{args.lms}-import.csv"
    if not out.parent.is_dir():
        raise ConfigError(f"--out: the folder of {str(out)!r} does not exist")
    if not filled.filled:
        raise ConfigError(nothing_written(filled, grades, args.lms, mapping is not None))
    write_atomic(out, filled.text)
    for line in filled.unmatched:
        print(line)
    print(f"{filled.filled} grades written to {out}; import it into {args.lms.capitalize()}.")
    return 0


def nothing_written(filled, grades: Path, lms: str, rostered: bool) -> str:
    """Why no grade went into the sheet: one line (grader.batch.export.Filled's counts)."""
    sheet = "gradebook" if lms == "canvas" else "worksheet"
    if not filled.graded:
        return f"no grade written: {grades.name} has no student"
    if filled.unidentified == filled.graded:
        how = ("the roster gives none of them a " + ("Canvas identity (canvas_id, sis_id, canvas_login)"
               if lms == "canvas" else "Moodle identity (moodle_id, email)")) if rostered else (
               "they were graded from folders, not a download of the LMS: map them with a roster (grade batch "
               "--roster FILE, or grade export --roster FILE)")
        return f"no grade written: none of the {filled.graded} students of {grades.name} has an LMS identity; {how}"
    return (f"no grade written: none of the {filled.graded} students of {grades.name} is in the {sheet} "
            f"({filled.graded - filled.unidentified} with an identity that it does not hold); is it this "
            f"class's {sheet}?")
