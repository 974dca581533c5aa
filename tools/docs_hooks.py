"""The docs site's MkDocs hook (mkdocs.yml `hooks:`): what the pages would otherwise type and let rot.

- `{{ NAME }}` in a page is a figure computed here from the kit's own files (FIGURES): the bug
  table's size from its generated signatures (tests/grading/public/expected/bugs.json), the
  held-out reach from tests/kit/heldout_record.json run through the diagnosis as the report runs
  it, the limits from course.toml, the torch pin. An unknown name fails the build.
- `<!-- generated: cli -->`: the CLI reference, from the `grade` commands' own argparse parsers
  (every command, argument and flag, with its help and default).
- `<!-- generated: student-readme -->`: the student README that `grade release` writes
  (grader.authoring.readme), rendered with the kit's course: one source for both.
- `<!-- generated: changelog -->`: CHANGELOG.md.

tests/kit/docs_pages.py imports this module for the docs' tests (the parsers, the figures)."""

import argparse
import importlib
import json
import re
import shlex
import sys
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _kit_importable() -> None:
    """`tests.kit` importable (MkDocs puts sys.path back after loading a hook, so this runs when needed)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


FIGURE = re.compile(r"\{\{ (\w+) \}\}")
GENERATED = re.compile(r"<!-- generated: ([\w-]+) -->")


# the commands' parsers ----------------------------------------------------------------------

class _Captured(BaseException):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__()
        self.parser = parser


def _capture(module: str, argv: list[str]) -> argparse.ArgumentParser:
    """The parser `grader.commands.MODULE.main(argv)` builds, taken where it would parse: nothing runs."""
    from grader.usage import UsageParser

    original, intermixed = UsageParser.parse_args, UsageParser.parse_intermixed_args

    def grab(self, *args, **kwargs):
        raise _Captured(self)

    UsageParser.parse_args = grab  # type: ignore[method-assign]
    UsageParser.parse_intermixed_args = grab  # type: ignore[method-assign]  # grade translate's
    try:
        importlib.import_module(f"grader.commands.{module}").main(argv)
    except _Captured as captured:
        return captured.parser
    finally:
        UsageParser.parse_args = original  # type: ignore[method-assign]
        UsageParser.parse_intermixed_args = intermixed  # type: ignore[method-assign]
    raise RuntimeError(f"grader.commands.{module}.main built no parser")


@cache
def parsers() -> dict[str, argparse.ArgumentParser]:
    """`grade ...` -> its parser, for every command (cli.py's dispatch: a first word in COMMANDS is a
    command, anything else `grade assignmentN`); `grade nbgrader prepare` has a parser of its own."""
    from grader.commands import COMMANDS

    found = {"grade": _capture("grade", [])}
    for name in COMMANDS:
        found[f"grade {name}"] = _capture(name, [])
    found["grade nbgrader prepare"] = _capture("nbgrader", ["prepare"])
    return found


def parse(line: str) -> argparse.Namespace:
    """Parse a `grade ...` command line with the real parser; a usage error raises SystemExit(2)."""
    from grader.commands import COMMANDS

    argv = shlex.split(line, comments=True)
    assert argv and argv[0] == "grade", line
    argv = argv[1:]
    if argv[:2] == ["nbgrader", "prepare"]:
        return parsers()["grade nbgrader prepare"].parse_args(argv[2:])
    if argv and argv[0] == "translate":  # its sentences may follow its options
        return parsers()["grade translate"].parse_intermixed_args(argv[1:])
    if argv and argv[0] in COMMANDS:
        return parsers()[f"grade {argv[0]}"].parse_args(argv[1:])
    return parsers()["grade"].parse_args(argv)


def flags() -> dict[str, set[str]]:
    """Every command's option strings (but -h/--help), its subcommands' included."""
    out: dict[str, set[str]] = {}
    for name, parser in _all_parsers():
        out[name] = {o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")}
    return out


def _all_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for name, parser in parsers().items():
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def cli_reference() -> str:
    lines = []
    for name, parser in _all_parsers():
        formatter = parser._get_formatter()
        usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
        lines += [f"## {name}", "", _cell(parser.description or ""), "", "```text", usage, "```", "",
                  "| argument | default | what it does |", "|---|---|---|"]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices:
                    lines.append(f"| `{sub}` | | see [{name} {sub}](#{(name + ' ' + sub).replace(' ', '-')}) |")
                continue
            metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
            if action.choices and not action.metavar:
                metavar = "{" + ",".join(map(str, action.choices)) + "}"
            if action.option_strings:
                shown = ", ".join(action.option_strings) + ("" if action.nargs == 0 else f" {metavar}")
            else:
                shown = str(metavar)
            default = "" if action.default is None or action.default is False or action.required \
                or action.default == argparse.SUPPRESS else f"`{action.default}`"
            required = "required; " if action.required and action.option_strings else ""
            help_text = formatter._expand_help(action) if action.help else ""
            lines.append(f"| `{_cell(shown)}` | {_cell(default)} | {required}{_cell(help_text)} |")
        lines.append("")
    return "\n".join(lines)


# figures ------------------------------------------------------------------------------------

@cache
def figures() -> dict[str, str]:
    import tomllib

    from grader import load_course
    from grader.authoring.torch_pin import TORCH

    course = load_course(ROOT / "course.toml")
    where = {c.name: a for a, spec in course.assignments.items() for c in spec.components}
    bugs = json.loads((ROOT / "tests/grading/public/expected/bugs.json").read_text())
    per = Counter(where[entry["component"]] for entry in bugs.values())
    limits = tomllib.loads((ROOT / "course.toml").read_text()).get("limits", {})
    found = {"bugs_total": str(len(bugs)), "torch_pin": TORCH,
             "components": str(len(where)), "assignments": str(len(course.assignments)),
             **{f"bugs_{a}": str(per.get(a, 0)) for a in course.assignments},
             **{f"limit_{k}": str(v) for k, v in limits.items()},
             "limit_component_seconds": f"{course.limits.component_budget:g}"}  # set or not (grader.limits)
    found.update(_heldout(course))
    return found


def _heldout(course) -> dict[str, str]:
    """How far the diagnosis reaches on the held-out bugs, as tests/kit/unit/test_heldout.py measures it."""
    _kit_importable()
    from tests.kit.heldout import HELDOUT, RECORD, diagnosed

    record = json.loads(RECORD.read_text())
    own = table = elsewhere = 0
    for name, graded in record.items():
        named = diagnosed(course, name, graded)
        component = HELDOUT[name].component
        if component in named:
            own += 1
            table += not named[component].startswith("looks_like:")
        elsewhere += bool(set(named) - {component})
    return {"heldout_total": str(len(record)), "heldout_named": str(own), "heldout_by_table": str(table),
            "heldout_by_forensics": str(own - table), "heldout_elsewhere": str(elsewhere),
            "heldout_share": f"{100 * own / len(record):.0f}%"}


# generated blocks ---------------------------------------------------------------------------

def student_readme() -> str:
    from grader import load_course
    from grader.authoring.readme import readme_text

    text = readme_text(load_course(ROOT / "course.toml"))
    return text.split("\n", 1)[1]  # its title is the page's


def changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text().split("\n", 1)[1]


# what each [limits] key bounds (grader.limits.Limits has the keys and defaults): a key without a line
# here fails the build, so a new limit cannot go undocumented
LIMITS = {
    "timeout_seconds": "one request to the submission's process (build, load, forward, backward)",
    "startup_seconds": "the worker's own start (it imports torch)",
    "memory_mb": "the address space of the submission's process (with `--device cuda` on a GPU: its data)",
    "cpu_seconds": "CPU time of the submission's process",
    "processes": "processes of the submission's user",
    "file_size_mb": "the largest file it may write",
    "output_kb": "what the report keeps of its printing, per check",
    "scratch_mb": "what it may write (its folder, /tmp, HOME), in namespaces",
    "component_seconds": "all of a component's requests (its own time, not the grader's): past it, its checks time "
                         "out. Unset, a few deadlines, so that code answering each request just under its deadline "
                         "holds a grading for seconds; a check's own longer deadline (the training's) adds its excess",
    "grading_seconds": "all of a grading's requests",
    "isolation": '`"auto"` (the highest tier that works), `"namespaces"`, `"seccomp"` or `"process"`',
}


def limits_table() -> str:
    import tomllib
    from dataclasses import fields

    from grader.limits import COMPONENT_TIMEOUTS, Limits

    kit = tomllib.loads((ROOT / "course.toml").read_text()).get("limits", {})
    rows = ["| key | default | the kit's course | what it bounds |", "|---|---|---|---|"]
    for f in fields(Limits):
        if f.name == "source":
            continue
        if f.name not in LIMITS:
            raise KeyError(f"[limits] {f.name} has no description in tools/docs_hooks.py LIMITS")
        default = f'"{f.default}"' if isinstance(f.default, str) else f"{f.default:g}" if f.default is not None \
            else f"{COMPONENT_TIMEOUTS} x timeout_seconds"  # component_seconds, unset: grader.limits
        value = kit.get(f.name, "")
        shown = f'"{value}"' if isinstance(value, str) and value else str(value)
        rows.append(f"| `{f.name}` | `{default}` | {shown and f'`{shown}`'} | {LIMITS[f.name]} |")
    return "\n".join(rows)


def layout() -> str:
    """Every module and subpackage of grader/, with its docstring's first paragraph."""
    import ast

    rows = ["| path | what it is |", "|---|---|"]
    package = ROOT / "grader"
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if "__pycache__" in rel.parts:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        first = _cell(doc.split("\n\n")[0])
        shown = rel.parent.as_posix() + "/" if rel.name == "__init__.py" else rel.as_posix()
        rows.append(f"| `grader/{shown if shown != './' else ''}` | {first} |")
    return "\n".join(rows)


def tiers() -> str:
    """The kit's test tiers, as tests/kit/tiering.py defines them: each a directory of tests/kit/ and a marker."""
    _kit_importable()
    from tests.kit.tiering import TIERS

    return "\n".join(["| directory and marker | what its tests do |", "|---|---|",
                      *(f"| `tests/kit/{name}/`, `{name}` | {_cell(what)} |" for name, what in TIERS.items())])


BLOCKS = {"cli": cli_reference, "limits": limits_table, "layout": layout, "tiers": tiers,
          "student-readme": student_readme, "changelog": changelog}


def render(markdown: str) -> str:
    def block(m: re.Match) -> str:
        if m.group(1) not in BLOCKS:
            raise KeyError(f"no generated block {m.group(1)!r} (known: {', '.join(BLOCKS)})")
        return BLOCKS[m.group(1)]()

    def figure(m: re.Match) -> str:
        if m.group(1) not in figures():
            raise KeyError(f"no figure {m.group(1)!r} (known: {', '.join(sorted(figures()))})")
        return figures()[m.group(1)]

    return FIGURE.sub(figure, GENERATED.sub(block, markdown))


def on_page_markdown(markdown, page, config, files):
    return render(markdown)
