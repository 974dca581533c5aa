"""`grade similarity` (grader.commands.similarity over grader.batch.similar_class.run_similarity), run as
users run it: a class on disk, an earlier term beside it, the outputs read back."""

import json
import shutil

import pytest

from grader.batch import similarity
from tests.kit import generated_class
from tests.kit.conftest import run_grade

# a sandbox test, though it starts nothing itself: copydetect imports matplotlib, whose first import runs fc-list


def write_class(root, sources: dict[str, dict[str, str]]) -> None:
    for student, files in sources.items():
        for name, text in files.items():
            (root / student / "assignment1").mkdir(parents=True, exist_ok=True)
            (root / student / "assignment1" / name).write_text(text)


@pytest.fixture(scope="module")
def terms(tmp_path_factory):
    """This term (with a copy of an earlier term's student, "zed") and an earlier one (with copies inside it)."""
    tmp = tmp_path_factory.mktemp("terms")
    term = generated_class.generate("assignment1", 8, seed=11, copies=0.2, disguised=0.0)
    earlier = generated_class.generate("assignment1", 8, seed=12, copies=0.3, disguised=0.0)
    assert term.copied and earlier.copied
    term.sources["zed"] = earlier.sources["s00001"]
    write_class(tmp / "term", term.sources)
    write_class(tmp / "spring", earlier.sources)
    run = run_grade("similarity", str(tmp / "term"), "--assignment", "assignment1", "--out", str(tmp / "out"),
                    "--against", str(tmp / "spring"))
    assert run.returncode == 0, run.stderr
    return tmp, term, earlier, run


def test_this_term_is_compared_with_itself_and_the_earlier_one_not_the_earlier_with_itself(terms):
    tmp, term, earlier, run = terms
    found = json.loads((tmp / "out" / "similarity.json").read_text())
    listed = {tuple(p["students"]) for p in found["pairs"]}
    assert ("spring/s00001", "zed") in listed
    for copier, original in term.copied.items():
        assert tuple(sorted([copier, original])) in listed
    assert not [p for p in listed if all(s.startswith("spring/") for s in p)]
    assert (found["students"], found["earlier"]) == (len(term.sources), len(earlier.sources))
    # the same pairs as the batch's check lists for the two terms together, less the earlier term's own
    sources = {**term.sources, **{f"spring/{s}": f for s, f in earlier.sources.items()}}
    batch = similarity.compare(sources=sources, stubs=generated_class.stub_files("assignment1"),
                               threshold=similarity.THRESHOLD)
    assert found["pairs"] == [p for p in batch if not all(s.startswith("spring/") for s in p["students"])]
    assert found["groups"] == similarity.groups(found["pairs"])
    page = (tmp / "out" / "similarity.html").read_text()
    assert "spring/s00001 and zed" in page and "<mark>" in page
    assert "spring/s00001" in (tmp / "out" / "similarity.txt").read_text()
    assert "fingerprinting" in run.stdout + run.stderr  # the progress bars


@pytest.mark.parametrize(("args", "says"), [
    (["/no/such/folder", "--assignment", "assignment1"], "DIR: '/no/such/folder' is not a directory"),
    (["{term}", "--assignment", "assignment9"], "unknown assignment 'assignment9'"),
    (["{empty}", "--assignment", "assignment1"], "holds no submissions"),
    (["{term}", "--assignment", "assignment1", "--against", "/no/such/term"], "--against: '/no/such/term'"),
    (["{term}", "--assignment", "assignment1", "--similarity", "0"], "expected a percentage"),
])
def test_bad_input_is_one_line_and_exit_2(terms, tmp_path, args, says):
    tmp = terms[0]
    (tmp_path / "empty").mkdir()
    args = [a.format(term=tmp / "term", empty=tmp_path / "empty") for a in args]
    run = run_grade("similarity", *args, "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and says in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_class_without_the_assignments_files_is_bad_input(tmp_path):
    (tmp_path / "ivy" / "notes").mkdir(parents=True)
    (tmp_path / "ivy" / "notes" / "readme.txt").write_text("nothing here")
    run = run_grade("similarity", str(tmp_path), "--assignment", "assignment1", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "holds any of assignment1's files" in run.stderr, run.stderr
    shutil.rmtree(tmp_path / "ivy")
