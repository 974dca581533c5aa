"""course.toml [limits]: what a grading may take of the machine, and of time (read by grader.course)."""

from dataclasses import dataclass, field

# an unset component_seconds, in timeout_seconds: code that answers just under every deadline holds a
# grading for seconds, not minutes (an honest component's requests take milliseconds each; its own time
# in all, a Transformer on the reference's parts, 44 s on 2 cores at a load of 9)
COMPONENT_TIMEOUTS = 6


@dataclass(frozen=True)
class Limits:
    timeout_seconds: float = 20.0
    startup_seconds: float = 90.0
    memory_mb: int = 4096
    cpu_seconds: int = 300
    processes: int = 256
    file_size_mb: int = 16
    output_kb: int = 4
    scratch_mb: int = 64  # what the submission may write, in namespaces (a tmpfs of this size)
    # what the submission's answers may take in all, per component (unset: `component_budget`) and per
    # grading (README: "How grading is kept fair and safe"); the grader's own work is not counted
    component_seconds: float | None = None
    grading_seconds: float = 900.0
    isolation: str = "auto"  # "auto", "namespaces", "seccomp" or "process" (grader.sandbox.isolation)
    source: str = field(default="course.toml", compare=False)  # the file they were read from, for messages

    @property
    def component_budget(self) -> float:
        """component_seconds, or COMPONENT_TIMEOUTS x timeout_seconds unset (grader.suite.remote adds what a
        check's own longer deadline, the training's, sets past timeout_seconds)."""
        return self.component_seconds or COMPONENT_TIMEOUTS * self.timeout_seconds

    def where(self, name: str) -> str:
        """Where limit `name` is set, with its value: "course.toml [limits] startup_seconds = 90"."""
        value = getattr(self, name)
        if value is None:  # component_seconds, unset
            return f"{self.source} [limits] {name}, unset: {COMPONENT_TIMEOUTS} x timeout_seconds = " \
                f"{self.component_budget:g}"
        return f"{self.source} [limits] {name} = " + (f"{value!r}" if isinstance(value, str) else f"{value:g}")


