"""`grade adequacy`: the matrix of which checks catch which bugs of the table, with its flags, on a copy
of the kit's suites whose bug table holds three LayerNorm entries (one twice under two names)."""

import json
import re
import shutil

from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, run_grade


def test_the_matrix_and_its_flags(tmp_path):
    suites = shutil.copytree(ROOT / "tests" / "grading", tmp_path / "suites",
                             ignore=shutil.ignore_patterns("__pycache__"))
    chosen = {"layer_norm_unbiased_variance": BUGS["layer_norm_unbiased_variance"],
              "layer_norm_unbiased_again": BUGS["layer_norm_unbiased_variance"],
              "layer_norm_default_eps_1e_12": BUGS["layer_norm_default_eps_1e_12"]}
    (suites / "bugs.py").write_text("from types import SimpleNamespace as Bug\n\nBUGS = {\n" + "".join(
        f"    {name!r}: Bug(component={b.component!r}, patches={b.patches!r}),\n" for name, b in chosen.items())
        + "}\nUNCAUGHT = {'*_stays_on_the_inputs_device': 'placement is not this table\\'s kind'}\n")
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    course = tmp_path / "course.toml"
    course.write_text(re.sub(r'^suites = "[^"]+"', f'suites = "{suites}"', text, flags=re.M))

    proc = run_grade("adequacy", "--assignment", "assignment1", "--json", "-", "--course", str(course))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    found = json.loads(proc.stdout)
    bugs, checks, flags = found["bugs"], found["checks"], found["flags"]
    assert set(bugs) == set(chosen)
    variance = bugs["layer_norm_unbiased_variance"]
    assert variance["component"] == "LayerNorm" and variance["named"] and variance["hidden"]
    assert "layer_norm_matches_torch" in variance["public"]
    assert not bugs["layer_norm_unbiased_again"]["named"]  # diagnosis cannot tell it from the first
    assert flags["same_public_signature"] == [["layer_norm_unbiased_variance", "layer_norm_unbiased_again"]]
    assert flags["no_hidden_check"] == ["layer_norm_default_eps_1e_12"]
    assert checks["layer_norm_matches_torch"] == {"tier": "public", "component": "LayerNorm", "catches": [
        "layer_norm_unbiased_variance", "layer_norm_unbiased_again"]}
    # no bug of this table is in another component: every check of theirs catches nothing
    assert "token_embedding_scales_by_sqrt_d_model" in flags["catches_nothing"]
    # unless bugs.py states why
    placement = [c for c in checks if c.endswith("_stays_on_the_inputs_device")]
    assert placement and not set(placement) & set(flags["catches_nothing"])
    assert flags["catches_nothing_for_a_stated_reason"] == {c: "placement is not this table's kind" for c in placement}
    caught = {c for b in bugs.values() for c in b["public"] + b["hidden"]}
    assert {c for c, v in checks.items() if v["catches"]} == caught

    # the text report leads with the flags; the page has a column per bug (in-process: one grade is enough)
    import io

    from rich.console import Console

    from grader.authoring import adequacy

    console = Console(width=80, file=io.StringIO(), record=True)
    console.print(adequacy.render({**found, "assignment": "assignment1"}))
    lines = console.export_text().splitlines()
    assert lines[1].startswith(f"{len(flags['catches_nothing'])} checks catch no bug of the table")
    assert max(map(len, lines)) <= 80
    page = adequacy.html({**found, "assignment": "assignment1"})
    assert page.count('<th class="bug">') == 3 and page.count('class="x"') == sum(map(len, (
        v["catches"] for v in checks.values())))
