"""Bad input to the kit: one line naming the bad value, exit status 2, never a traceback."""

import pytest

from tests.kit.conftest import run_grade


def one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grade: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for word in words:
        assert word in lines[0], lines[0]


def test_unknown_assignment():
    one_line_error(run_grade("assignment9"), "'assignment9'")


def test_missing_submission_directory(tmp_path):
    one_line_error(run_grade("assignment1", "--submission", str(tmp_path / "nowhere")), "nowhere")


def test_missing_course_file(tmp_path):
    one_line_error(run_grade("assignment1", "--course", str(tmp_path / "course.toml")), "course.toml")


@pytest.mark.parametrize("text, named", [
    ("[course\nname = 1\n", "not valid TOML"),
    ('[course]\nname = "x"\nlanguage = "fr"\n', "course.language"),
    ('[course]\nname = "x"\n[limits]\ntimeout_seconds = -3\n', "limits.timeout_seconds"),
    ('[course]\nname = "x"\n[a1]\nfiles = ["x.py"]\n[a1.LayerNorm]\nfile = "y.py"\npoints = 1\npublic = ["t"]\n',
     "a1.LayerNorm.file"),
    ('[course]\nname = "x"\n[a1]\nfiles = ["x.py"]\n[a1.LayerNorm]\nfile = "x.py"\npoints = "ten"\npublic = ["t"]\n',
     "a1.LayerNorm.points"),
])
def test_broken_course_file(tmp_path, text, named):
    path = tmp_path / "course.toml"
    path.write_text(text)
    one_line_error(run_grade("assignment1", "--course", str(path)), named)


def test_json_into_a_missing_folder(tmp_path):
    one_line_error(run_grade("assignment1", "--json", str(tmp_path / "no" / "r.json")), "--json")


def test_unknown_device():
    proc = run_grade("assignment1", "--device", "tpu")
    assert proc.returncode == 2 and "tpu" in proc.stderr and "Traceback" not in proc.stderr

