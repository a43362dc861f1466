"""The rules: one module per rule, discovered by :mod:`portlint.registry`."""
