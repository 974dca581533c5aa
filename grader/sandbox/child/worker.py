"""The request loop of the submission's process: imports the submission, answers the grader.

Everything here runs next to untrusted code, so nothing it says is believed: the
grader checks every answer itself. This module only has to be honest for honest
submissions and to fail loudly (a malformed frame, a dead process) for the rest.
"""

import faulthandler
import json
import signal
import sys
import threading
from contextlib import nullcontext

import torch

from grader.sandbox.child import confine, jail, processes, protocol, record, state
from grader.sandbox.child.asked import Asked
from grader.sandbox.child.fixtures import IMPORTS, KIT
from grader.sandbox.child.fixtures import SUBMISSION as PACKAGE
from grader.sandbox.child.placement import watch
from grader.sandbox.child.placement.requests import Placed
from grader.sandbox.child.standins import standin
from grader.sandbox.child.standins.swaps import Swaps, resolve
from grader.sandbox.child.tree import import_alone, import_tree

STACK_SIGNAL = signal.SIGUSR1  # the grader's ask for the stacks of a request that ran out of time


class Worker(Swaps, Placed):
    def __init__(self, req_fd: int = -1, resp_fd: int = -1):
        self.req_fd, self.resp_fd = req_fd, resp_fd
        self.baseline = state.Baseline()  # before any of the submission's code runs
        self.objects: dict[int, object] = {}
        self.next_id = 1
        self.swaps: dict[str, tuple[object, object]] = {}  # part -> (submission's, stand-in or wrapped own)
        self.references: dict[str, object] = {}  # part -> the reference's stand-in (of those in swaps)
        self.own: set[str] = set()  # parts to wrap (standin.Link.wrap) once their module is imported
        self.echoed: set[str] = set()  # of those, the ones whose builds and calls make a round trip
        self.patched: list[tuple[object, str, object]] = []  # (module, name, original)
        self.link = standin.Link(self.ask, known=self.known)
        self.watch = record.Watch()  # forbidden APIs the submission's code runs, handed over at reset

    def keep(self, obj) -> protocol.Handle:
        for id, known in self.objects.items():
            if known is obj:
                return protocol.Handle(id, type(obj).__name__)
        self.objects[self.next_id] = obj
        self.next_id += 1
        return protocol.Handle(self.next_id - 1, type(obj).__name__)

    def unwrap(self, v, device=None):
        if isinstance(v, protocol.Handle):
            # a negative id names the grader's object: a sublayer of the reference's composite (the fed run)
            return self.objects[v.id] if v.id > 0 else Asked(self.ask, v.id)
        if isinstance(v, torch.Tensor):
            return v.to(device) if device else v
        if type(v) is list:
            return [self.unwrap(x, device) for x in v]
        if type(v) is tuple:
            return tuple(self.unwrap(x, device) for x in v)
        if type(v) is dict:
            return {k: self.unwrap(x, device) for k, x in v.items()}
        return v

    def target(self, req):
        t = req["target"]
        if isinstance(t, protocol.Handle):
            obj = self.objects[t.id]
            return getattr(obj, req["method"]) if req.get("method") else obj
        if t.startswith("kit:"):
            return KIT[t[4:]]
        if t.startswith("torch"):
            module, _, attr = t.partition(":")
            obj = __import__(module, fromlist=["_"])
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj
        return resolve(PACKAGE, t)

    def op_call(self, req):
        t = req["target"]
        if isinstance(t, str) and t.startswith("kit:"):
            self._import_first(IMPORTS.get(t[4:], ()))
        fn = self.target(req)
        device = req.get("device")
        args = self.unwrap(req.get("args", []), device)
        kwargs = self.unwrap(req.get("kwargs", {}), device)
        if req.get("seed") is not None:
            state.seed(req["seed"])
        if "rng" in req:  # the fed run: one random stream with the grader's (grader.sandbox.child.asked)
            torch.set_rng_state(req["rng"])
        # the kit's own targets (the end-to-end training run) are not watched: they are long, and
        # whatever of the submission's they run is watched in its own component's checks
        watched = not (isinstance(t, str) and t.startswith(("kit:", "torch")))
        with torch.set_grad_enabled(bool(req.get("grad"))), self.watch if watched else nullcontext():
            value = fn(*args, **kwargs)
        return {"value": value, "rng": torch.get_rng_state()} if "rng" in req else value

    def op_getattr(self, req):
        return getattr(self.objects[req["target"].id], req["name"])

    def module(self, req) -> torch.nn.Module:
        m = self.objects[req["target"].id]
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"expected a torch.nn.Module, got an object of type {type(m).__name__}")
        return m

    def op_params(self, req):
        m = self.module(req)
        params = [[n, list(p.shape), protocol.DTYPE_NAMES.get(p.dtype, str(p.dtype)), p.requires_grad]
                  for n, p in m.named_parameters()]
        persistent = set(m.state_dict())
        buffers = [[n, list(b.shape), protocol.DTYPE_NAMES.get(b.dtype, str(b.dtype)), n in persistent]
                   for n, b in m.named_buffers()]
        return {"parameters": params, "buffers": buffers}

    def op_state(self, req):
        return dict(self.module(req).state_dict())

    def op_load(self, req):
        m = self.module(req)
        own: dict[str, torch.Tensor] = {**dict(m.named_parameters()), **dict(m.named_buffers())}
        missing, wrong = [], []
        with torch.no_grad():
            for name, value in req["tensors"].items():
                if name not in own:
                    missing.append(name)
                elif tuple(own[name].shape) != tuple(value.shape):
                    wrong.append([name, list(value.shape), list(own[name].shape)])
                else:
                    own[name].copy_(value)
        return {"missing": missing, "wrong_shape": wrong}

    def op_backward(self, req):
        fn = self.target(req)
        args = list(self.unwrap(req.get("args", [])))
        wrt = req.get("wrt", [])
        for i in wrt:
            args[i] = args[i].detach().clone().requires_grad_(True)
        module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
        if isinstance(module, torch.nn.Module):
            module.zero_grad(set_to_none=True)
        if "rng" in req:  # the fed run: the draws of the forward it backpropagates through
            torch.set_rng_state(req["rng"])
        with torch.enable_grad(), self.watch:
            out = fn(*args, **self.unwrap(req.get("kwargs", {})))
            if not isinstance(out, torch.Tensor) or not out.requires_grad:
                return {"output": out, "input_grads": None, "param_grads": None}
            (out * req["grad_output"]).sum().backward()
        params = None
        if isinstance(module, torch.nn.Module):
            params = {n: p.grad for n, p in module.named_parameters()}
        return {"output": out, "input_grads": [args[i].grad for i in wrt], "param_grads": params}

    def _import_first(self, modules: tuple[str, ...]):
        """The submission's `modules` that a kit target imports as it runs (fixtures.IMPORTS), imported
        now, and the global state put back after: a module that switched autograd off at import did it
        inside the end-to-end training run (issue 43: train_epoch lost 4.2 of 14 points for a LayerNorm
        file's import). Only those: another file's import could hang or fail the kit's run."""
        fresh = [m for m in modules if f"{PACKAGE}.{m}" not in sys.modules]
        if not fresh:
            return
        self._unpatch()
        for name in fresh:
            try:
                with self.watch:
                    import_alone(f"{PACKAGE}.{name}", PACKAGE)
            except Exception:  # its own checks say so; the kit's run fails where it uses it
                pass
        self._patch()
        self.baseline.restore_all()

    def op_import(self, req):
        self.watch.watch(req.get("forbidden", []))
        # imported with no part swapped in, so that what it takes from the submission's modules is
        # the submission's own, which _patch then records and the next reset puts back (a module first
        # imported during a swap kept the stand-ins for good)
        self._unpatch()
        with self.watch:
            import_alone(f"{PACKAGE}.{req['module']}", PACKAGE)
        self._patch()

    def ask(self, message: dict):
        """A request to the grader in the middle of answering one of its own. Callables in it
        (a sublayer given to a ResidualConnection) travel as handles: the grader may call them
        back before it answers."""
        protocol.write_all(self.resp_fd, protocol.encode({"ask": message}, keep=self.keep))
        while True:
            reply = protocol.read_frame(self.req_fd)
            if "op" in reply:
                protocol.write_all(self.resp_fd, self.handle(reply))
                continue
            if "error" in reply:
                raise RuntimeError(f"the grader could not run the reference part: {reply['error']}")
            return reply["ok"]

    def op_reset(self, req):
        self._unpatch()
        self.swaps.clear()
        self.references.clear()
        self.own.clear()
        self.echoed.clear()
        self.link.reset()
        self.objects.clear()
        state.seed(0)
        return {"forbidden": self.watch.take()}

    def handle(self, req):
        try:
            value = getattr(self, "op_" + req["op"])(req)
            return protocol.encode({"ok": value}, keep=self.keep)
        except BaseException as e:  # the submission's exceptions, SystemExit and pytest's Skipped included
            return protocol.encode({"error": protocol.describe_error(e, PACKAGE)})
        finally:
            # what a module changed at import, or a check left behind, reaches no other component
            if req.get("op") in ("import", "reset"):
                self.baseline.restore_all()


def main():
    scratch, req_fd, resp_fd, pycache, become, confined = \
        sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
    # A request that runs out of time: the grader sends STACK_SIGNAL before it kills this process, and
    # the stacks of its Python threads go to the answer pipe, where the grader reads where the
    # submission's code was (host.Sandbox._where_hung). Written from the C handler, so a loop in
    # Python or a call stuck in C both show, before any of the submission's code runs.
    faulthandler.register(STACK_SIGNAL, file=resp_fd, all_threads=True)
    torch.set_num_threads(1)
    # What the device-placement checks' meta kernels import on first use (a second or so, several
    # under load), in the background while this process imports the grader's side; joined before
    # "ready", so that it counts against startup_seconds and not against the first request's
    # timeout (a restart after a timeout would otherwise time out again under load), and before any
    # of the submission's code runs or the baseline of global state is taken.
    thread = threading.Thread(target=watch.warm, daemon=True)
    thread.start()
    if confined:  # the seccomp tier: Landlock holds the thread that asks and those it starts after
        thread.join()
        # before becoming another user: Landlock's rules open their paths as the grader may (pyenv under /root)
        confine.confine(json.loads(confined))
    if become:  # a root grader's process sandbox: the submission's own user from here on (host.Sandbox)
        thread.join()  # what it imports may lie where only root can read
        jail.become(int(become))
    import_tree(f"{scratch}/{PACKAGE}", PACKAGE)
    thread.join()
    processes.refuse()  # before any of the submission's code: see its module
    # Set only now: torch (already imported) keeps its cached bytecode, which takes seconds to
    # rebuild, while the submission's code is compiled from its sources into a fresh prefix.
    sys.pycache_prefix = pycache
    worker = Worker(req_fd, resp_fd)
    protocol.write_all(resp_fd, protocol.encode({"ok": "ready"}))
    while True:
        try:
            req = protocol.read_frame(req_fd)
        except EOFError:
            return
        worker.baseline.restore_switches()
        answer = worker.handle(req)
        state.flush_output()  # what the submission printed reaches its file before the grader reads it
        protocol.write_all(resp_fd, answer)
