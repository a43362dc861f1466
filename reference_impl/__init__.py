"""A small, real speculative-decoding core, written to run on any accelerator.

- :mod:`reference_impl.worker`: a worker that carries its ``.device``.
- :mod:`reference_impl.warmup`: the rejection-sampler warmup, allocating on the worker's device.
- :mod:`reference_impl.sampling`: strict and probabilistic rejection samplers, with Triton kernels
  and a pure-torch fallback chosen by device.
- :mod:`reference_impl.eagle`: preparation of the EAGLE drafter's inputs after verification.
- :mod:`reference_impl.graphs`: graph capture of a top-k step on one explicit capture stream.
- :mod:`reference_impl.validate`: runs the three seed bugs, buggy and fixed, and records what happens.
"""
