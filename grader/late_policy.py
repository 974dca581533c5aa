"""course.toml's [late] table: what a late submission loses (grader.batch.late applies it in a batch).

Read by grader.course.load, with its reader of tables: a bad key or value is that reader's ConfigError,
one line naming the file, the key and the value. Nothing here imports grader.course (which imports this).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Late:
    """Nothing within `grace_hours` of the due date; past it, `penalty_per_day` percent of the grade per
    day late (a started day counted whole, from the due date), at most `cap` percent; past
    `cutoff_days`, the whole grade. `due`: assignment -> its due date (with its offset), which file
    times are measured against where they are the only source."""
    grace_hours: float = 0.0
    penalty_per_day: float = 0.0
    cap: float = 100.0
    cutoff_days: float | None = None
    due: dict[str, datetime] = field(default_factory=dict)


# key -> (lowest allowed, whether the lowest itself is allowed, highest, what the message expects)
KEYS = {"grace_hours": (0, True, None, "a number of hours >= 0"),
        "penalty_per_day": (0, True, 100, "a percentage from 0 to 100"),
        "cap": (0, True, 100, "a percentage from 0 to 100"),
        # a cut-off of 0 days would take the whole grade of a submission inside the grace
        "cutoff_days": (0, False, None, "a number of days above 0")}


def read_late(top: Any, assignments: dict) -> Late | None:
    """[late] of course.toml's top table (grader.course._Table), checked; None where there is none."""
    if "late" not in top.data:
        return None
    late = top.table("late")
    values: dict[str, float] = {}
    for name, (lowest, inclusive, most, expected) in KEYS.items():
        late.used.add(name)
        if name not in late.data:
            continue
        value = late.data[name]
        if type(value) not in (int, float) or not (value >= lowest if inclusive else value > lowest) \
                or most is not None and value > most:
            raise late.bad(name, value, expected)
        values[name] = float(value)
    due = late.table("due")
    for a_name, when in due.data.items():
        if a_name not in assignments:
            raise due.bad(a_name, a_name, f"the name of an assignment ({', '.join(assignments)})")
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise due.bad(a_name, when, "a date and time with its offset, e.g. 2026-11-27T09:00:00Z")
    late.done()
    return Late(**values, due=dict(due.data))
