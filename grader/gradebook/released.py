"""The nbgrader preprocessor that makes `nbgrader autograde` run the released cells, never a student's.

The notebook's cells run in one kernel, so a cell a student adds could change what the
grade cells report (patch `subprocess`, rewrite later cells' input, print a score). nbgrader
restores the source of locked cells but runs added cells as they are. This preprocessor,
first of autograde's sanitizing steps (nbgrader_config.py, written by grader.gradebook.course),
replaces the submitted notebook's cells and metadata with those of the notebook nbgrader
released: what runs is what the instructor wrote, whatever the student handed in. The
students' work is their .py files, which only the grader's sandbox runs.
"""

from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode


class ReleasedCellsOnly(NbGraderPreprocessor):
    release_directory = Unicode(
        "", help="nbgrader's release/ folder; default: release/ of the folder nbgrader runs in").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        folder = Path(self.release_directory or "release")
        path = folder / info["assignment"] / f"{info['notebook']}.ipynb"
        # no released notebook: fail this submission loudly rather than run the student's cells
        released = nbformat.read(str(path), as_version=4)
        nb.cells = released.cells
        nb.metadata = released.metadata
        self.log.info("Running the released cells of %s", path)
        return nb, resources
