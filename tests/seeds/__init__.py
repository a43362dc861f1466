"""The three seed bugs in their real (vLLM) shape, buggy and fixed.

Each buggy line carries ``# error: CODE``: the linter tests check portlint flags exactly those
lines, and the reference implementation's harness runs each form on a device.
"""
