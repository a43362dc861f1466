"""Whether a CUDA query's answer only goes into a message: printed, logged, warned or raised.

``logger.info(f"devices: {torch.cuda.device_count()}")`` and ``raise ValueError(f"...
torch.cuda.is_available(): {torch.cuda.is_available()}")`` report what CUDA says, under its own
name; on another accelerator the message is true ("0", "False"), and a portable query there
would make it name the wrong API. Nothing runs on a device by it, so it is no finding. The
answer must reach the message as text: formatted, indexed or measured on the way (``.name``,
``[0] / 2**30``, ``str(...)``), never given to anything else first.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from portlint.analysis.names import dotted_name
from portlint.facts import MESSAGE_METHODS, MESSAGE_PREFIXES

# What keeps an answer text on its way to a message.
FORMATTING = frozenset({"str", "repr", "format", "join", "int", "float", "round", "bool", "len"})
_PASSING = (
    cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index, cst.BinaryOperation,
    cst.FormattedStringExpression, cst.FormattedString, cst.ConcatenatedString, cst.Tuple,
    cst.Element, cst.Arg,
)  # fmt: skip


def only_reported(
    query: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> cst.CSTNode | None:
    """The message (a call that shows it, or the exception raised) that the answer of the call
    of ``query`` goes into and nowhere else, if there is one."""
    call = parents.get(query)
    if not (isinstance(call, cst.Call) and call.func is query):
        return None
    child: cst.CSTNode = call
    current = parents.get(call)
    while current is not None and not isinstance(current, cst.BaseStatement):
        if isinstance(current, cst.Call):
            if isinstance(parents.get(current), cst.Raise):
                return current  # `raise Error(f"...")`: the exception's message
            if not isinstance(child, cst.Arg):
                return None  # (the answer is called, or its method is)
            func = current.func
            last = func.attr.value if isinstance(func, cst.Attribute) else dotted_name(func) or ""
            if last in MESSAGE_METHODS or last.startswith(MESSAGE_PREFIXES):
                return current
            if last not in FORMATTING:
                return None  # given to something else
        elif not isinstance(current, _PASSING) or (
            isinstance(current, cst.Attribute) and current.value is not child
        ):
            return None
        child, current = current, parents.get(current)
    return None
