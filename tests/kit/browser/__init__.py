"""Tests of the browser tier: each runs headless Chromium, and may start what a sandbox test does."""
