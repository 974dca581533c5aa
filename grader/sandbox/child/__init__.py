"""Code that runs inside the submission's process, next to untrusted code (torch only)."""
