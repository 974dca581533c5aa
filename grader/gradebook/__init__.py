"""The nbgrader bridge: a real nbgrader course directory whose notebooks grade with `grade`.

An instructor's whole pipeline, from the nbgrader course directory DIR (README, "Grade in nbgrader"):

    grade nbgrader . --assignment assignment1     # nbgrader_config.py, source/assignment1/, exchange/
    nbgrader generate_assignment assignment1 && nbgrader release_assignment assignment1
    ... students: nbgrader fetch_assignment assignment1, grade assignment1, nbgrader submit assignment1 ...
    nbgrader collect assignment1                  # or nbgrader zip_collect assignment1 (LMS downloads)
    grade nbgrader prepare . --assignment assignment1   # a notebook in every submission that lacks one
    nbgrader autograde assignment1 && nbgrader export && nbgrader generate_feedback assignment1

`course.py` writes the course directory and its notebooks (nbformat), `config.py` its
nbgrader_config.py, `public.py` the public course released with each notebook, `cells.py` is
what the notebooks' cells call inside the kernel (standard library only), `released.py` is the
nbgrader preprocessor that makes autograde run the released cells, never a student's.
Importing this package is cheap and imports neither nbgrader nor nbformat.
"""
