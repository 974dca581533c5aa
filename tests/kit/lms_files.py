"""Canvas's and Moodle's files as each LMS writes them (tests/kit/unit/ and sandbox/test_lms.py, unit/test_roster.py):
the gradebook export, the grading worksheet, and a class's bulk download from Canvas."""

from pathlib import Path

from tests.kit.conftest import SOLUTIONS, mutant
from tests.kit.sandbox.test_batch import LN_BUG

A1 = sorted(p.name for p in (SOLUTIONS / "assignment1").glob("*.py"))

# Canvas's gradebook export (Grades > Export) as canvas-lms writes it (lib/gradebook_exporter.rb in
# instructure/canvas-lms): Student, ID, SIS User ID, SIS Login ID, Section, the assignments as "TITLE (ID)",
# the read-only totals, then a row "    Points Possible" with no ID; Canvas's test student comes last. The
# columns as documented at
# https://nemogb-dev.github.io/nemogb-r/articles/detailed-canvas-export-info.html
# https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades
CANVAS_GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (88001),Quiz 1 (88002),Current Score,Final Score\n"
    "    Points Possible,,,,,40.00,5.00,(read only),(read only)\n"
    '"Lovelace, Ada",1001,s1001,ada,Section A,,4.00,80.00,80.00\n'
    '"Babbage, Bob",1002,s1002,bob,Section A,,5.00,100.00,100.00\n'
    '"Student, Test",1999,,,Section A,,,,\n')
# Moodle's offline grading worksheet (Assignment > View all submissions > Download grading worksheet, with the
# "Offline grading worksheet" and "Feedback comments" feedback types on, as
# https://docs.moodle.org/401/en/Assignment_settings says), its columns as mod/assign/gradingtable.php in
# moodle/moodle writes them for a download: Identifier ("Participant " + the id also in the download's file
# names), Full name, the identity fields (Email address), Status, Grade, Maximum Grade, Grade can be changed,
# Last modified (submission), Last modified (grade), then each feedback plugin's field (Feedback comments);
# mod/assign/feedback/offline/importgradeslib.php reads Identifier, Grade and Last modified (grade) back
MOODLE_WORKSHEET = (
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
    "Participant 501,Ana C,ana@example.edu,Submitted for grading,,40.00,Yes,"
    '"Friday, 27 November 2026, 9:00 AM",-,\n'
    "Participant 502,Ben D,ben@example.edu,No submission,,40.00,Yes,-,-,\n")


def canvas_download(root: Path, tmp: Path) -> Path:
    """Ada hands in the solution; Bob a broken file, then the LN bug as resubmission -1, late; two
    students named alike (ids 1003 and 1004) hand in nothing of the assignment."""
    root.mkdir(parents=True)
    bug = mutant(tmp / "m", LN_BUG) / "assignment1"
    for name in A1:
        (root / f"lovelaceada_1001_7001_{name}").write_bytes((SOLUTIONS / "assignment1" / name).read_bytes())
        (root / f"babbagebob_LATE_1002_7002_{name.replace('.py', '-1.py')}").write_bytes((bug / name).read_bytes())
    (root / "babbagebob_1002_6002_layer_norm.py").write_text("raise SystemExit\n")
    (root / "smithsam_1003_7003_notes.txt").write_text("hello\n")
    (root / "smithsam_1004_7004_notes.txt").write_text("hi\n")
    return root
