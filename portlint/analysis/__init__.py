"""Analyses shared by several rules, each computed once per file."""
