"""course.toml, parsed once into frozen dataclasses; any bad key or value is a ConfigError."""

import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from grader.course_table import ConfigError, _Table
from grader.late_policy import Late, read_late
from grader.limits import Limits
from grader.results import Tier
from grader.reveal import Reveal

# a forbidden API: a dotted name under torch, optionally "(keyword)" (forbidden only when that keyword is given)
_API = re.compile(r"torch(\.\w+)+(\(\w+\))?")


@dataclass(frozen=True)
class Check:
    id: str
    tier: Tier
    weight: float = 1.0


@dataclass(frozen=True)
class Component:
    name: str
    assignment: str
    points: float
    file: str
    checks: tuple[Check, ...]
    depends: tuple[str, ...] = ()
    isolated: tuple[str, ...] = ()  # checks run with the reference's versions of `depends` swapped in
    forbidden: tuple[str, ...] = ()  # torch APIs its code must not use (grader.judging.forbidden)


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    files: tuple[str, ...]
    requires: tuple[str, ...]
    components: tuple[Component, ...]

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.components)


# what grader.sandbox.child.profile knows how to time (its KINDS; grader.grading.performance checks they agree)
# top-level tables that are not assignments
RESERVED = ("course", "limits", "hypothesis", "performance", "feedback", "policy", "late")
# [policy] flagged: what a flag (code that reaches torch's or the kit's internals without naming them,
# grader.judging.forbidden) does to its component: "hold" its points at 0 for review (the default: a flag is a
# score, issue 51), or "count" them (the flag is only reported)
FLAGGED = ("hold", "count")
PERFORMANCE_KINDS = ("attention", "multi_head_attention", "encoder_layer")


@dataclass(frozen=True)
class Performance:
    """[performance]: components timed for feedback (grader.grading.performance), and what that is worth."""
    components: dict[str, str]  # component name -> what it is timed as, one of PERFORMANCE_KINDS
    points: float = 0.0  # 0: informational; else earned per component within max_ratio of the baseline
    max_ratio: float = 4.0
    repeat: int = 5


@dataclass(frozen=True)
class Course:
    path: Path
    name: str
    reference: Path
    assignments_dir: Path
    suites: Path
    limits: Limits
    max_examples: int
    hidden_seed: int
    assignments: dict[str, Assignment] = field(default_factory=dict)
    performance: Performance | None = None
    reveal: Reveal = Reveal.FIX  # [feedback] reveal: how much a report tells of a diagnosed bug
    flagged: str = "hold"  # [policy] flagged: one of FLAGGED
    late: Late | None = None  # [late] (grader.late_policy): None where course.toml has none (no penalty)

    @property
    def root(self) -> Path:
        return self.path.parent

    def assignment(self, name: str) -> Assignment:
        if name not in self.assignments:
            raise ConfigError(f"unknown assignment {name!r}: {self.path.name} has {', '.join(self.assignments)}")
        return self.assignments[name]

    def closure(self, name: str) -> list[Assignment]:
        """The assignment and every one it requires, earliest first."""
        seen: list[str] = []

        def visit(n):
            for r in self.assignments[n].requires:
                visit(r)
            if n not in seen:
                seen.append(n)
        visit(name)
        return [self.assignments[n] for n in seen]


def load(path: Path) -> Course:
    path = Path(path)
    data = _read(path)
    top = _Table(path.name, "", data)
    course = top.table("course")
    root = path.resolve().parent
    name = course.get("name", "str", "course")
    reference = root / course.get("reference", "str", "solutions")
    assignments_dir = root / course.get("assignments", "str", "assignments")
    suites = root / course.get("suites", "str", "tests/grading")
    course.done()
    limits = _limits(top.table("limits"), path.name)
    hyp = top.table("hypothesis")
    max_examples, hidden_seed = hyp.get("max_examples", "int", 10), hyp.get("hidden_seed", "int", 1)
    hyp.done()
    assignments: dict[str, Assignment] = {}
    seen_components: set[str] = set()  # in the file's order: a component depends only on earlier ones
    for a_name in data:
        if a_name in RESERVED:
            continue
        if not a_name.isidentifier():
            raise ConfigError(f"{path.name}: {a_name}: an assignment name must be a Python identifier")
        assignments[a_name] = _assignment(top.table(a_name), a_name, assignments, seen_components)
    performance = _performance(top.table("performance"), seen_components) if "performance" in data else None
    feedback = top.table("feedback")
    reveal = feedback.get("reveal", "str", Reveal.FIX.value)
    if reveal not in {r.value for r in Reveal}:
        raise feedback.bad("reveal", reveal, " or ".join(f'"{r.value}"' for r in Reveal))
    feedback.done()
    policy = top.table("policy")
    flagged = policy.get("flagged", "str", "hold")
    if flagged not in FLAGGED:
        raise policy.bad("flagged", flagged, " or ".join(f'"{f}"' for f in FLAGGED))
    policy.done()
    top.done(extra=[*assignments, "late"])
    if not assignments:
        raise ConfigError(f"{path.name}: defines no assignments")
    return Course(path.resolve(), name, reference, assignments_dir, suites, limits, max_examples,
                  hidden_seed, assignments, performance, Reveal(reveal), flagged,
                  read_late(top, assignments))


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def _limits(lim: _Table, source: str) -> Limits:
    defaults = Limits()
    kinds = {float: "number", int: "int", str: "str", type(None): "number"}  # None: unset, a number if set
    limits = Limits(source=source, **{
        f.name: lim.get(f.name, kinds[type(getattr(defaults, f.name))], getattr(defaults, f.name))
        for f in fields(Limits) if f.name != "source"})
    if limits.isolation not in ("auto", "namespaces", "seccomp", "process"):
        raise lim.bad("isolation", limits.isolation, '"auto", "namespaces", "seccomp" or "process"')
    lim.done()
    return limits


def _assignment(a: _Table, a_name: str, earlier: dict[str, Assignment], seen_components: set[str]) -> Assignment:
    """[a_name]; adds its components' names to `seen_components`."""
    files = a.get("files", "names", required=True)
    requires = a.get("requires", "names", [])
    for r in requires:
        if r not in earlier:
            raise ConfigError(f"{a.file}: {a_name}.requires: unknown or later assignment {r!r}")
    components = []
    for c_name, c_data in a.data.items():
        if not isinstance(c_data, dict):
            continue
        c = a.table(c_name)
        if c_name in seen_components:
            raise ConfigError(f"{a.file}: {c.key}: component named twice")
        components.append(_component(c, c_name, a_name, files, seen_components))
        seen_components.add(c_name)  # after: a component that names itself in depends is refused
    title = a.get("title", "str", a_name)
    a.done(extra=[k for k, v in a.data.items() if isinstance(v, dict)])
    return Assignment(a_name, title, tuple(files), tuple(requires), tuple(components))


def _component(c: _Table, c_name: str, a_name: str, files: list[str], seen_components: set[str]) -> Component:
    file = c.get("file", "str", required=True)
    if file not in files:
        raise ConfigError(f"{c.file}: {c.key}.file: {file!r} is not in {a_name}.files")
    checks = _checks(c)
    depends = tuple(c.get("depends", "names", []))
    for d in depends:
        if d not in seen_components:
            raise ConfigError(f"{c.file}: {c.key}.depends: unknown or later component {d!r}")
    isolated = tuple(c.get("isolated", "ids", []))
    for check_id in isolated:
        if not any(x.id == check_id for x in checks):
            raise ConfigError(f"{c.file}: {c.key}.isolated: {check_id!r} is not one of its checks")
    forbidden = tuple(c.get("forbidden", "names", []))
    for api in forbidden:
        if not _API.fullmatch(api):
            raise c.bad("forbidden", api, 'a torch API: "torch.nn.LayerNorm", "torch.x.f(keyword)"')
    component = Component(c_name, a_name, c.get("points", "points", required=True), file,
                          tuple(checks), depends, isolated, forbidden)
    c.done()
    return component


def _checks(c: _Table) -> list[Check]:
    weights = c.table("weights")
    checks: list[Check] = []
    for tier in Tier:
        for check_id in c.get(tier, "ids", []):
            if any(x.id == check_id for x in checks):
                raise ConfigError(f"{c.file}: {c.key}.{tier}: check {check_id!r} listed twice")
            # weight 0: informational, reported and never counted (grader.judging.scoring)
            checks.append(Check(check_id, tier, weights.get(check_id, "points", 1.0)))
    weights.done()
    if not any(x.weight > 0 for x in checks):
        raise ConfigError(f"{c.file}: {c.key}.weights: every check has weight 0 (at least one must count)")
    if not checks:
        raise ConfigError(f"{c.file}: {c.key}: lists no checks")
    return checks


def _performance(perf: _Table, known: set[str]) -> Performance:
    timed = perf.table("components")
    for component, kind in timed.data.items():
        if component not in known:
            raise ConfigError(f"{timed.file}: {timed.where(component)}: no component named {component!r}")
        if kind not in PERFORMANCE_KINDS:
            raise timed.bad(component, kind, " or ".join(f'"{k}"' for k in PERFORMANCE_KINDS))
    done = Performance(dict(timed.data), perf.get("points", "points", 0.0), perf.get("max_ratio", "number", 4.0),
                       perf.get("repeat", "int", 5))
    perf.done()
    return done


def find_course(given: str | None) -> Path:
    """`--course`, else the nearest course.toml upward from here, else the kit's own."""
    if given:
        return Path(given)
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "course.toml").is_file():
            return folder / "course.toml"
    kit = Path(__file__).resolve().parents[1] / "course.toml"  # grader/ is one below the kit
    if kit.is_file():
        return kit
    raise ConfigError("no course.toml here or in any parent folder (pass --course PATH)")
