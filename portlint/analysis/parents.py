"""The parent of every node but those inside trivia, as LibCST's ``ParentNodeProvider`` gives it,
several times faster.

LibCST's provider asks each node for its ``children``, which rebuilds the node through a visitor
of its own, once per node. Reading the child fields directly gives the same map
(``tests/test_names.py`` checks it equal on real files). Whitespace, comments and punctuation
(``portlint.analysis.walk.TRIVIA``) have no parent here: no rule or analysis asks for one, and
they are about half of a tree's nodes.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import BaseMetadataProvider

from portlint.analysis.walk import children


class ParentProvider(BaseMetadataProvider[cst.CSTNode]):
    def _gen_impl(self, module: cst.Module) -> None:
        parents = self._computed
        pending: list[cst.CSTNode] = [module]
        while pending:
            node = pending.pop()
            for child in children(node):
                parents[child] = node
                pending.append(child)


def parent_of(rule, node: cst.CSTNode) -> cst.CSTNode | None:
    """``node``'s parent, as the :class:`ParentProvider` of ``rule`` (a visitor that depends on
    it) gives it; None at the module."""
    return rule.get_metadata(ParentProvider, node, None)
