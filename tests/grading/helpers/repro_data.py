"""`grade --repro` recipes for assignment4 (tests/grading/public/repro.py registers them): Vocab, collate,
the loss's gradient and noam_lr's shape here; train_epoch and greedy_decode, on the kit's tiny model, in
repro_training.py. Each script checks what its check checks, in the same order, on the recorded example."""

import torch.nn.functional as F

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import COLLATE, LOSS, NOAM, SPECIALS, VOCAB
from tests.grading.helpers.repro_training import TRAINING_RECIPES, TRAINING_WHY_NOT
from tests.grading.helpers.training import collate_expected

# what the Vocab scripts share: a list of ints or why not, and a comparison of plain values that prints both
VOCAB_HELPERS = '''
def int_list(name, value):
    """`value` as a list, where it is a list (or tuple) of ints, as the grader asks; else None, saying so."""
    if type(value) not in (list, tuple) or not all(type(x) is int for x in value):
        print(f"--- {name} should be a list of int, got {value!r}")
        return None
    return list(value)


def same(name, got, expected, what="") -> bool:
    print(f"=== {name}" + (f" ({what})" if what else ""))
    print("expected:", expected)
    print("got:     ", got)
    return got == expected
'''


# the lines of main() that check each Vocab check, `v` built from `sequences` (and min_freq), in its order
VOCAB_CHECKS = {
    "vocab_specials_come_first": '''
    v = Vocab(sequences)
    got = int_list("encode(['<pad>', '<sos>', '<eos>', '<unk>'])", v.encode(SPECIALS))
    if got is None or not same("encode of the specials", got, [0, 1, 2, 3]):
        return verdict(False)
    back = v.decode([0, 1, 2, 3])
    if not same("decode([0, 1, 2, 3])", list(back) if type(back) in (list, tuple) else back, SPECIALS):
        return verdict(False)
    ids = int_list("encode(words of the data)", v.encode([w for seq in sequences for w in seq]))
    print("=== ids of the words of the data (each should be >= 4: 0..3 belong to the specials)")
    print("got:", ids)
    return verdict(ids is not None and all(i >= 4 for i in ids))''',
    "vocab_encode_decode_round_trip": '''
    v = Vocab(sequences)
    distinct = sorted({w for seq in sequences for w in seq})
    n = len(v)
    if not same("len(vocab)", n, 4 + len(distinct), "the 4 specials and every distinct word"):
        return verdict(False)
    ids = int_list("encode(distinct words)", v.encode(distinct))
    print("=== ids of the distinct words (each its own, in 4 .. len(vocab) - 1)")
    print("got:", None if ids is None else dict(zip(distinct, ids)))
    if ids is None or len(set(ids)) != len(distinct) or any(i < 4 or i >= n for i in ids):
        return verdict(False)
    for seq in sequences:
        enc = int_list(f"encode({seq})", v.encode(seq))
        if enc is None or not same(f"number of ids of encode({seq})", len(enc), len(seq), "no specials added"):
            return verdict(False)
        back = v.decode(enc)
        if not same(f"decode(encode({seq}))", list(back) if type(back) in (list, tuple) else back, seq):
            return verdict(False)
    return verdict(True)''',
    "vocab_maps_unknown_tokens_to_unk": '''
    v = Vocab(sequences)
    got = int_list(f"encode({tokens})", v.encode(tokens))
    if got is None:
        return verdict(False)
    print(f"=== encode({tokens}): unknown tokens are <unk> (3), known ones their own ids (not 3)")
    print("got:", got)
    return verdict(got[1] == 3 and got[3] == 3 and 3 not in (got[0], got[2]))''',
    "vocab_min_freq_drops_rare_tokens": '''
    v = Vocab(sequences, min_freq=min_freq)
    n = len(v)
    probe = ["a", "b", "e", "c", "d", "f"]
    ids = int_list(f"encode({probe})", v.encode(probe))
    if ids is None:
        return verdict(False)
    print("=== with min_freq=2: len 7; 'a', 'b' and 'e' (each seen at least twice, counting every occurrence) "
          "get their own ids, 'c', 'd' and 'f' (seen once) are <unk> (3)")
    print(f"got: len {n!r}, ids {ids}")
    return verdict(n == 7 and ids[3:] == [3] * 3 and 3 not in ids[:3] and len(set(ids[:3])) == 3)''',
    "vocab_decode_maps_ids_as_they_are": '''
    v = Vocab(sequences)
    ids = [1, *v.encode(["may"]), 2, 0, 3]  # <sos> may <eos> <pad> <unk>, 'may' by your encode
    print("ids =", ids)
    got = v.decode(ids)
    got = list(got) if type(got) in (list, tuple) else got
    return verdict(same("decode(ids), specials included", got, ["<sos>", "may", "<eos>", "<pad>", "<unk>"]))''',
}


def _vocab_recipe(check: str, names: tuple[str, ...]) -> Recipe:
    def body(ex: dict) -> str:
        given = "".join(f"{name} = {literal(ex[name])}\n" for name in names)
        return f'''
{given}SPECIALS = {SPECIALS!r}
{VOCAB_HELPERS}

def main() -> int:
    Vocab = load("{VOCAB}")
    show({", ".join(f"{name}={name}" for name in names)})
{VOCAB_CHECKS[check]}
'''
    return Recipe(names, body)


def _collate(ex: dict) -> str:
    pairs, pad = [(list(a), list(b)) for a, b in ex["pairs"]], ex["pad_idx"]
    src, tgt_in, tgt_out = collate_expected(pairs, pad)
    return f'''
pairs = {literal(pairs)}
pad_idx = {pad!r}
# src: the sources as given; tgt_in: <sos> (1) then the target; tgt_out: the target then <eos> (2); each
# right-padded with pad_idx to its own longest row
expected = {{
    "src": {literal(src)},
    "tgt_in": {literal(tgt_in)},
    "tgt_out": {literal(tgt_out)},
}}


def main() -> int:
    collate = load("{COLLATE}")
    show(pairs=pairs, pad_idx=pad_idx)
    got = collate(pairs, pad_idx)
    if type(got) not in (tuple, list) or len(got) != 3:
        print(f"collate should return three tensors (src, tgt_in, tgt_out), got {{got!r}}")
        return verdict(False)
    ok = True
    for (name, want), value in zip(expected.items(), got):
        ok &= compare(f"collate's {{name}}", value, want, atol=0)
    return verdict(ok)
'''


def _loss_gradients(ex: dict) -> str:
    logits, targets, pad, eps = ex["logits"], ex["targets"], ex["pad_idx"], ex["smoothing"]
    x = logits.clone().requires_grad_(True)
    F.cross_entropy(x, targets, ignore_index=pad, label_smoothing=eps).backward()
    assert x.grad is not None
    return f'''
logits = {literal(logits)}
targets = {literal(targets)}
pad_idx = {pad!r}
smoothing = {eps!r}
# the gradient of torch.nn.functional.cross_entropy(logits, targets, ignore_index=pad_idx,
# label_smoothing=smoothing) with respect to the logits
expected = {literal(x.grad)}


def main() -> int:
    LabelSmoothingLoss = load("{LOSS}")
    show(logits=logits, targets=targets, pad_idx=pad_idx, smoothing=smoothing)
    loss = LabelSmoothingLoss(logits.shape[1], pad_idx, smoothing=smoothing)
    x = logits.clone().requires_grad_(True)
    out = loss(x, targets)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        print(f"the loss should be a tensor that carries a gradient back to the logits, got {{out!r}}")
        return verdict(False)
    out.backward(torch.tensor(1.0))
    return verdict(compare("gradient with respect to the logits", x.grad, expected, atol=1e-5))
'''


def _noam_shape(ex: dict) -> str:
    d, w = ex["d_model"], ex["warmup"]
    formula = [d ** -0.5 * min(step ** -0.5, step * w ** -1.5) for step in range(1, 31)]
    return f'''
d_model, warmup = {d!r}, {w!r}
# for reference, the formula of noam_lr's docstring at steps 1..30 (the check asks for its shape only)
formula = {formula!r}


def main() -> int:
    noam_lr = load("{NOAM}")
    show(d_model=d_model, warmup=warmup, steps="1..30")
    lrs = []
    for step in range(1, 31):
        lr = noam_lr(step, d_model, warmup)
        if type(lr) is bool or not isinstance(lr, (int, float)) or not math.isfinite(lr):
            print(f"noam_lr({{step}}, {{d_model}}, {{warmup}}) should be a finite number, got {{lr!r}}")
            return verdict(False)
        lrs.append(float(lr))
    print("formula:", formula)
    print("got:    ", lrs)
    w = warmup
    peak = max(range(30), key=lambda i: lrs[i]) + 1
    print(f"=== peak at step {{peak}} (expected: step warmup = {{w}})")
    if peak != w:
        return verdict(False)
    print(f"=== peak value {{lrs[w - 1]!r}} (expected: d_model^-0.5 * warmup^-0.5 = {{d_model ** -0.5 * w ** -0.5!r}})")
    if not math.isclose(lrs[w - 1], d_model ** -0.5 * w ** -0.5, rel_tol=1e-9):
        return verdict(False)
    print("=== during warm-up: lr(2) = 2 lr(1), increasing up to step warmup")
    if not math.isclose(lrs[1], 2 * lrs[0], rel_tol=1e-9) or not all(a < b for a, b in zip(lrs[:w - 1], lrs[1:w])):
        return verdict(False)
    print("=== after warm-up: decreasing")
    if not all(a > b for a, b in zip(lrs[w - 1:], lrs[w:])):
        return verdict(False)
    print(f"=== like 1/sqrt(step): lr(30) = lr(warmup) * sqrt(warmup / 30) = {{lrs[w - 1] * math.sqrt(w / 30)!r}}")
    return verdict(math.isclose(lrs[29], lrs[w - 1] * math.sqrt(w / 30), rel_tol=1e-9))
'''


DATA_RECIPES: dict[str, Recipe] = {
    "vocab_specials_come_first": _vocab_recipe("vocab_specials_come_first", ("sequences",)),
    "vocab_encode_decode_round_trip": _vocab_recipe("vocab_encode_decode_round_trip", ("sequences",)),
    "vocab_maps_unknown_tokens_to_unk": _vocab_recipe("vocab_maps_unknown_tokens_to_unk", ("sequences", "tokens")),
    "vocab_min_freq_drops_rare_tokens": _vocab_recipe("vocab_min_freq_drops_rare_tokens", ("sequences", "min_freq")),
    "vocab_decode_maps_ids_as_they_are": _vocab_recipe("vocab_decode_maps_ids_as_they_are", ("sequences",)),
    **{check: Recipe(("pairs", "pad_idx"), _collate) for check in (
        "collate_matches_its_definition", "collate_shifts_the_target", "collate_pads_src_and_tgt_independently")},
    "label_smoothing_loss_gradients_match_torch": Recipe(("logits", "targets", "pad_idx", "smoothing"),
                                                         _loss_gradients),
    "noam_lr_warms_up_then_decays": Recipe(("d_model", "warmup"), _noam_shape),
    **TRAINING_RECIPES,
}
# why these checks get no script (by check id, or the end of one)
DATA_WHY_NOT: dict[str, str] = {**TRAINING_WHY_NOT}
