"""`grade expected [--check]`: regenerate the public tier's stored reference outputs."""

from grader.commands import regenerate


def main(argv: list[str]) -> int:
    from grader.authoring import expected

    return regenerate(argv, name="expected", description="Store the reference's outputs for the public tier.",
                      what="stored outputs", write_all=expected.write_all)
