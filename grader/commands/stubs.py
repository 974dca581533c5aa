"""`grade stubs [--check]`: regenerate assignments/ from the solutions' marked blocks."""

from grader.cli import regenerate


def main(argv: list[str]) -> int:
    from grader.authoring import stubs

    return regenerate(argv, name="stubs", description="Generate assignments/ from the solutions' marked blocks.",
                      what="stubs", write_all=stubs.write_all)
