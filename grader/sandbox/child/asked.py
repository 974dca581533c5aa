"""The grader's callables in the submission's process, for the fed run (grader.suite.fed).

There the composite is the reference's, run in the grader, and its parts are the submission's, run
here: a ResidualConnection of the submission's gets its sublayer (`lambda x: self_attn(x, x, x, mask)`)
from the reference's EncoderLayer. That sublayer arrives as a handle with a negative id, and each call
of it asks the grader to run it. The two sides draw random numbers from one stream, as the submission's
own run did in one process: the generator's state travels with each ask and comes back with its answer.
"""

import torch


class Asked:
    """A callable of the grader's: each call asks the grader to run it (with gradients, as one node of
    this side's graph, whose backward asks the grader for the vector-Jacobian product)."""

    def __init__(self, ask, id: int):
        self.ask, self.id = ask, id

    def __call__(self, *args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return Graph.apply(self, *args)
        return self.run(args, grad=False)[1]

    def run(self, args: tuple, grad: bool):
        answer = self.ask({"fed": self.id, "grad": grad, "rng": torch.get_rng_state(),
                           "args": [a.detach() if isinstance(a, torch.Tensor) else a for a in args]})
        torch.set_rng_state(answer["rng"])
        return answer["call"], answer["output"]


class Graph(torch.autograd.Function):
    """One call of an Asked with gradients: the grader keeps its graph under `call`."""

    @staticmethod
    def forward(ctx, asked: Asked, *args):
        ctx.asked = asked
        ctx.call, out = asked.run(args, grad=True)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, *ctx.asked.ask({"fed_backward": ctx.call, "grad": grad}))
