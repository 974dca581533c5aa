"""Grading a class: `grade batch` (instructors' side; the submissions still run in sandboxes)."""
