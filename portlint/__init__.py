"""portlint: a static-analysis linter for accelerator portability of PyTorch and Triton code."""

__version__ = "0.2.0"
