"""`grade doctor`: which isolation tiers work on this machine, and why the others do not."""

import os
import sys

from rich.console import Console
from rich.table import Table

from grader.course import find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser


def tiers() -> list[tuple[str, str, str]]:
    """(tier, "works" or "refused", what it blocks here or why it is refused), strongest first."""
    from grader.sandbox import isolation
    from grader.sandbox.child.confine import landlock_abi

    def blocks(tier: str) -> str:
        return isolation.describe(tier).partition(": ")[2]

    rows = []
    why = isolation.unavailable()
    rows.append(("namespaces", "refused" if why else "works", f"unshare: {why}" if why else blocks("namespaces")))
    confined = isolation.confinement()
    rows.append(("seccomp", "refused", confined["error"]) if "error" in confined else
                ("seccomp", "works", blocks("seccomp")))
    abi, none = landlock_abi() if sys.platform == "linux" else (0, f"not Linux ({sys.platform})")
    rows.append(("  Landlock", f"ABI {abi}" if abi else "none",
                 "the seccomp tier's file rules" if abi else f"{none}: the seccomp tier reads as its user may"))
    rows.append(("process", "works", blocks("process")))
    return rows


def main(argv: list[str]) -> int:
    from grader.course import load as load_course
    from grader.sandbox import isolation

    p = UsageParser(prog="grade doctor", description="Say which isolation tiers work on this machine and which "
                                                     "one grading picks.")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    course = load_course(find_course(args.course))
    table = Table(title="isolation tiers here, strongest first", title_justify="left")
    table.add_column("tier", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("what it blocks, or why not")
    for tier, state, detail in tiers():
        table.add_row(tier, state, detail, style="green" if state == "works" else None)
    console = Console(highlight=False)
    console.print(table)
    user = "root (the submission runs as a user of its own)" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    console.print(f"grading user: {user}")
    try:
        chosen = isolation.choose(course.limits)
    except ConfigError as e:
        console.print(f"grading here: refused ({e})", markup=False)
        return 2
    wanted = os.environ.get(isolation.ENV_VAR) or course.limits.isolation
    console.print(f"grading here: {chosen} (asked: {wanted!r})", markup=False)
    exposed = isolation.protects_course(chosen, [course.reference, course.suites])
    console.print(f"the course is {'readable by submissions: ' + exposed if exposed else 'out of their reach'}; "
                  f"grade batch and Gradescope {'refuse' if exposed else 'accept'} this tier", markup=False)
    return 0
