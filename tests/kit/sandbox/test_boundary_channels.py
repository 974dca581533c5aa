"""The trust boundary, the report's newer channels (issue 43 and 44): what a failing check carries into
the report from the submission's process (the placement watch's frames, parameter names, the values
compared) stays bounded and inert in the JSON report and on the terminal, and shows nothing of the
course's files, whatever the submission makes them hold. Each case is a hostile submission graded end
to end."""

import json
import re

from tests.kit.conftest import ONE_SCREEN, ROOT, as_json, grade_report, mutant, report_lines

# every string a hostile submission below plants: ANSI escapes (clear the screen, red), rich markup
# (a style, a link), a C1 control character and a direction override, before a long tail
HOSTILE = "\\x1b[2J\\x1b[31m[bold red]PWNED[/bold red][link=file:///etc/passwd]here[/link]\\x9b\\r\\u202e"
CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # what must not reach a reader
JSON_LIMIT = 400_000  # bytes of a whole assignment's JSON report (a bug-free one is about 60 kB)
# a line of the hidden suite that a forged frame names by its path (the grader must not open it)
HIDDEN = ROOT / "tests" / "grading" / "hidden" / "test_assignment1.py"
HIDDEN_LINE = next(i for i, line in enumerate(HIDDEN.read_text().splitlines(), 1) if len(line.strip()) > 40)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _inert(report, *, planted: str = "PWNED"):
    """The JSON report is bounded, strict JSON, and holds no control character but newlines and tabs;
    the terminal report fits one screen, shows no escape and no markup applied (where the planted
    word shows, its markup shows beside it as text); nothing of the hidden suite's named line."""
    data = as_json(report)
    text = json.dumps(data, allow_nan=False)  # NaN or Infinity: not JSON (a browser's JSON.parse refuses it)
    assert len(text) < JSON_LIMIT, f"JSON report of {len(text)} bytes"
    bad = [s[:80] for s in _strings(data) if re.search(CONTROL, s)]
    assert not bad, f"control characters in the JSON report: {bad[:3]}"
    lines = report_lines(report)
    screen = "\n".join(lines)
    # one screen, and the panel that flags the submission's reach into the kit's modules where it has one: its
    # frame and first line, and up to two lines for each line flagged
    flagged = sum(2 + 2 * len(c["flagged"]) for c in data["components"] if c["flagged"])
    assert len(lines) <= ONE_SCREEN + flagged, f"{len(lines)} lines:\n{screen[:6000]}"
    assert not re.search(CONTROL, screen)
    for line in lines:
        if planted in line:
            # markup shown as text, not applied: its tag beside the word, whichever row the wrap left it on
            assert "[bold red]" in line or f"{planted}[/bold" in line or line.index(planted) < 12, line
    # the outputs made from the JSON (Gradescope's results.json, a batch's): bounded and inert as it is
    from grader.batch.outputs import gradescope
    from grader.gradescope.results import results

    for made in (results(data, execution_time=1.0), gradescope(data)):
        out = json.dumps(made, allow_nan=False)
        assert len(out) < JSON_LIMIT and not any(re.search(CONTROL, s)
                                                 for s in _strings(made)), len(out)
    hidden_line = HIDDEN.read_text().splitlines()[HIDDEN_LINE - 1].strip()
    assert len(hidden_line) > 10 and hidden_line not in screen and hidden_line not in text
    return data, lines


# LayerNorm makes a CPU tensor in forward (its placement check fails); the submission also replaces the
# kit's placement watch, in its own process, by one that reports frames of its own: 45 of each kind,
# 2 kB each of escapes and markup (what the protocol's 256 kB answer allows), naming a file of the
# hidden suite by its path (in LayerNorm's placed runs only: one component fails)
DEVICE_BUG = ("+ self.beta  # (..., d_model)", "+ self.beta * torch.ones(x.shape[-1])  # (..., d_model)")
FORGE_FRAMES = f'''

def _forge():
    import sys
    bad = "{HOSTILE}" + "A" * 1_000
    frames = [f"{HIDDEN}:{HIDDEN_LINE} in forward{{bad}}: {{bad}}" for _ in range(45)]
    for module in list(sys.modules.values()):
        watch = getattr(module, "Placement", None)
        if isinstance(watch, type) and hasattr(module, "on_a_second_device"):
            stray, real = module.Stray, watch.__torch_function__

            def forged(self, func, types, args=(), kwargs=None, real=real, stray=stray):
                if self.found is None and type(self.root).__name__ == "LayerNorm":
                    self.found = {{"function": bad, "created": frames, "attribute": bad, "met": frames,
                                  "device": bad}}
                    raise stray("forged")
                return real(self, func, types, args, kwargs)
            watch.__torch_function__ = forged


_forge()
'''


def test_forged_placement_frames_are_bounded_and_inert(tmp_path):
    """The frames of a stray CPU tensor come from the worker's watch, which the submission can replace:
    90 frames of 2 kB each, escapes and markup, a path into the hidden suite. The grader keeps what
    an honest watch sends at most (grader.suite.placement): a few frames, a few hundred characters each,
    control characters escaped; the file they name is never opened."""
    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [DEVICE_BUG]})
    with open(tree / "assignment1" / "layer_norm.py", "a") as f:
        f.write(FORGE_FRAMES)
    report = grade_report(tree, "assignment1", cached=False)
    data, lines = _inert(report)
    ln = next(c for c in data["components"] if c["name"] == "LayerNorm")
    placed = [t for t in ln["tests"] if t["status"] != "passed" and "devices" in t["message"]]
    assert placed, [t["id"] for t in ln["tests"] if t["status"] != "passed"]  # the placement check still fails
    assert all(len(json.dumps(t)) < 20_000 for t in placed), [len(json.dumps(t)) for t in placed]


# LayerNorm registers a parameter whose name is 120 kB of escapes and markup: the names check lists it
PARAMETER = (
    "        self.beta = nn.Parameter(torch.zeros(d_model))\n",
    "        self.beta = nn.Parameter(torch.zeros(d_model))\n"
    f"        self.register_parameter(\"{HOSTILE}\" + \"B\" * 16_000, nn.Parameter(torch.zeros(1)))\n")


def test_hostile_parameter_names_are_bounded_and_inert(tmp_path):
    """A parameter's name is the submission's text: the names check's `got` and `parameters` carry it.
    Bounded and inert in the JSON (grader.results.to_json) and on the terminal."""
    report = grade_report(mutant(tmp_path, {"assignment1/layer_norm.py": [PARAMETER]}), "assignment1", cached=False)
    data, _ = _inert(report)
    ln = next(c for c in data["components"] if c["name"] == "LayerNorm")
    named = [t for t in ln["tests"] if "parameters" in t]
    assert named and all(len(json.dumps(t)) < 20_000 for t in named), [len(json.dumps(t)) for t in named]


# LayerNorm returns NaN everywhere: the largest error is infinite
NAN = ("+ self.beta  # (..., d_model)", "+ self.beta * float('nan')  # (..., d_model)")


def test_non_finite_values_leave_the_json_strict(tmp_path):
    """A NaN output makes the largest error infinite: the JSON report stays JSON (no NaN or
    Infinity tokens, which strict parsers refuse): non-finite numbers are written as the strings
    "nan", "inf", "-inf", as the examples' data are (grader.suite.example)."""
    report = grade_report(mutant(tmp_path, {"assignment1/layer_norm.py": [NAN]}), "assignment1", cached=False)
    data, _ = _inert(report, planted="\x00never")
    errors = [t["max_abs_error"] for c in data["components"] for t in c["tests"] if "max_abs_error" in t]
    assert "inf" in errors, errors
