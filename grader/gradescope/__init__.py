"""`grade gradescope`: the course as a Gradescope autograder (a zip to upload) and what runs in it.

`build.py` writes `autograder.zip` (setup.sh, run_autograder, the kit and the packed course);
`runner.py` is what run_autograder starts in the container, once per submission; `results.py`
turns a report into Gradescope's results.json.
"""
