"""`grade --repro` recipes for the Transformer's checks and MultiHeadAttention's last two.

The Transformer checks record, with their example, how they built the model (sizes, vocab, norm_first,
the weights' seed): the weights are drawn again here and written into the script by the contract's
names; the leak checks compare the model's outputs with each other, as the checks do."""

import torch

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.attention import one_head_expected, one_head_weights
from tests.grading.helpers.names import MHA, TRANSFORMER, masks, random_state, transformer_shapes
from tests.grading.helpers.oracles import mha_weights, torch_mha, torch_transformer
from tests.grading.helpers.repro_layers import module_script
from tests.grading.helpers.repro_leaks import builder, dropout_main, invariance, values

TABLES = ("src_embed.token.embedding.weight", "tgt_embed.token.embedding.weight")
_SIZES = ("d_model", "n_heads", "n_layers", "d_ff", "max_len")


def model_parts(ex: dict) -> tuple[tuple, dict, dict]:
    """(args, kwargs, state) of the Transformer the check built (dropout 0), from the data it carries."""
    V, d, f, n = ex["vocab"], ex["d_model"], ex["d_ff"], ex["n_layers"]
    kwargs = {**{k: ex[k] for k in _SIZES}, "dropout": 0.0, "pad_idx": ex["pad_idx"], "norm_first": ex["norm_first"]}
    return (V, V), kwargs, random_state(transformer_shapes(V, V, d, f, n), ex["seed"])


def _matches_torch(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, tgt, pad, nf = ex["src"], ex["tgt"], ex["pad_idx"], ex["norm_first"]
    expected = torch_transformer(w, src, tgt, pad, ex["d_model"], ex["n_heads"], ex["d_ff"], ex["n_layers"], nf)
    return module_script(TRANSFORMER, (args, kwargs), w, {"src": src, "tgt": tgt}, expected,
                         f"Transformer logits (norm_first={nf})")


def _contract_masks(src, tgt, pad: int) -> str:
    src_mask, tgt_mask = masks(src != pad, tgt != pad)
    return f'''# the contract's masks: make_pad_mask(src, pad_idx) and make_tgt_mask(tgt, pad_idx)
src_mask = {literal(src_mask)}
tgt_mask = {literal(tgt_mask)}
'''


def _builds_its_masks(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, tgt = ex["src"], ex["tgt"]
    return values(src=src, tgt=tgt, pad_idx=ex["pad_idx"]) + _contract_masks(src, tgt, ex["pad_idx"]) + builder(
        TRANSFORMER, args, kwargs, w) + '''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(src=src, tgt=tgt, pad_idx=pad_idx)
    out = module.decode(module.encode(src, src_mask), src_mask, tgt, tgt_mask)
    # what forward(src, tgt) must give: your own encode and decode with the contract's masks, projected
    expected = torch.nn.functional.linear(out, state["projection.weight"], state["projection.bias"]).detach()
    return verdict(compare("forward(src, tgt) compared with your own encode/decode", module(src, tgt), expected,
                           atol=1e-5))
'''


def _decode_future(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, tgt, changed, t = ex["src"], ex["tgt"], ex["changed_tgt"], ex["last_kept"]
    ones = torch.ones(tgt.shape, dtype=torch.bool)
    after = "module.decode(module.encode(src, src_mask), src_mask, changed_tgt, tgt_mask)"
    return values(src=src, tgt=tgt, pad_idx=ex["pad_idx"]) + f'''\
# tgt (no padding) changed after position {t}: decode's outputs up to it must not change
changed_tgt = {literal(changed)}
# make_pad_mask(src, pad_idx), and the causal mask of a target without padding
src_mask = {literal(masks(src != ex["pad_idx"]))}
tgt_mask = {literal(masks(ones, ones)[1])}
''' + builder(TRANSFORMER, args, kwargs, w) + invariance(
        "src=src, tgt=tgt, changed_tgt=changed_tgt, pad_idx=pad_idx",
        "module.decode(module.encode(src, src_mask), src_mask, tgt, tgt_mask)",
        (f"decode outputs at positions 0..{t}", f"{after}[:, :{t + 1}]", f"before[:, :{t + 1}]"),
        ("decode outputs at the changed positions", f"{after}[:, {t + 1}:]", f"before[:, {t + 1}:]"), 1e-5)


def _source_padding(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, pad, V = ex["src"], ex["pad_idx"], ex["vocab"]
    extra = ex["padding_appended"]
    longer = torch.cat([src, torch.full((src.shape[0], extra), pad)], dim=1)
    changed = src.clone()
    changed[:, 0] = torch.where(changed[:, 0] == (pad + 1) % V, (pad + 2) % V, (pad + 1) % V)
    return values(src=src, tgt=ex["tgt"], pad_idx=pad) + f'''\
# src with {extra} pad_idx tokens appended: the logits must not change
longer_src = {literal(longer)}
# src with its first token (real in every row) changed: the logits must change
changed_src = {literal(changed)}
''' + builder(TRANSFORMER, args, kwargs, w) + invariance(
        f"src=src, tgt=tgt, pad_idx=pad_idx, padding_appended={extra}", "module(src, tgt)",
        ("logits with padding appended to the source", "module(longer_src, tgt)", "before"),
        ("the logits when a real source token changes", "module(changed_src, tgt)", "before"), 1e-4)


def _batch_independent(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, tgt, V = ex["src"], ex["tgt"], ex["vocab"]
    src2, tgt2 = src.clone(), tgt.clone()
    src2[0], tgt2[0] = src2[0] % (V - 1) + 1, tgt2[0] % (V - 1) + 1
    after = "module(changed_src, changed_tgt)"
    return values(src=src, tgt=tgt) + f'''\
# only batch element 0 changed: the others' logits must stay as they were
changed_src = {literal(src2)}
changed_tgt = {literal(tgt2)}
''' + builder(TRANSFORMER, args, kwargs, w) + invariance(
        "src=src, tgt=tgt, changed_batch_element=0", "module(src, tgt)",
        ("logits of the batch elements that did not change", f"{after}[1:]", "before[1:]"),
        ("the logits of the changed batch element", f"{after}[0]", "before[0]"), 1e-5)


def _padding_rows(ex: dict) -> str:
    sizes = {k: ex[k] for k in _SIZES}
    return values(src_vocab_size=ex["src_vocab_size"], tgt_vocab_size=ex["tgt_vocab_size"], pad_idx=ex["pad_idx"],
                  sizes=sizes) + f'''

def main() -> int:
    Transformer = load("{TRANSFORMER}")
    model = Transformer(src_vocab_size, tgt_vocab_size, **sizes, pad_idx=pad_idx)  # as your constructor makes it
    show(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, pad_idx=pad_idx, **sizes)
    state = model.state_dict()
    ok = True
    for name in {TABLES!r}:
        table = state.get(name)
        if not isinstance(table, torch.Tensor):
            print(f"your Transformer has no {{name}} (the embeddings are TransformerEmbedding modules)")
            return 1
        ok &= compare(f"row {{pad_idx}} (pad_idx) of {{name}}", table[pad_idx], torch.zeros(table.shape[1]),
                      atol=0, rtol=0)
        others = torch.cat([table[:pad_idx], table[pad_idx + 1:]])
        if bool((others.abs().sum(-1) == 0).any()):
            print(f"--- a row of {{name}} other than pad_idx is all zeros")
            ok = False
    return verdict(ok)
'''


def _padding_no_gradient(ex: dict) -> str:
    sizes = {k: ex[k] for k in _SIZES}
    return values(src=ex["src"], tgt=ex["tgt"], pad_idx=ex["pad_idx"], vocab=ex["vocab"], sizes=sizes,
                  grad_output=ex["grad_output"]) + f'''

def main() -> int:
    Transformer = load("{TRANSFORMER}")
    model = Transformer(vocab, vocab, **sizes, dropout=0.0, pad_idx=pad_idx)  # as your constructor makes it
    show(src=src, tgt=tgt, pad_idx=pad_idx)
    # backward of sum(logits * grad_output), as the check runs it
    (model(src, tgt) * grad_output).sum().backward()
    grads = {{name: p.grad for name, p in model.named_parameters()}}
    ok = True
    for name in {TABLES!r}:
        grad = grads.get(name)
        if not isinstance(grad, torch.Tensor):
            print(f"--- no gradient for {{name}} (the embeddings are TransformerEmbedding modules)")
            return 1
        ok &= compare(f"gradient of row {{pad_idx}} (pad_idx) of {{name}}", grad[pad_idx],
                      torch.zeros(grad.shape[1]), atol=0, rtol=0)
    return verdict(ok)
'''


def _heads_contiguous(ex: dict) -> str:
    d, h, head, q, kv = ex["d_model"], ex["n_heads"], ex["head"], ex["q"], ex["kv"]
    w = one_head_weights(d, h, head, ex["seed"])
    return values(q=q, kv=kv) + f'''\
# only columns {head * (d // h)}:{(head + 1) * (d // h)} of w_q and w_k are non-zero: only head {head} is not uniform
expected_weights = {literal(one_head_expected(w, h, head, q, kv).float())}
# nn.MultiheadAttention on these weights
expected_out = {literal(torch_mha(w, d, h, q, kv, kv)[0])}
''' + builder(MHA, (d, h), {}, w) + f'''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(d_model={d}, n_heads={h}, head={head}, q=q, kv=kv)
    out = module(q, kv, kv)
    ok = compare("attention_weights", getattr(module, "attention_weights", None), expected_weights, atol=1e-5)
    ok &= compare("MultiHeadAttention output", out, expected_out, atol=1e-4)
    return verdict(ok)
'''


def _mha_dropout(ex: dict) -> str:
    q, kv, h = ex["q"], ex["kv"], ex["n_heads"]
    d = q.shape[-1]
    w = mha_weights(d, ex["seed"])
    return values(q=q, kv=kv, n_heads=h) + f'''\
# nn.MultiheadAttention on these weights, without dropout
expected = {literal(torch_mha(w, d, h, q, kv, kv)[0])}
''' + builder(MHA, (d, h), {"dropout": 0.9}, w) + dropout_main("q=q, kv=kv, n_heads=n_heads", "q, kv, kv",
                                                               "MultiHeadAttention", 1e-4)


_BUILT = ("pad_idx", "norm_first", "vocab", "seed", *_SIZES)
TRANSFORMER_RECIPES = {
    "transformer_matches_torch": Recipe(("src", "tgt", *_BUILT), _matches_torch),
    "transformer_forward_builds_its_masks_from_pad_idx": Recipe(("src", "tgt", *_BUILT), _builds_its_masks),
    "transformer_decode_does_not_leak_the_future": Recipe(("src", "tgt", "changed_tgt", "last_kept", *_BUILT),
                                                          _decode_future),
    "transformer_source_padding_does_not_leak": Recipe(("src", "tgt", "padding_appended", *_BUILT), _source_padding),
    "transformer_batch_elements_are_independent": Recipe(("src", "tgt", *_BUILT), _batch_independent),
    "transformer_padding_rows_are_zero": Recipe(("src_vocab_size", "tgt_vocab_size", "pad_idx", *_SIZES),
                                                _padding_rows),
    "transformer_padding_rows_get_no_gradient": Recipe(("src", "tgt", "pad_idx", "vocab", "grad_output", *_SIZES),
                                                       _padding_no_gradient),
    "mha_heads_use_contiguous_columns": Recipe(("d_model", "n_heads", "head", "q", "kv", "seed"), _heads_contiguous),
    "mha_dropout_is_inactive_in_eval": Recipe(("q", "kv", "n_heads", "seed"), _mha_dropout),
}
