"""The worker's swaps: the reference's stand-ins put in place of the submission's parts for a
check, and the submission's own parts dressed as they are (grader.sandbox.child.standins.standin), in
every module of the submission that names them, until the next reset."""

import sys

from grader.sandbox.child.fixtures import SUBMISSION as PACKAGE
from grader.sandbox.child.standins import standin
from grader.sandbox.child.tree import import_alone
from grader.sandbox.child.tree import resolve as resolve_in_tree


def resolve(package: str, target: str):
    """tree.resolve, with the module imported on its own (import_alone)."""
    import_alone(f"{package}.{target.partition(':')[0]}", package)
    return resolve_in_tree(package, target)


class Swaps:
    """A mixin of grader.sandbox.child.worker.Worker: its swaps, references, own parts and patches."""

    swaps: dict[str, tuple[object, object]]
    references: dict[str, object]
    own: set[str]
    echoed: set[str]  # own parts reached through the grader (the attribution's control run)
    patched: list[tuple[object, str, object]]
    link: standin.Link

    def known(self, part: str):
        """The class standing in for the reference's `part` where a described tree holds one: the
        swapped-in stand-in; for a part wrapped as the submission's own, a reference stand-in dressed
        the same way; None (a plain stand-in class) for any other."""
        if part in self.references:
            return self.references[part]
        if part in self.own and part in self.swaps:
            key = f"nested:{part}"
            if key not in self.references:
                self.references[key] = self.link.stand_in(part, None, self.swaps[part][0])
            return self.references[key]
        return None

    def op_swap(self, req):
        """Use stand-ins that run the reference's `parts` in the grader wherever the submission's
        code names them, until the next reset: a composite is then graded on its own wiring. The
        `own` parts (the composite's other parts, and all of them when none is swapped: the instructor's
        grade sends them for every check of a composite) are the submission's own, dressed as the
        stand-ins are (standin.Link.wrap), so that the composite cannot tell its own parts from the
        reference's: a composite that behaves only with the reference's would have its failures excused."""
        self.own.update(p for p in req.get("own", []) if type(p) is str and p not in req["parts"])
        echoed = {p for p in req.get("echo", []) if type(p) is str and p in self.own} - self.echoed
        self.echoed |= echoed
        fresh = [part for part in req["parts"] if part not in self.references]  # the others: already in
        if fresh or echoed:
            self._unpatch()  # a part wrapped as the submission's own until now is the reference's from here
        for part in echoed & set(self.swaps):  # wrapped already, called where it is: wrapped again, echoed
            del self.swaps[part]
        for part in fresh:
            self.own.discard(part)
            info = (req.get("classes") or {}).get(part)  # a class part's description, from the grader
            own = self.swaps[part][0] if part in self.swaps else resolve(PACKAGE, part)
            self.references[part] = self.link.stand_in(part, info, own)
            self.swaps[part] = (own, self.references[part])
        self._patch()

    def _patch(self):
        for part in sorted(self.own - set(self.swaps)):  # wrapped once its module is imported (never imported here)
            module = sys.modules.get(f"{PACKAGE}.{part.partition(':')[0]}")
            own = getattr(module, part.rpartition(":")[2], None) if module is not None else None
            try:
                wrapped = self.link.wrap(own, part in self.echoed) if own is not None else None
            except Exception:  # a class that refuses to be derived from (its __init_subclass__): left as it is;
                wrapped = None  # its stand-in cannot be made either, so a failure on its parts is not excused
            if wrapped is not None:
                self.swaps[part] = (own, wrapped)
        if not self.swaps:
            return
        replace = {id(own): ref for own, ref in self.swaps.values()}
        for name, module in list(sys.modules.items()):
            if not name.startswith(PACKAGE + ".") or module is None:
                continue
            for attr, value in list(vars(module).items()):
                if id(value) in replace and value is not replace[id(value)]:
                    self.patched.append((module, attr, value))
                    setattr(module, attr, replace[id(value)])

    def _unpatch(self):
        for module, attr, original in reversed(self.patched):
            setattr(module, attr, original)
        self.patched.clear()

