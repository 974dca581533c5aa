"""Checkpoints of a corpus run: everything to continue it bit for bit, or to translate with it.

One file, `checkpoint.pt` in the run's folder, read with `torch.load(weights_only=True)` (tensors,
numbers, strings, lists and dicts only: loading one runs no code). It holds the model, optimizer
and scheduler states, the step, both vocabularies (id -> token) and tokenizers, the run's settings
and seed, the random generators' states and the losses so far. Written whole or not at all: to a
temporary file in the same folder, then renamed over the last one (os.replace is atomic there), so
a stop at any moment leaves the previous checkpoint or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from grader.course_table import ConfigError
from grader.training.library import TrainConfig
from grader.translation.corpus import CorpusSource

FORMAT = "grade-train-corpus-checkpoint/1"
NAME = "checkpoint.pt"


@dataclass(frozen=True)
class RunSpec:
    """What defines a corpus run; saved in its checkpoints and taken from them on --resume.

    `max_tokens`: pairs with more tokens on either side are left out (the model's positional table
    holds max_tokens + 2 positions: <sos> and <eos>). `held_out`: pairs scored, not trained on.
    `steps`: the optimiser steps of the whole run (a resumed run may be given more)."""

    submission: str
    corpus: CorpusSource
    config: TrainConfig = TrainConfig()
    seed: int = 0
    held_out: int | None = None
    tokenizer: str = "word"
    bpe_vocab: int = 8000
    max_tokens: int = 50
    checkpoint_every: int = 500

    def to_json(self) -> dict:
        return {**asdict(self), "corpus": self.corpus.to_json(), "config": asdict(self.config)}

    @classmethod
    def from_json(cls, data: dict) -> RunSpec:
        return cls(**{**data, "corpus": CorpusSource.from_json(data["corpus"]),
                      "config": TrainConfig(**data["config"])})


@dataclass
class Checkpoint:
    """A run's state at the end of step `step` (the payload of checkpoint.pt)."""

    spec: RunSpec
    step: int
    model: dict
    optimizer: dict
    scheduler: dict
    vocabs: dict[str, list[str]]          # "src", "tgt": id -> token, as the student's Vocab numbered them
    tokenizers: dict[str, str]            # "kind", "src", "tgt": tokenizing.load_tokenizer's arguments
    rng: dict                             # "torch": the CPU generator's state, "cuda": each GPU's
    history: dict[str, list] = field(default_factory=dict)  # "losses", "lrs", "tokens" of every step so far
    corpus_digest: str = ""               # corpus.fingerprint of the pairs read

    def payload(self) -> dict:
        return {"format": FORMAT, **{k: v for k, v in self.__dict__.items() if k != "spec"},
                "spec": self.spec.to_json()}


def save(folder: Path, checkpoint: Checkpoint) -> Path:
    """Write `folder`/checkpoint.pt atomically (the folder is made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NAME
    fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(checkpoint.payload(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path: Path, text: str) -> None:
    """A small file beside the checkpoint (a tokenizer, the scores), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def load(path: Path) -> Checkpoint:
    """The checkpoint at `path` (a checkpoint.pt, or the folder holding one); ConfigError (one line)
    when it is missing or not a checkpoint of `grade train assignment4 --data`."""
    path = path / NAME if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"{path}: no such checkpoint (grade train assignment4 --data writes one)")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated, foreign or unsafe file: torch says which in many ways
        raise ConfigError(f"{path}: not a readable checkpoint ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a checkpoint of grade train assignment4 --data "
                          f"(format {data.get('format') if isinstance(data, dict) else None!r}, expected {FORMAT!r})")
    fields = {k: data[k] for k in Checkpoint.__dataclass_fields__ if k in data and k != "spec"}
    return Checkpoint(spec=RunSpec.from_json(data["spec"]), **fields)


def rng_state() -> dict:
    """The random generators training draws from (dropout): the CPU's and each GPU's."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return {"torch": torch.get_rng_state(), "cuda": cuda}


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
