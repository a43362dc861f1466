"""The speed machinery, behind one boundary: the rest of portlint asks it three things.

- :mod:`~portlint.speed.gate`: which rules can report in a file, from its text alone;
- :mod:`~portlint.speed.cut`: the part of a file those rules need, cut with ``ast`` so that
  LibCST parses less (positions map back to the file's lines), from the file's units
  (:mod:`~portlint.speed.units`) and its module-level code (:mod:`~portlint.speed.module_level`);
- :mod:`~portlint.speed.process`: process-wide shortcuts for a command-line run (LibCST's node
  validation off while it parses, the cycle collector off while a file is analysed), which a
  library caller gets only if it asks.

None of them knows a rule: each reads what rules declare (``portlint.rule.Rule``: triggers,
evidence, ``guardable``, ``at_launches``, ``reads_class``) and the facts of
:mod:`portlint.facts`.
"""
