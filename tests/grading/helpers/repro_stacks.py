"""`grade --repro` recipes (tests/grading/public/repro.py registers them): assignment 3's residual,
layer and stack checks beyond the ones compared with PyTorch (repro_leaks.py), the Transformer's and
MultiHeadAttention's last two (repro_transformer.py), and where dropout sits (repro_dropout.py)."""

from grader.interactive.repro.discover import Recipe
from tests.grading.helpers.repro_dropout import DROPOUT_RECIPES
from tests.grading.helpers.repro_leaks import LEAK_RECIPES
from tests.grading.helpers.repro_transformer import TRANSFORMER_RECIPES

STACK_RECIPES: dict[str, Recipe] = {**LEAK_RECIPES, **TRANSFORMER_RECIPES, **DROPOUT_RECIPES}
# why these checks get no script (by check id, or the end of one)
STACK_WHY_NOT: dict[str, str] = {}
