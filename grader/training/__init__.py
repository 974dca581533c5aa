"""The bundled translation task and the training library (torch only; runs in the sandbox too)."""
