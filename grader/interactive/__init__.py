"""The student's loop around a grade: re-grading on save, notebooks, reproducing a check."""
