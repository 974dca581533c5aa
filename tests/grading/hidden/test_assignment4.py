"""Assignment 4, hidden tier: the live reference, other special ids, and the whole stack trained end to end."""

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.sandbox.child.tree import resolve
from grader.suite.checks import Mismatch, assert_close, describe, short
from tests import strategies as s
from tests.grading.helpers.names import COLLATE, LOSS, NOAM, VOCAB
from tests.grading.helpers.training import (
    check_greedy,
    expect_number,
    train_date_task,
)


@given(seqs=s.sentences(max_n=8), probe=s.sentences(max_n=2))
def test_vocab_matches_reference_on_unseen_and_seen_tokens(student, reference, seqs, probe):
    v = student.new(VOCAB, seqs)
    ref = resolve(reference, VOCAB)(seqs)
    for sentence in probe:
        # ids of the other words may be ordered differently: compare which tokens are <unk>
        got = v.method("encode", sentence)
        want = ref.encode(sentence)
        if type(got) not in (list, tuple) or [i == 3 for i in got] != [i == 3 for i in want]:
            raise Mismatch("encode should map exactly the unknown tokens to <unk> (3)", expected=str(want),
                           got=short(got), example=describe(sequences=seqs, sentence=sentence))


@given(pairs=s.id_pairs(vocab=40, max_b=6, max_len=9), pad_idx=st.sampled_from([0, 7]))
def test_collate_matches_reference(student, reference, pairs, pad_idx):
    want = resolve(reference, COLLATE)(pairs, pad_idx)
    got = student.call(COLLATE, pairs, pad_idx)
    outputs = got if isinstance(got, (list, tuple)) else [got] * 3
    for name, g, w in zip(("src", "tgt_in", "tgt_out"), outputs, want, strict=False):  # a short tuple: first ones
        assert_close(g, w, name=f"collate's {name}", example=describe(pairs=pairs, pad_idx=pad_idx))


@given(case=s.smoothing_cases())
def test_label_smoothing_loss_matches_reference(student, reference, case):
    logits, targets, pad, eps = case
    want = resolve(reference, LOSS)(logits.shape[1], pad, smoothing=eps)(logits, targets)
    got = student.new(LOSS, logits.shape[1], pad, smoothing=eps)(logits * 1.0, targets)
    assert_close(got, want, name="LabelSmoothingLoss", example=describe(logits=logits, targets=targets,
                                                                      pad_idx=pad, smoothing=eps))


@given(step=st.integers(1, 10**7), d_model=st.integers(1, 1024), warmup=st.integers(1, 10**5))
def test_noam_lr_matches_reference(student, reference, step, d_model, warmup):
    want = resolve(reference, NOAM)(step, d_model, warmup)
    example = describe(step=step, d_model=d_model, warmup=warmup)
    got = expect_number(student.call(NOAM, step, d_model, warmup), name="noam_lr's result", example=example)
    if not math.isclose(got, want, rel_tol=1e-9):
        raise Mismatch("noam_lr differs from the reference", expected=f"{want:.10g}", got=f"{got:.10g}",
                       example=example)


def test_greedy_decode_uses_the_given_special_ids(student):
    src = torch.tensor([[9, 10, 11, 5, 5], [6, 7, 5, 5, 5], [8, 9, 10, 11, 6]])
    check_greedy(student, src, 9, seed=11, pad=5, sos=3, eos=4)


ACCURACY = 0.75  # exact match on held-out dates; the reference is past it at step 200 (99.5%)
EVERY = 200  # steps between two looks at it: a model that does not learn is decoded 5 times, not 10


def test_end_to_end_training_reaches_accuracy(student):
    # trained until the bar is reached, at most 1000 steps
    check_accuracy(train_date_task(student, steps=1000, n_train=4000, n_test=200, target=ACCURACY, every=EVERY))


def check_accuracy(got: dict, threshold: float = ACCURACY, hint: str = ""):
    em = got.get("exact_match")
    if type(em) is not float or not em >= threshold:
        raise Mismatch("within 1000 training steps the model should translate most held-out dates exactly",
                       expected=f"exact match >= {threshold:.0%} on 200 held-out dates, checked every {EVERY} steps",
                       got=f"{em:.1%} after {len(got['losses'])} steps" if type(em) is float else short(em),
                       example="\n".join(f"{a}  ->  {c}   (reference: {b})" for a, b, c in got.get("samples", [])),
                       hint=hint or "Run `grade train assignment4` to see your model train and translate.")
