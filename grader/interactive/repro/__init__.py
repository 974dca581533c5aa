"""`grade assignmentN --repro CHECK`: a failing check as a plain script, to step through in a debugger.

The script (repro_CHECK.py, written in the current folder) imports torch and the student's own
files, never the grader: it builds the check's example, runs the student's component on it,
prints the inputs, the expected and the obtained values and the largest error, and exits 1 while
they differ (0 once the code is fixed). Expected values are carried as numbers: stored reference
outputs as stored, torch's answers as torch gave them here; no reference code goes in.

- discover: which checks it knows, through the course (stored cases; the course's recipes);
- literal: values as Python source, and a failed check's example data read back;
- script: the script from its template (templates/*.tmpl);
- cli: grading the check alone and writing its script.
"""

from grader.interactive.repro.cli import failing_example, main
from grader.interactive.repro.discover import DEFAULT, Known, Recipe, known, reproducible, stored_cases
from grader.interactive.repro.literal import decode, literal
from grader.interactive.repro.script import write

__all__ = ["DEFAULT", "Known", "Recipe", "decode", "failing_example", "known", "literal", "main", "reproducible",
           "stored_cases", "write"]
