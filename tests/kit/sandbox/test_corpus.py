"""`grade train assignment4 --data` and `grade translate` on a made-up language pair (tests/kit/madeup.py):
the reader's one-line errors, a run that stops and resumes bit for bit, the held-out split's score,
Ctrl-C, and translating with the checkpoint. Tiny models: seconds, not minutes."""

import io
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from grader.cli import main as grade
from grader.translation import checkpoint as ckpt
from grader.translation.corpus import CorpusError, CorpusSource, read_pairs
from tests.kit import madeup
from tests.kit.conftest import ROOT, SOLUTIONS

# a model and a run small enough for a test: a few steps take well under a second
TINY = ["--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "16", "--warmup", "10",
        "--max-tokens", "16", "--held-out", "12", "--submission", str(SOLUTIONS), "--no-pictures"]


def run(argv: list[str]) -> int:
    """`grade ARGV` in this process: its exit status (a usage error's SystemExit(2) included)."""
    try:
        return grade(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def train(*argv: str) -> int:
    return run(["train", "assignment4", *argv])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return madeup.write_tsv(tmp_path_factory.mktemp("corpus") / "pairs.tsv", 300, seed=5)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    """A finished tiny run's folder (checkpoint.pt, scores.json, pictures)."""
    out = tmp_path_factory.mktemp("run")
    assert train("--data", str(corpus), "--out", str(out), "--steps", "30", *TINY[:-1]) == 0  # pictures too
    return out


def _bad_corpora(tmp_path):
    good = "a b .\tx y\n"
    cases = {
        "missing": (tmp_path / "nope.tsv", "nope.tsv: no such file"),
        "ragged": (good * 2 + "only one column\n", "bad.tsv:3: 1 tab-separated field(s), expected at least 2"),
        "empty": ("", "bad.tsv: no sentence pairs in it"),
        "encoding": (good.encode() + "caf\u00e9\tx\n".encode("latin-1"), "bad.tsv:2: not UTF-8 text"),
        "empty sentence": (good + " \tx\n", "bad.tsv:2: the source sentence is empty"),
        "one pair": (good, "bad.tsv: 1 sentence pair; at least 2 are needed"),
    }
    return cases


@pytest.mark.parametrize("case", ["missing", "ragged", "empty", "encoding", "empty sentence", "one pair"])
def test_a_bad_corpus_is_one_line_naming_the_file_and_line_exit_2_nothing_written(tmp_path, capsys, case):
    content, message = _bad_corpora(tmp_path)[case]
    path = content if isinstance(content, os.PathLike) else tmp_path / "bad.tsv"
    if not isinstance(content, os.PathLike):
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert train("--data", str(path), "--out", str(tmp_path / "out"), *TINY) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_two_files_of_different_lengths_name_where_the_shorter_ends(tmp_path, capsys):
    src, tgt = madeup.write_aligned(tmp_path, 20)
    tgt.write_text("".join(tgt.read_text().splitlines(keepends=True)[:17]))
    assert train("--data", str(src), "--target-data", str(tgt), "--out", str(tmp_path / "out"), *TINY) == 2
    err = capsys.readouterr().err
    assert "tgt.txt:18: the file ends after 17 line(s), but" in err and err.count("\n") == 1
    with pytest.raises(CorpusError, match="tgt.txt:18"):
        read_pairs(CorpusSource(src, target=tgt))


def test_cuda_is_refused_in_one_line_where_no_gpu_is(corpus, tmp_path, capsys):
    code = train("--data", str(corpus), "--out", str(tmp_path / "out"), "--device", "cuda", "--steps", "1", *TINY)
    if torch.cuda.is_available():  # a GPU here: the run trains on it
        assert code == 0
    else:
        assert code == 2 and "--device cuda: no CUDA GPU is visible here" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()


def _weights(folder):
    return ckpt.load(folder).model


def test_a_run_stopped_and_resumed_ends_on_the_weights_of_a_run_that_never_stopped(corpus, tmp_path):
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    assert train("--data", str(corpus), "--out", str(whole), "--steps", "12", *TINY) == 0
    assert train("--data", str(corpus), "--out", str(halves), "--steps", "5", *TINY) == 0
    assert ckpt.load(halves).step == 5
    at_five = _weights(halves)
    assert train("--out", str(halves), "--resume", "--steps", "12", "--no-pictures") == 0
    a, b = _weights(whole), _weights(halves)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], at_five[k]) for k in a)  # the resumed run did train
    first, second = ckpt.load(whole), ckpt.load(halves)
    assert second.step == 12 and first.history["losses"] == second.history["losses"]
    for state in first.optimizer["state"]:
        assert all(torch.equal(v, second.optimizer["state"][state][k])
                   for k, v in first.optimizer["state"][state].items())


def test_resume_refuses_new_corpus_settings_and_a_changed_corpus(trained, corpus, tmp_path, capsys):
    assert train("--out", str(trained), "--resume", "--data", str(corpus)) == 2
    assert "--data: --resume takes the corpus and the settings from the checkpoint" in capsys.readouterr().err
    assert train("--data", str(corpus), "--out", str(trained), *TINY) == 2
    assert "holds a checkpoint already" in capsys.readouterr().err
    assert train("--out", str(tmp_path), "--resume") == 2
    assert "no such checkpoint" in capsys.readouterr().err


def test_a_finished_run_scores_its_held_out_split_with_sacrebleu_and_keeps_everything(trained):
    import json

    scores = json.loads((trained / "scores.json").read_text())
    assert scores["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert scores["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:")
    assert scores["n"] == 12 and 0 <= scores["bleu"] <= 100 and len(scores["samples"]) == 8
    checkpoint = ckpt.load(trained)
    assert checkpoint.step == 30 and checkpoint.spec.seed == 0 and checkpoint.vocabs["src"][:4] == [
        "<pad>", "<sos>", "<eos>", "<unk>"]
    assert not [p for p in trained.iterdir() if p.name.startswith(".")]  # no temporary file left


def _grade(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, **kwargs)


def test_ctrl_c_stops_after_a_step_keeps_a_checkpoint_and_the_run_resumes(corpus, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "grader", "train", "assignment4", "--data", str(corpus),
                             "--out", str(out), "--steps", "100000", "--checkpoint-every", "2", *TINY],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    deadline = time.monotonic() + 240
    while not (out / ckpt.NAME).exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "stopped after step" in stdout and "--resume" in stdout and "Traceback" not in stderr
    stopped = ckpt.load(out).step
    assert 2 <= stopped < 100000
    assert _grade("train", "assignment4", "--out", str(out), "--resume", "--steps", str(stopped + 2),
                  "--no-pictures").returncode == 0
    assert ckpt.load(out).step == stopped + 2


def test_translate_reads_arguments_or_stdin_with_greedy_or_beam_and_draws_attention(trained, tmp_path, capsys,
                                                                                    monkeypatch):
    sentences = [s for s, _ in madeup.pairs(3, seed=5)]
    assert run(["translate", str(trained), *sentences]) == 0
    greedy = capsys.readouterr().out
    assert len(greedy.splitlines()) == 3
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(sentences) + "\n\n"))
    assert run(["translate", str(trained / ckpt.NAME)]) == 0
    assert capsys.readouterr().out == greedy
    assert run(["translate", str(trained), "--beam", "1", *sentences]) == 0
    assert capsys.readouterr().out == greedy  # a beam of one is greedy decoding
    png = tmp_path / "attention.png"
    assert run(["translate", str(trained), "--beam", "3", "--attention-map", str(png), sentences[0]]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in trained.iterdir()} >= {"checkpoint.pt", "scores.json", "training_curve.png",
                                                    "cross_attention.png"}


@pytest.mark.parametrize("argv, message", [
    (["translate", "missing-folder"], "missing-folder: no such checkpoint"),
    (["translate", "{run}", "a", "b", "--attention-map", "x.png"], "--attention-map: one sentence"),
    (["translate", "{run}", "--beam", "0", "a"], "--beam: expected a positive whole number"),
])
def test_translate_refuses_bad_input_in_one_line(trained, capsys, argv, message):
    assert run([a.replace("{run}", str(trained)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
