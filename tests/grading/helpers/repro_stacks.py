"""`grade --repro` recipes (tests/grading/public/repro.py registers them)."""

from grader.interactive.repro.discover import Recipe

STACK_RECIPES: dict[str, Recipe] = {}
# why these checks get no script (by check id, or the end of one)
STACK_WHY_NOT: dict[str, str] = {}
