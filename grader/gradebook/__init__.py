"""The nbgrader bridge: a real nbgrader course directory whose notebooks grade with `grade`.

An instructor's whole pipeline, from the nbgrader course directory DIR:

    grade nbgrader DIR --assignment assignment1       # writes nbgrader_config.py and source/assignment1/
    cd DIR && nbgrader generate_assignment assignment1
    ... nbgrader collect, or nbgrader zip_collect assignment1 (LMS downloads) ...
    grade nbgrader prepare DIR --assignment assignment1   # a notebook in every submission that lacks one
    nbgrader autograde assignment1 && nbgrader export && nbgrader generate_feedback assignment1

`course.py` writes the course directory and its notebooks (nbformat), `cells.py` is what the
notebooks' cells call inside the kernel (standard library only), `released.py` is the
nbgrader preprocessor that makes autograde run the released cells, never a student's.
Importing this package is cheap and imports neither nbgrader nor nbformat.
"""
