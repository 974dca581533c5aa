"""Grading from a notebook, as a student in Jupyter or Colab does: a real kernel runs `!grade ...` and
`grader.check(...)`, and the saved notebook holds the report, without a spinner's frames."""


def test_progress_shows_on_a_terminal_only(tmp_path):
    import os

    from grader.interactive.notebook import real_terminal

    leader, follower = os.openpty()
    read, write = os.pipe()
    with open(follower, "w") as tty, open(write, "w") as pipe:
        assert real_terminal(tty, environ={})
        assert not real_terminal(tty, environ={"JPY_PARENT_PID": "1"})  # a kernel's `!`, on a pseudo-terminal
        assert not real_terminal(tty, environ={"COLAB_RELEASE_TAG": "x"})
        assert not real_terminal(pipe, environ={})
    os.close(leader)
    os.close(read)


def test_import_grader_stays_light_with_check():
    import subprocess
    import sys

    code = ("import sys, grader; heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'pytest', 'hypothesis', 'rich', 'numpy'}); print(heavy, callable(grader.check))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[] True", proc.stdout + proc.stderr
