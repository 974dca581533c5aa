"""Terminal output (rich) and pictures (matplotlib)."""
