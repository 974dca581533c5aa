"""A held-out classic bug (tests/kit/heldout.py, heldout_reach.py): where it lives, its patches, what it computes."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Classic:
    component: str  # where the bug lives
    patches: dict[str, list[tuple[str, str]]]  # applied to solutions/, as tests/kit/conftest.mutant does
    what: str  # what the code then computes

    @property
    def assignment(self) -> str:
        return next(iter(self.patches)).partition("/")[0]


def _one(component: str, file: str, old: str, new: str, what: str) -> Classic:
    return Classic(component, {file: [(old, new)]}, what)
