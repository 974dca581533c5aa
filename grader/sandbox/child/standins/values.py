"""What travels between the grader and the stand-ins as data, and the stand-ins of plain classes.

A part that is a plain class (a Vocab, not a module) stands in as a class with the reference's
plain class attributes (Vocab.PAD), whose objects are built in the grader: each holds the built
object's data attributes (itos, stoi) and runs its methods there (encode, decode, len).
"""

PLAIN = (type(None), bool, int, float, str)


def plain(v) -> bool:
    """An attribute value that travels as data: None, bool, int, float, str, or a tuple or list of those."""
    return type(v) in PLAIN or type(v) in (tuple, list) and all(type(x) in PLAIN for x in v)


def data(v) -> bool:
    """A plain object's attribute that travels: plain, or a dict of plain keys and values (Vocab.stoi)."""
    return plain(v) or type(v) is dict and all(type(k) in PLAIN and type(x) in PLAIN for k, x in v.items())


def plain_class(link, part: str, name: str, attrs: dict, methods: list) -> type:
    """A stand-in for plain class `part` (a Vocab): its class attributes `attrs`; its objects built, and
    their `methods` run, in the grader through `link` (a standin.Link)."""

    def __init__(obj, *args, **kwargs):
        answer = link.send({"build": part, "args": list(args), "kwargs": kwargs})
        if not isinstance(answer, dict) or type(answer.get("id")) is not int \
                or type(answer.get("object")) is not dict:
            raise RuntimeError("malformed description of a reference part")
        obj._kit_build = answer["id"]
        for key, value in answer["object"].items():
            if not data(value):
                raise RuntimeError(f"malformed attribute {str(key)[:40]!r} of a reference part")
            setattr(obj, checked_name(key), value)

    def forwarded(method: str):
        def call(obj, *args, **kwargs):
            return link.run(None, {"method": method, "object": obj._kit_build}, args, kwargs)

        call.__name__ = method
        return call

    names = [m for m in methods if type(m) is str and (m.isidentifier() and not m.startswith("_")
                                                        or m in ("__len__", "__getitem__", "__contains__"))]
    return type(name, (), {**attrs, "__init__": __init__, **{m: forwarded(m) for m in names}})


def checked_name(key, digits=False) -> str:
    """`key`, where it is a name an attribute or submodule may have (no private ones); else an error."""
    if type(key) is not str or not (key.isidentifier() or digits and key.isdigit()) or key.startswith("_"):
        raise RuntimeError(f"malformed name {str(key)[:40]!r} in a reference part")
    return key
