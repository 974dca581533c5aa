"""grader's packages keep the layers pyproject.toml declares ([tool.importlinter]; the order and the
reason for each layer: docs/development/architecture.md, "Layers"): the contract is exhaustive and names
every package and top-level module of grader/ (import-linter's run: tests/kit/sandbox/test_layers.py)."""

from tests.kit.conftest import ROOT


def test_the_layers_name_every_package_of_grader():
    """exhaustive = true: a new package or top-level module of grader/ must be given its layer."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    children = {p.stem if p.suffix == ".py" else p.name for p in (ROOT / "grader").iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert contract["exhaustive"] is True and named == children, (sorted(children - named), sorted(named - children))
