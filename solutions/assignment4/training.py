"""Training: label-smoothed loss, the Noam learning-rate schedule, one epoch of updates."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LabelSmoothingLoss(nn.Module):
    """Cross-entropy against a smoothed target distribution (Szegedy et al., 2016).

    A one-hot target makes the model push one logit towards infinity. Label
    smoothing takes `smoothing` of the probability mass away from the correct
    class and spreads it evenly over all V classes:

        q[c] = (1 - smoothing) * [c == target] + smoothing / V
        loss = -sum_c q[c] * log_softmax(logits)[c]

    averaged over the positions whose target is not `pad_idx` (padding is
    neither predicted nor counted). With smoothing=0 this is plain cross-entropy.
    V is `vocab_size`, the number of classes given to the constructor (the logits
    have V columns), and the sum runs over all V classes, <pad>'s included.

    Shapes: logits (N, V) float, targets (N,) int64 -> a scalar.
    The result equals
        F.cross_entropy(logits, targets, ignore_index=pad_idx, label_smoothing=smoothing)
    but do not call that (or nn.CrossEntropyLoss with label_smoothing): build q
    and the sum yourself from log_softmax (a self-test that compares with it
    under `if __name__ == "__main__":` is fine: grading never runs that block).
    If every target is padding, return 0 (not NaN).

    The grader relies on these names: vocab_size, pad_idx, smoothing.

    Gradients with respect to the logits equal F.cross_entropy's (differentiable tensor
    operations only).
    """

    def __init__(self, vocab_size: int, pad_idx: int, smoothing: float = 0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.vocab_size = vocab_size
        self.pad_idx = pad_idx
        self.smoothing = smoothing
        ### END SOLUTION

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        log_probs = F.log_softmax(logits.float(), dim=-1)  # (N, V)
        keep = targets != self.pad_idx  # (N,)
        # smoothed target distribution q: smoothing / V everywhere, plus 1 - smoothing on the target
        q = torch.full_like(log_probs, self.smoothing / self.vocab_size)  # (N, V)
        safe = targets.masked_fill(~keep, 0)  # pad targets may be any id; point them somewhere valid
        q.scatter_add_(1, safe.unsqueeze(1), torch.full_like(log_probs[:, :1], 1.0 - self.smoothing))
        per_token = -(q * log_probs).sum(dim=-1)  # (N,)
        return (per_token * keep).sum() / keep.sum().clamp(min=1)
        ### END SOLUTION


def noam_lr(step: int, d_model: int, warmup: int) -> float:
    """The learning rate of "Attention Is All You Need" (section 5.3), at a given step.

        lr(step) = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

    It grows linearly for the first `warmup` steps, peaks at step == warmup,
    then decays like 1/sqrt(step). Steps count from 1: step < 1 raises
    ValueError (message: f"step must be >= 1, got {step}"), since step^-0.5 is
    undefined at 0.

    With torch.optim.lr_scheduler.LambdaLR (whose counter starts at 0) and an
    optimiser created with lr=1.0, use  lambda s: noam_lr(s + 1, d_model, warmup).
    Returns a number: a Python float, or any finite real number (an int, a NumPy
    float such as np.power gives); not a tensor, not a bool.
    """
    ### BEGIN SOLUTION
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
    ### END SOLUTION


def train_epoch(model, batches, optimizer, loss_fn, scheduler=None) -> float:
    """One pass over `batches`, one optimiser update per batch; returns the mean batch loss.

    `batches` yields (src, tgt_in, tgt_out) as made by data.collate. Per batch:

        optimizer.zero_grad()
        logits = model(src, tgt_in)                          # (B, T, V)
        loss = loss_fn(logits.reshape(-1, V), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        scheduler.step()            # only if a scheduler is given: once per batch, not per epoch

    Put the model in training mode first (dropout on). Return the mean of the
    batch losses, each batch counting once whatever its size or padding (not an
    average weighted by sentences or tokens), as a number: a Python float or any
    finite real number, not a tensor (use loss.item(), so no graph is kept alive).
    With no batches at all it updates nothing and returns 0.0.

    Trained this way (with your Transformer, Vocab, collate, LabelSmoothingLoss and
    noam_lr) on the kit's date task, the loss goes down and exact match reaches 75%
    on held-out dates.
    """
    ### BEGIN SOLUTION
    model.train()
    losses = []
    for src, tgt_in, tgt_out in batches:
        optimizer.zero_grad()
        logits = model(src, tgt_in)  # (B, T, V)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return sum(losses) / max(len(losses), 1)
    ### END SOLUTION
