"""What a frame between the grader and the worker costs to write and to read, against pickle.

    python benchmarks/wire_codec.py [--repeat 200]

A grading sends thousands of frames each way (an assignment3 grading with a broken LayerNorm:
7,259 each way, most of them a reference part's description as a stand-in's build answer, a
stand-in's call with its weights, and the worker's answer). The wire format is JSON headers and
raw tensor bytes, read under bounds, so that reading what the worker sends runs no code of its
choosing (grader.sandbox.child.protocol). Here, frames of those three kinds are built from the
reference (solutions/): each part of assignments 1 to 3 at the checks' sizes, described as the
grader describes it; each encoded and decoded `--repeat` times, the decoding under the bounds the
grader reads answers with. The baseline, in the same run: pickle (protocol 5) writing and reading
the same values, which the grader must never do with the worker's bytes. Seconds per frame, and
the ratio to pickle's.
"""

import argparse
import io
import pickle
import statistics
import struct
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from anywhere: the grader of this checkout

from grader.sandbox.child import protocol  # noqa: E402
from grader.sandbox.child.tree import import_tree, resolve  # noqa: E402
from grader.suite.parts.described import describe  # noqa: E402

PACKAGE = "_wire_reference"  # solutions/, imported as the grader imports the reference

D, HEADS, FF, VOCAB = 32, 4, 64, 40
PARTS = {  # contract name -> constructor arguments, at the sizes the checks build them with
    "assignment1.layer_norm:LayerNorm": ((D,), {}),
    "assignment1.embedding:TokenEmbedding": ((VOCAB, D), {}),
    "assignment2.multi_head_attention:MultiHeadAttention": ((D, HEADS), {}),
    "assignment1.feed_forward:PositionwiseFeedForward": ((D, FF), {}),
    "assignment3.encoder:EncoderLayer": ((D, HEADS, FF), {}),
    "assignment3.decoder:DecoderLayer": ((D, HEADS, FF), {}),
    "assignment3.transformer:Transformer": ((VOCAB, VOCAB), {"d_model": D, "n_heads": HEADS, "n_layers": 2,
                                                             "d_ff": FF, "max_len": 32}),
}


def frames() -> dict[str, tuple[list, protocol.Bounds]]:
    """Values of the three commonest kinds, one per part, with the bounds their reader reads them under
    (the worker reads the grader's frames loosely; the grader reads the worker's under ANSWERS)."""
    import_tree(ROOT / "solutions", PACKAGE)
    built, calls, answers = [], [], []
    x = torch.randn(2, 7, D)
    for target, (args, kwargs) in PARTS.items():
        module = resolve(PACKAGE, target)(*args, **kwargs)
        built.append({"ok": {"id": 1, "tree": describe(module, PACKAGE + ".")}})
        calls.append({"ask": {"forward": 3, "path": "", "grad": False, "args": [x], "kwargs": {},
                              "state": {k: v.detach() for k, v in module.state_dict().items()},
                              "training": {k: m.training for k, m in module.named_modules()}}})
        answers.append({"ok": {"output": x + 1, "attrs": {}}})
    return {"a part's description": (built, protocol.LOOSE), "a stand-in's call": (calls, protocol.ANSWERS),
            "an answer": (answers, protocol.ANSWERS)}


def read(frame: bytes, bounds: protocol.Bounds):
    """protocol.read_frame's steps, from bytes in memory."""
    (size,) = struct.unpack(">Q", frame[:8])
    header = protocol.decode_header(bytearray(frame[8:8 + size]))
    metas = protocol.tensor_sizes(header, bounds)
    blobs, at = [], 8 + size
    for m in metas:
        blobs.append(bytearray(frame[at:at + m[2]]))
        at += m[2]
    return protocol.decode_value(header, blobs, metas, bounds)


def timed(fn, values: list, repeat: int) -> float:
    """Median seconds per value of fn(value), over `repeat` rounds."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for v in values:
            fn(v)
        rounds.append((time.perf_counter() - start) / len(values))
    return statistics.median(rounds)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=200, help="rounds; the median counts (default 200)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    torch.manual_seed(0)
    table = Table(title="One frame, written and read (median seconds; ratio to pickle's)")
    for column in ("frame", "bytes", "write", "x pickle", "read", "x pickle"):
        table.add_column(column, justify="left" if column == "frame" else "right")
    for kind, (values, bounds) in frames().items():
        encoded = [protocol.encode(v) for v in values]
        pickled = [pickle.dumps(v, protocol=5) for v in values]
        write = timed(protocol.encode, values, args.repeat)
        read_ = timed(lambda b, bounds=bounds: read(b, bounds), encoded, args.repeat)
        p_write = timed(lambda v: pickle.dumps(v, protocol=5), values, args.repeat)
        p_read = timed(lambda b: pickle.load(io.BytesIO(b)), pickled, args.repeat)
        table.add_row(kind, f"{statistics.mean(map(len, encoded)):,.0f}", f"{write * 1e6:.0f} us",
                      f"{write / p_write:.1f}", f"{read_ * 1e6:.0f} us", f"{read_ / p_read:.1f}")
    Console().print(table)


if __name__ == "__main__":
    main()
