"""Assignment 4, GPU tier: the loss and greedy decoding on the GPU, compared with the CPU.

Runs with `grade assignment4 --device cuda` where the grader sees a CUDA device; elsewhere these
checks are reported as skipped and not counted. greedy_decode runs the kit's small translator,
moved to the GPU with the source: every token it starts or pads with must be made there too.
"""

import torch

from tests import strategies as s
from tests.grading.helpers.device import Case, check_on_gpu, check_under_autocast
from tests.grading.helpers.names import EOS_ID, GREEDY, LOSS, PAD_ID, SOS_ID

TARGETS = torch.tensor([3, 0, 5, 1, 0, 2])


def test_label_smoothing_loss_on_the_gpu(student):
    check_on_gpu(student, Case(LOSS, (s.tensor([6, 7], 2), TARGETS), (7, PAD_ID), {"smoothing": 0.1}),
                 component="LabelSmoothingLoss")


def test_label_smoothing_loss_under_autocast(student):
    check_under_autocast(student, Case(LOSS, (s.tensor([6, 7], 4, 3.0), TARGETS), (7, PAD_ID), {"smoothing": 0.2}),
                         component="LabelSmoothingLoss")


def test_greedy_decode_on_the_gpu(student):
    # init 25: every emitted token wins its argmax by more than 1, so no float difference can flip it
    model = student.new("kit:tiny_translator", 12, 12, pad_idx=PAD_ID, sos_idx=SOS_ID, eos_idx=EOS_ID, init=25)
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0], [4, 10, 11, 6]])
    check_on_gpu(student, Case(GREEDY, (model.eval(), src, 7, SOS_ID, EOS_ID), function=True),
                 component="greedy_decode")
