"""Assignment 2: attention.

Scaled dot-product attention, the boolean masks that say which keys a query may
look at, and multi-head attention built from them.
"""
