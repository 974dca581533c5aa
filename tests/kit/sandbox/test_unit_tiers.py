"""The kit's test tiers (tests/kit/tiering.py): a method reaches what its class's other methods reach. In the
sandbox tier because its code names such a class, whose other method runs `grade` (tests/kit/tier_examples.py)."""

from tests.kit import tiering
from tests.kit.tier_examples import _Steps


def test_a_method_reaches_what_its_classs_other_methods_do():
    assert tiering.Reader().of(_Steps.test_like, owner=_Steps) == {"sandbox"}
