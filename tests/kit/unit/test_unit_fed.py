"""The fed run's boundary (grader.suite.fed): what the submission's parts answer is used by the reference's
composite in the grader only where it has the form of the reference's part's answer on the same inputs
(its twin on the meta device); anything else is no evidence (Unsupported), never computed on."""

import pytest
import torch

from grader.suite.fed.forms import Formless, Unsupported, entries, fitted, signature

LIKE = torch.empty(2, 3, 4, device="meta")


class Lying(torch.Tensor):
    pass


def test_an_answer_of_the_reference_parts_form_is_taken_as_it_came():
    got = torch.randn(2, 3, 4)
    assert fitted(got, LIKE) is got
    pair = (torch.randn(2, 3, 4), torch.zeros(2, 3, 3))
    assert fitted(pair, (LIKE, torch.empty(2, 3, 3, device="meta"))) == pair


@pytest.mark.parametrize("got", [
    torch.randn(1, 1_000_000),  # what would make the composite compute on a million positions
    torch.randn(2, 3, 4).double(), torch.randn(2, 3, 4).as_subclass(Lying), [torch.randn(2, 3, 4)],
    "a string", None, (torch.randn(2, 3, 4),)],
    ids=["shape", "dtype", "subclass", "list", "text", "none", "tuple"])
def test_any_other_answer_is_no_evidence(got):
    with pytest.raises(Unsupported):
        fitted(got, LIKE)


def test_a_signature_tells_apart_whatever_could_change_a_parts_form():
    """Fed._like keeps a reference part's form on meta by its inputs' signatures: inputs of one signature
    give one form (a tensor's values never change a form on meta; a callable is run as one that keeps its
    input's form), and a signature tells apart every shape, dtype, plain value and nesting."""
    x = torch.randn(2, 3, 4)
    assert signature(((x, lambda t: t), {"mask": None})) == signature(((torch.zeros(2, 3, 4), print), {"mask": None}))
    different = [(x,), (torch.randn(2, 3, 5),), (x.double(),), [x], (x, 1), (x, 2), (x, 2.0), (x, True), (x, "2"),
                 ((x,),), ({"a": x},), ({"b": x},)]
    assert len({signature(v) for v in different}) == len(different)
    for formless in (object(), {1: x}, torch.nn, type):
        with pytest.raises(Formless):
            signature((x, formless))


def test_a_listing_is_read_only_where_each_entry_is_named():
    assert entries({"parameters": [["w", [2], "float32", True]]}, "parameters") == [["w", [2], "float32", True]]
    assert entries({"missing": ["w"]}, "missing", str) == ["w"]
    for bad in ({"parameters": [[3, [2]]]}, {"parameters": "w"}, {"parameters": [[]]}, [], None):
        with pytest.raises(Unsupported):
            entries(bad, "parameters")


# --- the grader's callables handed to the submission's parts (Fed.handed, Fed.answer) ---------------------

def _fed():
    from grader.suite.fed.composite import Fed
    from tests.kit.conftest import ROOT

    return Fed(None, ROOT / "solutions", ("assignment1.layer_norm:LayerNorm",))


def _handed(fed, x: torch.Tensor, fn) -> int:
    _, handle = fed.handed([x, fn])
    assert handle.id < 0  # the worker turns a negative id into an ask (grader.sandbox.child.asked)
    return handle.id


def test_a_handed_callable_runs_here_on_tensors_of_the_forms_handed_with_it():
    fed, x = _fed(), torch.randn(2, 3, 4)
    key = _handed(fed, x, lambda t: t * 2)
    answer = fed.answer({"fed": key, "args": [x + 1], "grad": False, "rng": torch.get_rng_state()})
    assert answer["call"] is None and torch.equal(answer["output"], (x + 1) * 2)
    assert answer["rng"].shape == torch.get_rng_state().shape


def test_the_worker_asks_only_for_callables_handed_on_tensors_of_their_forms():
    fed, x = _fed(), torch.randn(2, 3, 4)
    key = _handed(fed, x, lambda t: t)
    composite = fed._export(torch.nn.Linear(4, 4))  # an object of the grader's, never handed to a part
    rng = torch.get_rng_state()
    for bad in ({"fed": key - 100, "args": [x]}, {"fed": composite.id, "args": [x]},
                {"fed": key, "args": [torch.randn(1, 1_000_000)]}, {"fed": key, "args": [x.double()]},
                {"fed": key, "args": [x.as_subclass(Lying)]}, {"fed": key, "args": "x"}):
        with pytest.raises(ValueError):
            fed.answer({**bad, "grad": False, "rng": rng})
    for state in (torch.zeros(3, dtype=torch.uint8), rng.float(), "rng"):
        with pytest.raises(Unsupported):
            fed.answer({"fed": key, "args": [x], "grad": False, "rng": state})


def test_a_callable_run_with_gradients_backpropagates_at_the_worker_s_ask():
    fed, x, w = _fed(), torch.randn(2, 3, 4), torch.randn(4, requires_grad=True)
    key = _handed(fed, x, lambda t: t * w)
    answer = fed.answer({"fed": key, "args": [x], "grad": True, "rng": torch.get_rng_state()})
    grad = torch.randn(2, 3, 4)
    (input_grad,) = fed.answer({"fed_backward": answer["call"], "grad": grad})
    assert torch.allclose(input_grad, grad * w.detach())
    assert torch.allclose(w.grad, (grad * x).sum((0, 1)))  # the grader's own weights get theirs
    for bad in ({"fed_backward": answer["call"] + 1, "grad": grad}, {"fed_backward": answer["call"], "grad": x[0]}):
        with pytest.raises(ValueError):
            fed.answer(bad)


# --- a part's parameters mirrored in the grader (grader.suite.fed.mirror) ---------------------------------

def _listing(module: torch.nn.Module) -> list:
    return [[n, list(p.shape), "float32", p.requires_grad] for n, p in module.named_parameters()]


def test_a_parts_parameters_are_the_composites_under_the_workers_names_and_go_back_where_changed():
    from grader.suite.fed.mirror import changed, mirror

    part = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    own = torch.nn.Module()
    held = mirror(own, _listing(part), dict(part.state_dict()), twin=part)
    assert [n for n, _ in own.named_parameters()] == [n for n, _ in part.named_parameters()]
    assert changed(own, held) == {}
    with torch.no_grad():
        own.get_parameter("2.weight")[0].zero_()  # as Transformer's constructor zeroes a padding row
    assert list(changed(own, held)) == ["2.weight"] and changed(own, held) == {}


@pytest.mark.parametrize("case", ["too_many_elements", "a_private_name", "the_kit_s_name", "not_in_the_state",
                                  "another_shape", "an_integer_tensor"])
def test_what_cannot_be_a_parts_parameter_here_is_no_evidence(case):
    from grader.suite.fed.mirror import mirror

    twin = torch.nn.Linear(3, 4)
    listing, state = _listing(twin), dict(twin.state_dict())
    if case == "too_many_elements":  # the grader would hold whatever the worker sends
        listing, state = [["w", [1000, 1000], "float32", True]], {"w": torch.zeros(1000, 1000)}
    elif case == "a_private_name":
        listing, state = [["_w", [2], "float32", True]], {"_w": torch.zeros(2)}
    elif case == "the_kit_s_name":
        listing, state = [["remote", [2], "float32", True]], {"remote": torch.zeros(2)}
    elif case == "not_in_the_state":
        state = {}
    elif case == "another_shape":
        state = {"weight": torch.zeros(5, 5), "bias": torch.zeros(4)}
    else:
        state = {"weight": torch.zeros(4, 3, dtype=torch.long), "bias": torch.zeros(4)}
    with pytest.raises(Unsupported):
        mirror(torch.nn.Module(), listing, state, twin)


def test_a_fault_of_the_fed_runs_own_code_is_no_evidence_not_the_references_exception():
    fed = _fed()
    with pytest.raises(Unsupported):
        fed.serve({"op": "call"})  # no target: a KeyError in the fed run's own lines
    with pytest.raises(Exception) as raised:  # the reference's part itself raised: that is the run's outcome
        fed.serve({"op": "call", "target": "assignment2.masks:make_pad_mask", "args": [torch.zeros(2, 3)],
                   "kwargs": {"pad_idx": "0"}})
    assert type(raised.value).__name__ == "StudentError", raised.value


def test_what_an_object_of_the_workers_answers_is_taken_within_bounds_only():
    from grader.suite.fed import parts
    from grader.suite.fed.parts import Theirs, loose

    Handle = parts.protocol.Handle  # the worker's objects, as the grader names them

    fed = _fed()
    ok = [torch.zeros(2, 3), 3, 2.5, True, None, "pad", (torch.zeros(1), [1, 2])]
    for value in ok:
        assert loose(fed, value) is value or loose(fed, value) == value
    assert isinstance(loose(fed, Handle(7, "Transformer")), Theirs)  # its methods and submodules are called there
    for bad in (torch.zeros(1 << 21), torch.zeros(3).as_subclass(Lying), "x" * 201, Handle(-3, "Fed"),
                [[[[[1]]]]], {"a": 1}, object()):
        with pytest.raises(Unsupported):
            loose(fed, bad)


def test_an_output_with_its_elements_otherwise_arranged_is_taken_where_it_is_no_larger():
    swapped = torch.zeros(2, 1, 4, 1, dtype=torch.bool)  # a pad mask over the queries: (B, 1, S, 1)
    like = torch.empty(2, 1, 1, 4, dtype=torch.bool, device="meta")
    assert fitted(swapped, like, arranged=True) is swapped
    with pytest.raises(Unsupported):
        fitted(swapped, like)  # gradients and weights keep their exact form
    for bad in (torch.zeros(2, 1, 4, 4, dtype=torch.bool), torch.zeros(2, 1, 5, 1, dtype=torch.bool),
                torch.zeros(8, dtype=torch.bool), torch.zeros(2, 1, 4, 1)):
        with pytest.raises(Unsupported):
            fitted(bad, like, arranged=True)


def test_a_kit_harness_that_runs_the_submissions_stack_is_no_evidence():
    # kit:train_date_task runs the submission's train_epoch on its own parts in the worker: served there in
    # the fed run, it would replay the check's own run and "explain" its failure by itself
    fed = _fed()
    with pytest.raises(Unsupported, match="train_date_task"):
        fed.serves({"op": "call", "target": "kit:train_date_task", "args": [], "kwargs": {}})
    # the kit's objects that run nothing of the submission's are the check's, built there as in its own run
    assert fed.serves({"op": "call", "target": "kit:tiny_translator", "args": [], "kwargs": {}}) is False
    assert fed.serves({"op": "call", "target": "assignment2.multi_head_attention:MultiHeadAttention"}) is True
