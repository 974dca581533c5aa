"""Assignment 2: attention.

Scaled dot-product attention, the boolean masks that say which keys a query may
look at, and multi-head attention built from them.

What every component here shares, unless its own docstring says otherwise (the
checks named *_stays_on_the_inputs_device, *_dropout_is_inactive_in_eval and
*_gradients_reach_every_parameter grade it):

- Runs on the device its inputs are on: any tensor it makes is made on the
  input's device (no .cpu(), .tolist() or .numpy() on the way), so it runs on a
  GPU as on the CPU.
- In eval() mode it is deterministic: dropout is off.
- Gradients reach every parameter: build it from differentiable tensor
  operations (no .detach(), no .item()).
"""
