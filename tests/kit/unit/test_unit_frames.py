"""A stray tensor's frames as the report shows them (tests/grading/helpers/device.py): a frame's file is
the worker's say-so; an honest watch writes it relative to the submission, a forged one may name any path,
long or short with the machine's folders. The report shows a file by its last characters, so that its
length (one screen) is the same on every machine (CI's checkout is 6 characters deeper than a laptop's)."""

from tests.grading.helpers.device import FILE_SHOWN, FRAME_SHOWN, _frame, _shown


def test_an_honest_frame_is_shown_whole():
    frame = "assignment2/masks.py:27 in make_causal_mask: mask = torch.ones(T, T).triu(1)"
    assert _frame(frame) == "assignment2/masks.py:27"
    assert _shown(frame) == frame


def test_a_long_path_keeps_its_tail_and_the_same_length_wherever_the_kit_lies():
    shown = [_frame(f"{root}/tests/grading/hidden/test_assignment1.py:1 in forward: x")
             for root in ("/work/main", "/check/work/main", "/" + "d" * 300)]
    assert len(set(shown)) == 1, shown
    assert shown[0].endswith("hidden/test_assignment1.py:1") and len(shown[0]) <= FILE_SHOWN + len(":1")
    rest = "forward" + "A" * 5000
    assert len(_shown(f"/{'d' * 300}/x.py:9 in {rest}")) <= FILE_SHOWN + len(":9 in ") + FRAME_SHOWN
