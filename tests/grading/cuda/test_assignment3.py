"""Assignment 3, GPU tier: each component on the GPU, compared with itself on the CPU.

Runs with `grade assignment3 --device cuda` where the grader sees a CUDA device; elsewhere these
checks are reported as skipped and not counted.
"""

from tests import strategies as s
from tests.grading.helpers.checks import kit_sublayer
from tests.grading.helpers.device import Case, check_on_gpu, check_under_autocast, stored_case
from tests.grading.helpers.names import RESIDUAL
from tests.grading.support import stored


def case(name: str):
    return stored_case(stored("assignment3", name))


def test_residual_on_the_gpu(student):
    sublayer, _ = kit_sublayer(student, 8, 3)
    for nf in (False, True):
        check_on_gpu(student, Case(RESIDUAL, (s.tensor([2, 5, 8], 1), sublayer), (8,),
                                   {"dropout": 0.0, "norm_first": nf}), component="ResidualConnection")


def test_encoder_layer_on_the_gpu(student):
    check_on_gpu(student, case("encoder_layer_post_norm"), component="EncoderLayer")


def test_encoder_layer_under_autocast(student):
    check_under_autocast(student, case("encoder_layer_pre_norm"), component="EncoderLayer")


def test_encoder_on_the_gpu(student):
    check_on_gpu(student, case("encoder_pre_norm"), component="Encoder")


def test_decoder_layer_on_the_gpu(student):
    check_on_gpu(student, case("decoder_layer_pre_norm"), component="DecoderLayer")


def test_decoder_layer_under_autocast(student):
    check_under_autocast(student, case("decoder_layer_post_norm"), component="DecoderLayer")


def test_decoder_on_the_gpu(student):
    check_on_gpu(student, case("decoder_post_norm"), component="Decoder")


def test_transformer_on_the_gpu(student):
    check_on_gpu(student, case("transformer_pre_norm"), component="Transformer")


def test_transformer_under_autocast(student):
    check_under_autocast(student, case("transformer_post_norm"), component="Transformer")
