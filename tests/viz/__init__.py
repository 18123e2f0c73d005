"""Tests of viz: the pictures (test_render.py) and the text rendering (test_text.py)."""
