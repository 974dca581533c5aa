"""Stand-ins for a composite's parts, worker side: the reference's parts run in the grader.

An isolated check grades a composite (an EncoderLayer, say) on the reference's versions of
the parts it builds on. The reference never enters the submission's process: each stand-in
owns parameters under the contract's names (so weights load by name as usual) and, when
called, asks the grader to run the reference's part on its inputs and weights. Stand-ins
carry values forward only; gradients do not flow through them.
"""

import torch


def stand_in(part: str, ask):
    """A class or function to use in place of `part` ("assignment2.masks:make_pad_mask");
    `ask(message)` sends a request to the grader and returns its answer."""
    name = part.rpartition(":")[2]
    if name[:1].islower():
        def function(*args, **kwargs):
            return ask({"call": part, "args": list(args), "kwargs": kwargs})["output"]

        function.__name__ = function.__qualname__ = name
        return function

    class Part(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            spec = ask({"build": part, "args": list(args), "kwargs": kwargs})
            self._kit_part = spec["id"]
            for key, value in spec["parameters"].items():
                _owner(self, key).register_parameter(key.rpartition(".")[2], torch.nn.Parameter(value))
            for key, value in spec["buffers"].items():
                _owner(self, key).register_buffer(key.rpartition(".")[2], value)

        def forward(self, *args, **kwargs):
            device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
            state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
            answer = ask({"forward": self._kit_part, "args": _cpu(list(args)), "kwargs": _cpu(kwargs),
                          "state": state, "training": self.training})
            for attr, value in answer["attrs"].items():
                setattr(self, attr, _to(value, device))
            return _to(answer["output"], device)

    Part.__name__ = Part.__qualname__ = name
    return Part


def _owner(module: torch.nn.Module, key: str) -> torch.nn.Module:
    """The submodule that holds `key` ("w_q.weight" -> module.w_q), made on the way."""
    for step in key.split(".")[:-1]:
        if step not in module._modules:
            module.add_module(step, torch.nn.Module())
        module = module._modules[step]
    return module


def _cpu(v):
    if isinstance(v, torch.Tensor):
        return v.detach().cpu()
    if isinstance(v, (list, tuple)):
        return type(v)(_cpu(x) for x in v)
    if isinstance(v, dict):
        return {k: _cpu(x) for k, x in v.items()}
    return v


def _to(v, device):
    if isinstance(v, torch.Tensor):
        return v.to(device) if device is not None else v
    if isinstance(v, tuple):
        return tuple(_to(x, device) for x in v)
    return v
