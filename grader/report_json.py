"""A report rebuilt from its JSON (grader.results.to_json's document): to render again what was graded
elsewhere or earlier (a batch's reports, the kit's golden record) without grading it anew. Standard
library only, as grader.results."""

from __future__ import annotations

from pathlib import Path

from grader.findings import Attribution
from grader.results import CheckResult, ComponentResult, Outcome, Report
from grader.reveal import Reveal

# the fields of a check's JSON entry that are not its outcome's details (_document puts them together)
_CHECK_FIELDS = frozenset({"id", "status", "hidden", "tier", "reason", "message", "duration_seconds", "excused_by",
                           "waiting_on", "note", "attribution", "output"})


def from_json(data: dict, *, weights: dict[str, float] | None = None,
              depends: dict[str, tuple[str, ...]] | None = None, title: str = "", student: bool = False) -> Report:
    """The Report that `to_json` wrote `data` from, to render again (a batch's, a record's). The JSON
    keeps neither the assignment's title, a check's weight nor a component's parts: `title`, `weights`
    (check id -> weight, default 1) and `depends` (component -> its parts) come from the course where it
    is at hand; they decide only how many points are "for now" and the order of the parts waited on."""
    weights, depends = weights or {}, depends or {}
    components = []
    for c in data.get("components", []):
        checks = [CheckResult(t["id"], t.get("tier") or ("hidden" if t.get("hidden") else "public"),
                              float(weights.get(t["id"], 1.0)),
                              Outcome(t.get("status", ""), t.get("reason", ""), t.get("message", ""),
                                      {k: v for k, v in t.items() if k not in _CHECK_FIELDS}, t.get("output", ""),
                                      float(t.get("duration_seconds", 0.0))),
                              tuple(t.get("excused_by", ())), Attribution.from_json(t.get("attribution")),
                              tuple(t.get("waiting_on", ())))
                  for t in c.get("tests", [])]
        components.append(ComponentResult(c["name"], c["file"], float(c["score"]), float(c["max_score"]), checks,
                                          tuple(depends.get(c["name"], c.get("waiting_on", ()))),
                                          list(c.get("forbidden", [])), list(c.get("flagged", [])),
                                          held=c.get("held"), diagnosis=c.get("diagnosis"),
                                          telling=c.get("telling")))
    start = data.get("start_here")
    here = {c.name for c in components}
    upstream = [dict(start)] if isinstance(start, dict) and start.get("name") not in here else []
    duration = data.get("duration_seconds", 0.0)
    return Report(data.get("assignment", ""), title or data.get("title", ""), Path(str(data.get("submission", ""))),
                  components, float(duration) if isinstance(duration, (int, float)) else 0.0,
                  list(data.get("notes", [])), data.get("isolation", ""), data.get("isolation_detail", ""),
                  data.get("performance"), data.get("gpu"), upstream, Reveal(data.get("reveal", Reveal.FIX)),
                  student)
