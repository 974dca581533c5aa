"""An object of the submission's, living in the sandbox, as a grading test holds it (built by
grader.suite.remote.Submission, through which its requests go)."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from grader.sandbox.child import protocol
from grader.suite import placement
from grader.suite.checks import Mismatch

if TYPE_CHECKING:
    from grader.suite.remote import Submission


class Remote(protocol.Handle):
    """An object in the sandbox. Calling it calls it there; what comes back is data."""

    def __init__(self, owner: "Submission", id: int, type: str):
        super().__init__(id, type)
        self.owner = owner

    def __call__(self, *args, **kwargs):
        """The object called as the submission's code would call it: every keyword is its own (`run`
        takes the kit's options)."""
        return self.run(None, args, kwargs)

    def method(self, name: str, *args, **kwargs):
        """Its method `name` called with these arguments, every keyword the method's own."""
        return self.run(name, args, kwargs)

    def run(self, method: str | None, args: tuple = (), kwargs: Mapping[str, Any] = {}, *, seed: int | None = None,
            grad: bool = False):
        """Call its `method` (None: the object itself) with `args` and the keywords `kwargs`, after
        seeding with `seed` where given; `grad`: with gradients on."""
        return self.owner._request({"op": "call", "target": self, "method": method, "args": list(args),
                                    "kwargs": dict(kwargs), "seed": seed, "grad": grad})

    def placed(self, *args, to: str, method: str | None = None, kwargs: Mapping[str, Any] = {},
               how: placement.How = placement.How()) -> dict:
        """Submission.placed on this object (a module moves to device `to` and stays there)."""
        return self.owner.placed(self, *args, to=to, method=method, kwargs=kwargs, how=how)

    def attr(self, name: str):
        return self.owner._request({"op": "getattr", "target": self, "name": name})

    def train(self):
        self.method("train")
        return self

    def eval(self):
        self.method("eval")
        return self

    def to(self, *args):
        self.method("to", *args)
        return self

    def parameters(self) -> dict[str, tuple]:
        """name -> (shape, dtype, requires_grad)"""
        listing = self.owner._request({"op": "params", "target": self})["parameters"]
        return {n: (tuple(s), d, g) for n, s, d, g in listing}

    def buffers(self) -> dict[str, tuple]:
        """name -> (shape, dtype, persistent)"""
        return {n: (tuple(s), d, p) for n, s, d, p in self.owner._request({"op": "params", "target": self})["buffers"]}

    def state(self) -> dict[str, torch.Tensor]:
        return self.owner._request({"op": "state", "target": self})

    def load(self, state: dict[str, torch.Tensor], component: str | None = None):
        """Copy `state` into the module by name; a missing or misshapen name fails the check, by name."""
        answer = self.owner._request({"op": "load", "target": self, "tensors": dict(state)})
        what = component or self.type
        if answer["missing"]:
            names = ", ".join(answer["missing"][:8])
            raise Mismatch(f"{what} has no parameter or buffer named {names}", expected=f"names {names}",
                           got=f"{what}'s names: {', '.join(sorted(self.parameters()) + sorted(self.buffers()))}",
                           hint="The grader copies reference weights by name: use exactly the names in the docstring.")
        if answer["wrong_shape"]:
            name, want, got = answer["wrong_shape"][0]
            raise Mismatch(f"{what}.{name} has the wrong shape", expected=str(tuple(want)), got=str(tuple(got)),
                           hint="Check the order of in/out features of this layer.")
        return self

    def backward(self, *args, grad_output: torch.Tensor, wrt=(0,), method: str | None = None,
                 kwargs: Mapping[str, Any] = {}):
        """Run forward on `args` and the keywords `kwargs`, then backward of sum(output * grad_output);
        returns (output, input_grads, param_grads)."""
        answer = self.owner._request({"op": "backward", "target": self, "method": method, "args": list(args),
                                      "kwargs": dict(kwargs), "grad_output": grad_output, "wrt": list(wrt)})
        return answer["output"], answer["input_grads"], answer["param_grads"]
