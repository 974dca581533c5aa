"""The wire format between the grader and the sandboxed worker: JSON headers and raw tensor bytes.

A frame is an 8-byte big-endian header length, a UTF-8 JSON header, then the raw bytes
of every tensor the header lists. Tensors travel as (dtype, shape, bytes), never as
pickles, so decoding what the worker sends runs no code of the worker's choosing. A tensor
on the `meta` device (the device-placement checks run modules there) has no bytes: it travels
as (dtype, shape, "meta") and arrives on `meta` again.
Inside the JSON, a tensor is {"$t": index}, a tuple {"$tuple": [...]}, an object kept
in the worker {"$h": id, "type": name}, and a dict {"$d": [[key, value], ...]}.

What the worker sends is the submission's to write (its code runs in that process and can write
frames itself), so the grader reads it under `ANSWERS`: bounded header, tensor bytes, nesting,
string lengths, dimensions and elements; anything else, and any error decoding it, is a
ProtocolError (the grader kills the worker: the submission's fault, never the grader's).
"""

import json
import os
import re
import struct
import traceback
from dataclasses import dataclass

import torch

MAX_FRAME = 512 * 2**20


@dataclass(frozen=True)
class Bounds:
    """What one frame may hold. The grader's own frames (read by the worker) are bounded loosely;
    the worker's answers, read by the grader, by `ANSWERS`: an honest grading's largest answer
    (both tiers of the four assignments, measured) is 6.9 kB of header and 80 kB of tensors, nested
    10 deep, 4 dimensions, strings of 133 characters. The bounds leave 30-50 times that: a rejected
    answer costs the grader at most its size, briefly, and an accepted one held by a failed check's
    traceback at most 4 MiB."""

    header: int = MAX_FRAME  # bytes of the JSON header
    tensors: int = MAX_FRAME  # bytes of all its tensors together
    depth: int = 1000  # lists, tuples and dicts inside each other
    string: int = MAX_FRAME  # characters of one string
    dims: int = 64  # dimensions of one tensor
    elements: int = 2**40  # elements of one tensor (a meta tensor has no bytes to bound it)


LOOSE = Bounds()
ANSWERS = Bounds(header=256 * 2**10, tensors=4 * 2**20, depth=32, string=16_384, dims=16, elements=2**31)

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
_ITEMSIZE = {dtype: torch.empty((), dtype=dtype).element_size() for dtype in DTYPES.values()}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame."""


class Handle:
    """An object that lives in the worker, named by id; `type` is the worker's word for it."""

    def __init__(self, id: int, type: str):
        self.id, self.type = id, type

    def __repr__(self):
        return f"<{self.type} object in the submission's process>"


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().cpu().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


_PLAIN = frozenset({type(None), bool, int, float, str})


def encode(value, keep=None) -> bytes:
    """Frame `value`. `keep(obj) -> Handle` stores what cannot travel; without it that is an error."""
    blobs: list[bytes] = []
    metas: list[list] = []

    def enc(v):
        # by exact type, the commonest first: a module's description is a thousand nodes a frame
        t = type(v)
        if t in _PLAIN:
            return v
        # a plain leaf is taken as it is where it sits: most nodes are leaves, and a call each was most of encoding
        if t is dict:
            return {"$d": [[k if type(k) is str else enc(k), x if type(x) in _PLAIN else enc(x)] for k, x in v.items()]}
        if t is list:
            return [x if type(x) in _PLAIN else enc(x) for x in v]
        if (t is torch.Tensor or t is torch.nn.Parameter) and v.dtype in DTYPE_NAMES:
            meta = v.device.type == "meta"
            metas.append([DTYPE_NAMES[v.dtype], list(v.shape), *(["meta"] if meta else [])])
            blobs.append(b"" if meta else _tensor_bytes(v))
            return {"$t": len(blobs) - 1}
        if t is tuple:
            return {"$tuple": [x if type(x) in _PLAIN else enc(x) for x in v]}
        if isinstance(v, Handle):
            return {"$h": v.id, "type": v.type}
        if isinstance(v, torch.dtype) and v in DTYPE_NAMES:
            return {"$dtype": DTYPE_NAMES[v]}
        if isinstance(v, torch.device):
            return {"$device": str(v)}
        if keep is None:
            raise TypeError(f"cannot send a {type(v).__name__}")
        return enc(keep(v))

    # compact, and no check for cycles: enc builds the structure afresh (a cycle in `value` recurses there first)
    header = json.dumps({"v": enc(value), "tensors": metas}, separators=(",", ":"), check_circular=False).encode()
    return struct.pack(">Q", len(header)) + header + b"".join(blobs)


def decode_header(raw: bytes | bytearray) -> dict:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"malformed header: {str(e)[:80]}") from None
    except RecursionError:  # nested past what the JSON parser takes: no frame of ours is
        raise ProtocolError("header nested too deeply") from None
    if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
        raise ProtocolError("malformed header")
    return header


def tensor_sizes(header: dict, bounds: Bounds = LOOSE) -> list[tuple[torch.dtype, tuple[int, ...], int, bool]]:
    """(dtype, shape, bytes that follow, on meta) of each tensor the header lists."""
    out = []
    for meta in header["tensors"]:
        if (not isinstance(meta, list) or len(meta) not in (2, 3) or type(meta[0]) is not str
                or meta[0] not in DTYPES or not isinstance(meta[1], list)
                or not all(type(n) is int and n >= 0 for n in meta[1]) or len(meta) == 3 and meta[2] != "meta"):
            raise ProtocolError(f"malformed tensor description {str(meta)[:80]}")
        if len(meta[1]) > bounds.dims:
            raise ProtocolError(f"tensor of {len(meta[1])} dimensions (at most {bounds.dims})")
        dtype, shape, on_meta = DTYPES[meta[0]], tuple(meta[1]), len(meta) == 3
        numel = 1
        for n in shape:
            numel *= n
        if numel > bounds.elements:  # a meta tensor costs no bytes: its size is bounded here instead
            raise ProtocolError(f"tensor of {numel} elements (at most {bounds.elements})"[:120])
        out.append((dtype, shape, 0 if on_meta else numel * _ITEMSIZE[dtype], on_meta))
    return out


def decode_value(header: dict, blobs: list[bytes] | list[bytearray], metas, bounds: Bounds = LOOSE) -> object:
    tensors = []
    for (dtype, shape, _, on_meta), blob in zip(metas, blobs, strict=True):
        if on_meta:
            tensors.append(torch.empty(shape, dtype=dtype, device="meta"))
            continue
        buf = blob if isinstance(blob, bytearray) else bytearray(blob)  # read_frame's are not copied again
        if dtype in (torch.float16, torch.bfloat16):
            t = torch.frombuffer(buf, dtype=torch.int16).view(dtype) if buf else torch.empty(0, dtype=dtype)
        else:
            t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        tensors.append(t.reshape(shape))

    return _decode(header.get("v"), tensors, bounds, 0)


def _decode(v, tensors: list, bounds: Bounds, depth: int):
    # a module-level function, not a closure: a recursive closure is a reference cycle that
    # would keep every decoded tensor (and the autograd graphs they join) alive until gc runs
    t = type(v)
    if t is str:
        if len(v) > bounds.string:
            raise ProtocolError(f"a string of {len(v)} characters (at most {bounds.string})")
        return v
    if v is None or t is bool or t is int or t is float:
        return v
    if depth >= bounds.depth:
        raise ProtocolError(f"values nested more than {bounds.depth} deep")
    depth += 1
    # a leaf other than a string is taken where it sits (most nodes are leaves: a call each was most of
    # decoding); a string goes through the bound above
    if t is list:
        return [x if type(x) in _SCALARS else _decode(x, tensors, bounds, depth) for x in v]
    if t is dict:
        # one key, read once: a frame of a module's description holds a thousand of these
        # (set(v) == {...} per node was a fifth of decoding)
        if len(v) == 1:
            [(key, x)] = v.items()
            if key == "$t" and type(x) is int and 0 <= x < len(tensors):
                return tensors[x]
            if key == "$d" and type(x) is list and _pairs(x):
                return {(k if type(k) is str and len(k) <= bounds.string
                         else _hashable(_decode(k, tensors, bounds, depth))):
                        y if type(y) in _SCALARS else _decode(y, tensors, bounds, depth) for k, y in x}
            if key == "$tuple" and type(x) is list:
                return tuple([y if type(y) in _SCALARS else _decode(y, tensors, bounds, depth) for y in x])
            if key == "$dtype" and type(x) is str and x in DTYPES:
                return DTYPES[x]
            if key == "$device" and type(x) is str and re.fullmatch(r"(cpu|meta|cuda|lazy)(:\d{1,2})?", x):
                return torch.device(x)
        elif len(v) == 2 and type(v.get("$h")) is int and type(v.get("type")) is str:
            return Handle(v["$h"], v["type"][:200])
    raise ProtocolError(f"malformed value {str(v)[:80]}")


_SCALARS = frozenset({type(None), bool, int, float})


def _pairs(x: list) -> bool:
    for p in x:
        if type(p) is not list or len(p) != 2:
            return False
    return True


def _hashable(k):
    if isinstance(k, (str, int, float, bool, type(None))):
        return k
    raise ProtocolError("malformed dict key")


def read_exact(fd: int, n: int, wait=None) -> bytearray:
    """Read n bytes from fd; `wait()` is called before each read (it raises on a deadline). Read
    into one buffer, which the tensors decoded from it then share: a frame costs its size once."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        if wait is not None:
            wait()
        read = os.readv(fd, [view[got:got + (1 << 20)]])
        if not read:
            raise EOFError
        got += read
    view.release()
    return buf


def read_frame(fd: int, wait=None, bounds: Bounds = LOOSE):
    """The next frame's value. Under `bounds` (the grader reads the worker's answers under ANSWERS)
    any frame that is not well-formed, and any error decoding it, raises ProtocolError."""
    (size,) = struct.unpack(">Q", read_exact(fd, 8, wait))
    if size > bounds.header:
        raise ProtocolError(f"frame header of {size} bytes (at most {bounds.header})")
    try:
        header = decode_header(read_exact(fd, size, wait))
        metas = tensor_sizes(header, bounds)
        if sum(m[2] for m in metas) > bounds.tensors:
            raise ProtocolError(f"tensors of more than {bounds.tensors} bytes in one frame")
        blobs = [read_exact(fd, m[2], wait) for m in metas]
        return decode_value(header, blobs, metas, bounds)
    except (ProtocolError, EOFError):
        raise
    except Exception as e:  # whatever decoding it raised (a shape torch refuses, memory): the sender's fault
        raise ProtocolError(f"undecodable frame ({type(e).__name__})") from None


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def describe_error(e: BaseException, package: str) -> dict:
    """An exception of the submission's as the worker's {"error": ...} answer: its type, its classes,
    its message and the lines of `package` (the submission) it came through."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f"/{package}/" in f.filename]
    where = [f"{f.filename.split(f'/{package}/', 1)[1]}:{f.lineno} in {f.name}: {f.line}"[:300] for f in frames]
    # bounded as the grader keeps them (host.StudentError): a class named with a million characters
    # is an exception with a long name, not a malformed answer
    return {
        "type": type(e).__name__[:200],
        "mro": [c.__name__[:200] for c in type(e).__mro__][:32],
        "message": _safe_str(e)[:4000],
        "where": where[-6:],
    }


def _safe_str(e: BaseException) -> str:
    try:
        return str(e)
    except BaseException:
        return f"<{type(e).__name__} whose message cannot be printed>"
