"""The panel that tells the bug (issue 44): the check shown in full is chosen with the failure's pattern
in view, and a hint's likely causes are shown only where they fit what failed. The four cases students
were misled by, each a tree graded as a student grades it."""

import dataclasses

from grader.judging.telling import topical
from grader.reveal import Reveal
from tests.kit.conftest import grade_report, mutant, report_lines

ENC = "assignment3/encoder.py"
FIRST_LAYER_ONLY = {ENC: [("        for layer in self.layers:\n            x = layer(x, src_mask)  # (B, S, d_model)",
                           "        for i, layer in enumerate(self.layers):\n"
                           "            x = layer(x, src_mask if i == 0 else None)  # (B, S, d_model)")]}
CROSS_SWAPPED = {"assignment3/decoder.py": [("self.cross_attn(x, memory, memory, src_mask)",
                                             "self.cross_attn(memory, x, x, src_mask)")]}
TGT_SHARES_SRC = {"assignment3/transformer.py": [
    ("self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
     "self.tgt_embed = self.src_embed")]}
GREEDY_PADDING = {"assignment4/decoding.py": [("nxt = nxt.masked_fill(done, model.pad_idx)", "pass")]}


def _component(graded, name: str):
    return next(c for c in graded.components if c.name == name)


def _said(graded, verbose: bool = False) -> str:
    return " ".join(" ".join(report_lines(graded) if not verbose else _verbose(graded)).replace("│", " ").split())


def _verbose(graded) -> list[str]:
    import io

    from rich.console import Console

    from grader.render import report

    out = io.StringIO()
    report.render(graded, Console(file=out, width=100, no_color=True, force_terminal=False), verbose=True)
    return out.getvalue().splitlines()


def test_an_encoder_masking_its_first_layer_only_is_not_told_as_a_final_norm(tmp_path):
    graded = grade_report(mutant(tmp_path, FIRST_LAYER_ONLY), "assignment3")
    enc = _component(graded, "Encoder")
    norm = next(t for t in enc.checks if t.id == "encoder_final_norm_only_with_norm_first").outcome
    # only the padded batch element is wrong, and the check knows a final norm would change both alike
    found = norm.details.pattern
    assert (found.wrong, found.batch, found.alike) == ((1,), 2, True), norm.details
    assert "some_batch" in found.kinds and found.fits == ("everywhere",), norm.details
    assert "src_mask: bool (2, 1, 1, 5)" in norm.details.example  # the input that matters is in the example
    assert enc.telling != "encoder_final_norm_only_with_norm_first", enc.telling
    said = _said(graded)
    assert "self.norm applied at the end" not in said, said
    # in full (--verbose), that check's panel says the pattern instead of causes that do not fit
    full = _said(graded, verbose=True)
    assert "only batch element 1 of 2 is wrong; the others match. So the cause is not one that changes every " \
           "batch element alike" in full, full
    assert "self.norm applied at the end (it exists only so that state dicts match" not in full


def test_cross_attention_with_query_and_memory_swapped_is_shown_by_a_wrong_value(tmp_path):
    graded = grade_report(mutant(tmp_path, CROSS_SWAPPED), "assignment3")
    layer = _component(graded, "DecoderLayer")
    shown = next(t for t in layer.checks if t.id == layer.telling)
    # not the leak check (its causes are all mask mistakes), not an exception in the device check
    assert layer.telling not in ("decoder_layer_does_not_leak_the_future", "decoder_layer_stays_on_the_inputs_device")
    assert shown.outcome.reason == "mismatch" and not shown.outcome.details.basis, shown
    # with only the checks and their hints to go on, no mask-only list of causes is the panel
    said = _said(dataclasses.replace(graded, reveal=Reveal.CHECK))
    assert "failed  decoder_layer_does_not_leak_the_future" not in said


def test_a_target_embedding_shared_with_the_source_is_said_to_be_shared(tmp_path):
    graded = grade_report(mutant(tmp_path, TGT_SHARES_SRC), "assignment3")
    transformer = _component(graded, "Transformer")
    assert transformer.telling == "transformer_has_named_parts", transformer.telling
    said = _said(dataclasses.replace(graded, reveal=Reveal.CHECK))
    assert "tgt_embed lists none of its parameters while src_embed lists the same names" in said, said
    assert "one module assigned to both attributes" in said


def test_a_greedy_padding_bug_is_shown_by_the_check_about_padding(tmp_path):
    graded = grade_report(mutant(tmp_path, GREEDY_PADDING), "assignment4")
    greedy = _component(graded, "greedy_decode")
    assert greedy.telling == "greedy_decode_stops_at_eos_and_pads_after", greedy.telling
    check = next(t for t in greedy.checks if t.id == greedy.telling)
    assert topical(check) > topical(next(t for t in greedy.checks if t.id == "greedy_decode_runs_in_eval_mode"))
    assert "failed  greedy_decode_runs_in_eval_mode" not in _said(graded)
