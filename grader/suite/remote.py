"""What a grading test holds: the proxy for the submission in the sandbox (its objects: grader.suite.handle)."""

import statistics
import time
from collections.abc import Mapping
from typing import Any

from grader.results import Reach, Reason
from grader.sandbox.child import protocol
from grader.sandbox.host import Sandbox, WorkerFault
from grader.suite import placement, trained
from grader.suite.checks import Mismatch, short
from grader.suite.fed.composite import Fed
from grader.suite.handle import Remote
from grader.suite.parts.serve import ReferenceParts

# The deadline of a request of a component that has hung already: this many times its slowest
# answer so far, or the median answer of this grading (which grows with the machine's load) where
# that is longer, never under MIN_SHORT_SECONDS, never over the usual deadline.
RELATIVE_SLACK, MIN_SHORT_SECONDS = 3.0, 0.25
# The target's own keywords travel as one mapping (`kwargs=`), apart from the kit's options (seed, grad,
# to, method, how): a target keyword named `seed` or `method` reaches the target, never the kit.


class Submission:
    """The `student` fixture: builds and calls the submission's code through the sandbox.

    A fault (crash, timeout, tampering) fails the rest of its check at once. Once a component
    has hung, each later request of its checks gets a short deadline (see RELATIVE_SLACK), and so do
    the requests of the components built on it, run on the submission's own parts: a hang costs
    about one timeout rather than one per check or per component, and checks whose inputs do not
    make it hang still pass (a composite that fails through its part is excused or waits on it). A
    check run on the reference's parts (attribution) counts its hangs apart from the same
    component's on its own parts.

    Every check runs on the CPU; `gpu` is the device the GPU tier moves modules and inputs to
    ("cuda"), chosen by the grader (None where that tier does not run).
    """

    def __init__(self, sandbox: Sandbox, gpu: str | None = None, reference=None):
        self.sandbox = sandbox
        self.gpu = gpu
        self.reference = reference  # the reference tree, for isolated checks (instructors' tier)
        self.fresh_seed: int | None = None  # where set, the stored examples are drawn afresh too (grader.suite.plugin)
        self.second_set = True  # False: none where the reference is at hand (the bug table's runs, grader.suite.draws)
        self.parts = ReferenceParts(lambda h, *args: sandbox.request({"op": "call", "target": h, "args": list(args),
                                                                       "kwargs": {}}))
        sandbox.on_ask = self._answer_ask
        self.check_fault: WorkerFault | None = None
        self.bad_modules: dict[str, WorkerFault] = {}
        self.imported: set[str] = set()
        self.generation = -1
        self.output_seen = 0  # bytes of the submission's output already given to a check
        self.forbidden: list[str] = []  # course.toml's forbidden APIs, watched in the worker (grader.judging.forbidden)
        # what the worker saw the submission run of them, as it says, each with the check that ran it
        self.executed: list[tuple[object, str]] = []
        self.order: list[str] = []  # every check of the suites, in the order the last run would run them
        self.modules: dict[str, set[str]] = {}  # component -> the submission's modules its checks asked for
        self.component = ""  # of the check running
        self.config: tuple[str, tuple[str, ...]] = ("", ())  # (component, reference parts swapped in)
        self.reach = Reach.SWAPPED  # how the parts a check swaps in are reached (swap)
        self.fed: Fed | None = None  # Reach.FED: the reference's composite, served here (grader.suite.fed)
        self.hung: set[tuple[str, tuple[str, ...]]] = set()  # configs with a request that timed out
        # component -> the components it is built on, all the way down (set by grader.suite.plugin): a
        # composite run on the submission's own parts hangs where a part of it has hung
        self.below: dict[str, frozenset[str]] = {}
        self.slowest: dict[str, float] = {}  # component -> its slowest answer in time, in seconds
        self.answers: list[float] = []  # every answer's time, in seconds: how loaded the machine is
        self.spent: dict[str, float] = {}  # component -> the submission's seconds in its requests (time budget)

    def _answer_ask(self, message):
        """The worker's ask: for a reference part (its stand-ins), or in the fed run for a callable of the
        reference's composite handed to the submission's part."""
        if self.fed is not None and isinstance(message, dict) and ({"fed", "fed_backward"} & set(message)):
            return self.fed.answer(message)
        return self.parts.answer(message)

    def new_output(self, limit: int) -> str:
        """What the submission printed since the last call (at most `limit` bytes)."""
        text, self.output_seen = self.sandbox.read_output(self.output_seen, limit)
        return text

    def begin_check(self, component: str = "", parts: tuple[str, ...] = ()):
        """`parts`: the reference parts swapped in for this check (grader.judging.attribution): a component
        that hung on its own parts may not hang on the reference's, so its hangs count apart."""
        self.check_fault = None
        self.component = component
        self.config = (component, parts)

    def forget(self, component: str, checks: set[str]) -> None:
        """What `checks`, of `component`, left here (faults, forbidden calls, hangs, import faults), as
        if they had not run: they run again from the start (grader.grading.split)."""
        self.sandbox.faults[:] = [f for f in self.sandbox.faults if f.check not in checks]
        self.executed = [(e, c) for e, c in self.executed if c not in checks]
        self.hung = {config for config in self.hung if config[0] != component}
        self.slowest.pop(component, None)
        self.spent.pop(component, None)
        self.bad_modules = {m: f for m, f in self.bad_modules.items() if f.check not in checks}

    def _request(self, message: dict, timeout: float | None = None):
        # A fault fails the rest of its own check at once (Hypothesis replays failing
        # examples); the next check gets a fresh worker. A fault while importing a file
        # fails every later use of that file, without paying for it again.
        if self.check_fault is not None:
            raise self.check_fault
        if self.fed is not None and self.fed.serves(message):
            return self._wrap(self.fed.serve(message))
        if self.fed is not None and not self.fed.serving:  # a check's own request: the parts as the composite left them
            self.fed.sync()
        timeout, budget = self._budget(timeout)
        before, served = self.sandbox.student_seconds, self.sandbox.grader_seconds
        try:
            return self._within_budget(message, timeout, budget)
        finally:  # the component's own time: the grader's answers to its asks count in grading_seconds alone
            if self.component:
                self.spent[self.component] = self.spent.get(self.component, 0.0) + (
                    self.sandbox.student_seconds - before) - (self.sandbox.grader_seconds - served)

    def _budget(self, timeout: float | None) -> tuple[float | None, str | None]:
        """This request's deadline within the time budgets (course.toml [limits] component_seconds, where a
        check's own longer deadline adds its excess, and grading_seconds) and what a timeout's message says
        of it; a budget spent fails the check at once as timed out, without asking the worker."""
        limits = self.sandbox.limits
        usual = timeout or limits.timeout_seconds
        if self.component and timeout and timeout > limits.timeout_seconds:
            self.spent[self.component] = self.spent.get(self.component, 0.0) - timeout + limits.timeout_seconds
        left = limits.component_budget - self.spent.get(self.component, 0.0) if self.component else float("inf")
        left, name = min((left, "component_seconds"), (limits.grading_seconds - self.sandbox.student_seconds,
                                                        "grading_seconds"))
        whose = f"{self.component} has used its" if name == "component_seconds" else "this grading has used its"
        if left <= 0:
            self.check_fault = WorkerFault(Reason.TIMEOUT, f"not run: {whose} time budget ({limits.where(name)})",
                                           self.sandbox.check)
            raise self.check_fault
        if left < usual:
            return max(round(left, 1), 0.1), f"what was left of the time budget, {limits.where(name)}"
        return timeout, None

    def _within_budget(self, message: dict, timeout: float | None, budget: str | None):
        target = message.get("target")
        if isinstance(target, str) and target.startswith("assignment"):
            self.modules.setdefault(self.component, set()).add(target.partition(":")[0])
            self._import(target.partition(":")[0])
        component, where = self.component, budget
        # a part of it that hung, run as the submission wrote it (not in a check that swaps in the reference's parts)
        part = next((c for c, parts in sorted(self.hung) if not parts and not self.config[1]
                     and c in self.below.get(component, ())), None)
        if self.config in self.hung or part:
            limits = self.sandbox.limits
            usual = timeout or limits.timeout_seconds
            typical = statistics.median(self.answers) if self.answers else 0.0
            short = round(max(MIN_SHORT_SECONDS, RELATIVE_SLACK * max(self.slowest.get(component, 0.0), typical)), 2)
            if short < usual:
                set_at = budget or ("this check's own timeout" if timeout else limits.where("timeout_seconds"))
                whose = component if self.config in self.hung else part
                timeout, where = short, f"shortened from {usual:g} s ({set_at}): {whose} hung in an earlier check"
        started = time.monotonic()
        try:
            value = self.sandbox.request(message, timeout, where)
        except WorkerFault as fault:
            self.check_fault = fault
            if fault.kind == Reason.TIMEOUT and component:
                self.hung.add(self.config)
            raise
        seconds = time.monotonic() - started
        self.answers.append(seconds)
        if component:
            self.slowest[component] = max(self.slowest.get(component, 0.0), seconds)
        if target == trained.TARGET:  # judged here: what the run reports of itself is the worker's say-so
            value = trained.judge(value, self.reference, message.get("kwargs") or {})
        return self._wrap(value)

    def _import(self, module: str):
        if module in self.bad_modules:
            raise self.bad_modules[module]
        if self.generation != self.sandbox.restarts:
            self.generation, self.imported = self.sandbox.restarts, set()
        if module in self.imported:
            return
        try:
            self.sandbox.request({"op": "import", "module": module, "forbidden": self.forbidden})
        except WorkerFault as fault:
            self.bad_modules[module] = self.check_fault = fault
            raise
        self.imported.add(module)

    def _wrap(self, v):
        if isinstance(v, protocol.Handle):
            return Remote(self, v.id, v.type)
        if type(v) is list:
            return [self._wrap(x) for x in v]
        if type(v) is tuple:
            return tuple(self._wrap(x) for x in v)
        if type(v) is dict:
            return {k: self._wrap(x) for k, x in v.items()}
        return v

    def call(self, target: str, *args, kwargs: Mapping[str, Any] = {}, seed: int | None = None,
             grad: bool = False):
        """Call `target` ("assignment2.masks:make_pad_mask", "torch.optim:SGD", "kit:...") in the sandbox
        with `args` and the keywords `kwargs`."""
        return self._request({"op": "call", "target": target, "args": list(args), "kwargs": dict(kwargs),
                              "seed": seed, "grad": grad})

    def placed(self, target, *args, to: str, method: str | None = None, kwargs: Mapping[str, Any] = {},
               how: placement.How = placement.How()) -> dict:
        """Call `target` with `args` and the keywords `kwargs`, its module, the modules among its
        arguments and its tensors moved to device `to` ("meta", or the GPU tier's), watching for CPU
        tensors that meet them (grader.sandbox.child.placement.watch). Returns {"stray": what met them} or
        {"output" (copied to the CPU, except on meta), "devices" of the output's tensors, "param_grads"
        (with how.grad_output)}. The module stays there; the watch is checked here (grader.suite.placement).
        `how` says how it runs (autocast, grad_output, seed)."""
        return placement.confirmed(self, {"op": "placed", "target": target, "method": method, "args": list(args),
                                        "kwargs": dict(kwargs), "device": to, "autocast": how.autocast,
                                        "grad_output": how.grad_output, "seed": how.seed})

    def profile(self, kind: str, target: str, device: str, repeat: int, shape: dict) -> dict:
        """Time the submission's `target` and torch's built-in of that kind (grader.sandbox.child.profile)."""
        return self._request({"op": "profile", "kind": kind, "target": target, "device": device, "repeat": repeat,
                              "shape": shape})

    def new(self, target: str, *args, **kwargs) -> "Remote":
        """Build an object, as `target(*args, **kwargs)` would (every keyword is the constructor's: this
        forwards a call to the submission's code, and takes no options of its own); seed 0 fixes its
        random initialisation."""
        obj = self.call(target, *args, kwargs=kwargs, seed=0)
        if not isinstance(obj, Remote):
            raise Mismatch(f"{target.split(':')[-1]}(...) should build an object", expected="an object",
                           got=short(obj))
        return obj

    def swap(self, *parts: str, own: tuple[str, ...] = ()):
        """Until this check ends, the submission's code uses the reference's `parts`
        ("assignment1.embedding:TokenEmbedding", ...) wherever it names them. The parts run
        here, in the grader, on the inputs and weights the submission gives them. The `own` parts
        stay the submission's, dressed as the reference's are (grader.sandbox.child.standins.standin.Link.wrap):
        a composite cannot tell which it has. Where `reach` (set by the plugin for the run) is not
        SWAPPED, `parts` stay the submission's too, ECHOED reached as the reference's would be, each
        build and call a round trip here (grader.judging.attribution's control runs). Where it is FED, the
        composite is the reference's, run here, and `parts` the submission's (grader.suite.fed)."""
        if self.reach == Reach.FED:
            if self.reference is None:
                raise RuntimeError("the fed run needs the reference tree (the hidden tier)")
            self.fed = Fed(self, self.reference, parts) if parts else None
            return
        if self.reach != Reach.SWAPPED:
            own, echo, parts = (*own, *parts), parts if self.reach == Reach.ECHOED else (), ()
        else:
            echo = ()
        if parts and self.reference is None:
            raise RuntimeError("isolated checks need the reference tree (the hidden tier)")
        if parts:
            self.parts.allow(self.reference, self.parts.allowed | set(parts))
        for part in parts:
            self._import(part.partition(":")[0])
        self._request({"op": "swap", "parts": list(parts), "own": [p for p in own if p not in parts],
                       "echo": list(echo),
                       "classes": {part: self.parts.describe_class(part) for part in parts}})

    def reset(self):
        self.fed = None
        self.parts.allow(None, ())
        if self.check_fault is None and self.sandbox.proc is not None:
            try:
                answer = self.sandbox.request({"op": "reset"})
                record = answer.get("forbidden", []) if isinstance(answer, dict) else []
                self.executed += [(e, self.sandbox.check) for e in record] if isinstance(record, list) else []
            except (Exception, WorkerFault):
                pass
