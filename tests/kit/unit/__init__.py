"""Tests of the unit tier: each starts no process of any kind: no sandbox, subprocess, Docker, Chromium or kernel."""
