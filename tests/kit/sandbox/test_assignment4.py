"""Assignment 4 through the real command line: solutions, stubs, one-bug mutants, the training command."""

import math
import subprocess
import sys
from collections import Counter

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from grader.sandbox.child import fixtures
from grader.sandbox.child.fixtures import TinyTranslator
from grader.training import library as train
from grader.training import toytask
from tests.grading.helpers.names import PAD_ID
from tests.grading.helpers.training import SMALL, tiny_batches, train_epoch_expected
from tests.kit import strategies as s
from tests.kit.conftest import (
    ROOT,
    SOLUTIONS,
    assert_loses_only_in,
    grade_json,
    grade_one_bug,
    mutant,
    run_grade,
)
from tests.kit.mutants import BUGS

# greedy_decode without one of its masks: the kit's model uses the masks it is given, so each shows
GREEDY_WITHOUT_A_MASK = {
    "encodes_without_the_source_mask": {"assignment4/decoding.py": [
        ("memory = model.encode(src, src_mask)", "memory = model.encode(src, None)")]},
    "decodes_without_the_target_mask": {"assignment4/decoding.py": [
        ("out = model.decode(memory, src_mask, ys, make_tgt_mask(ys, model.pad_idx))",
         "out = model.decode(memory, src_mask, ys, None)")]},
}


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment4"))
def test_a_classic_bug_costs_its_own_component_only_and_is_named_there_in_one_screen(tmp_path, bug):
    report = grade_one_bug(tmp_path, bug)
    if bug == "train_epoch_gradients_accumulate":
        # train_epoch's own bug that stops the model learning: its end-to-end checks see it, and it costs
        # train_epoch only (a part's bug that stops learning costs only that part:
        # tests/kit/sandbox/test_attribution.py)
        end_to_end = [t for c in report["components"] for t in c["tests"] if t["id"].startswith("end_to_end")]
        assert any(t["status"] != "passed" and not t.get("excused_by") for t in end_to_end), end_to_end


@pytest.mark.parametrize("bug", sorted(GREEDY_WITHOUT_A_MASK))
def test_greedy_decode_without_a_mask_loses_points_in_greedy_decode_only(tmp_path, bug):
    assert_loses_only_in(grade_json(mutant(tmp_path, GREEDY_WITHOUT_A_MASK[bug]), "assignment4"), "greedy_decode")


def test_training_stopped_at_the_bar_took_the_steps_of_a_full_run_and_stopped_at_the_first_checkpoint(monkeypatch,
                                                                                                   request):
    monkeypatch.setattr(fixtures, "SUBMISSION", "solutions")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small ops: one thread is about as fast, and pytest-xdist runs another test beside it
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    task = dict(seed=0, n_train=4000, n_test=200, **SMALL)
    # a low bar, checked often, to keep this short: the reference has 0% at step 50 and 20% at step 100
    stopped = fixtures.train_date_task(steps=1000, target=0.1, every=50, **task)
    taken = len(stopped["losses"])
    assert taken % 50 == 0 and taken < 1000 and stopped["exact_match"] >= 0.1, (taken, stopped["exact_match"])
    again = fixtures.train_date_task(steps=taken, **task)  # evaluating changed nothing
    state, state_again = stopped.pop("state"), again.pop("state")  # the trained weights (grader.suite.trained)
    assert stopped == again
    assert state.keys() == state_again.keys() and all(torch.equal(state[k], state_again[k]) for k in state)
    assert fixtures.train_date_task(steps=taken - 50, **task)["exact_match"] < 0.1


@pytest.mark.parametrize(("seed", "lr", "gamma"), [(1, 0.3, None), (7, 0.4, 0.5), (3, 0.7, 0.9)])
def test_the_written_out_definition_of_train_epoch_is_torch_optims_bit_for_bit(seed, lr, gamma):
    batches = tiny_batches(seed, n_batches=5)
    model = TinyTranslator(9, 9, init=seed).train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma) if gamma else None
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_ID)
    losses = []
    for src, tgt_in, tgt_out in batches:
        opt.zero_grad()
        logits = model(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        losses.append(loss.item())
    mean, state = train_epoch_expected(batches, seed, lr, gamma=gamma)
    assert mean == sum(losses) / len(losses)
    assert state.keys() == model.state_dict().keys()
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_the_task_is_fixed_by_its_seed_and_its_splits_are_disjoint():
    a, b = toytask.make_task(seed=3, n_train=300, n_valid=50, n_test=50), toytask.make_task(3, 300, 50, 50)
    assert a.train == b.train and a.test == b.test
    assert a.train != toytask.make_task(seed=4, n_train=300, n_valid=50, n_test=50).train
    dates = [{"".join(t) for _, t in split} for split in (a.train, a.valid, a.test)]
    assert not (dates[0] & dates[1] or dates[0] & dates[2] or dates[1] & dates[2])
    assert len({tuple(s[:1]) for s, _ in a.train}) > 1  # several wordings


def textbook_bleu(hypotheses, references) -> float:
    """Corpus BLEU-4 as Papineni et al. (2002) define it, unsmoothed: the kit's own until sacreBLEU."""
    def grams(tokens, n):
        return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))

    matches, totals, hyp_len, ref_len = [0] * 4, [0] * 4, 0, 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        hyp_len, ref_len = hyp_len + len(hyp), ref_len + len(ref)
        for n in range(1, 5):
            matches[n - 1] += sum(min(c, grams(ref, n)[g]) for g, c in grams(hyp, n).items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * brevity * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)


def test_corpus_bleu_is_sacrebleus():
    ref = [list("1994-03-03"), list("2001-12-25")]
    assert train.corpus_bleu(ref, ref) == pytest.approx(100.0)
    assert train.corpus_bleu([list("abcd")] * 2, ref) == 0.0
    # no 3-gram matches: the textbook BLEU-4 is 0, sacreBLEU's exponential smoothing gives a little
    assert textbook_bleu([list("9999")] * 2, ref) == 0.0 < train.corpus_bleu([list("9999")] * 2, ref) < 5
    assert 0 < train.corpus_bleu([list("1994-03-04"), list("2001-12-25")], ref) < 100


@settings(derandomize=True, max_examples=60, deadline=None, database=None)
@given(st.lists(s.translated_dates(), min_size=1, max_size=6))
def test_on_date_tokens_sacrebleu_gives_the_textbook_figure_whenever_every_order_matches(pairs):
    hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
    textbook = textbook_bleu(hyps, refs)
    assume(textbook > 0)  # every n-gram order matched somewhere: sacreBLEU's smoothing changes nothing
    assert train.corpus_bleu(hyps, refs) == pytest.approx(textbook, rel=1e-9)


def test_training_command_runs_end_to_end(tmp_path):
    proc = run_grade("train", "assignment4", "--submission", str(SOLUTIONS), "--out", str(tmp_path / "out"),
                     "--steps", "40", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for text in ("exact match", "BLEU-4", "tokens / s", "Sample translations"):
        assert text in proc.stdout, proc.stdout[-3000:]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "pip install" in proc.stdout
    else:
        names = sorted(p.name for p in (tmp_path / "out").iterdir())
        assert names == ["cross_attention.png", "positional_encoding.png", "training_curve.png"]
        assert all((tmp_path / "out" / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)


def test_training_command_without_matplotlib_says_how_to_get_pictures(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from grader.cli import main; "
            f"sys.exit(main(['train', 'assignment4', '--submission', {str(SOLUTIONS)!r}, '--out', "
            f"{str(tmp_path / 'out')!r}, '--steps', '3']))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"NO_COLOR": "1", "COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "pip install matplotlib" in proc.stdout
    assert not (tmp_path / "out").exists()


def test_training_command_on_the_stubs_says_what_is_missing(tmp_path):
    proc = run_grade("train", "assignment4", "--out", str(tmp_path / "out"), "--steps", "3", timeout=300)
    assert proc.returncode == 1
    assert "Not implemented yet" in proc.stdout and "assignment4: Vocab.__init__" in proc.stdout
