"""Grading from a notebook, without a kernel: progress shows on a terminal only (not under a kernel's `!`
or Colab, nor on a pipe), and `import grader` stays light and gives `grader.check` (a real kernel:
tests/kit/kernel/test_notebook.py)."""


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
