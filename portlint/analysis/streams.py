"""Which stream a call returns: the ambient one, another one, or none (the APIs are in
:mod:`portlint.facts`)."""

from __future__ import annotations

import enum

import libcst as cst

from portlint.analysis.names import imported_names, qualified_names
from portlint.facts import AMBIENT_STREAM_FUNCTIONS, OTHER_STREAM_FUNCTIONS


class StreamSource(enum.Enum):
    AMBIENT = "the ambient stream"  # the stream work is issued on when no other is chosen
    OTHER = "another stream"  # a new, default or external stream


def stream_source(
    names: set[str], imported: set[str], project_functions: tuple[str, ...]
) -> StreamSource | None:
    """What a call to a function with these qualified names returns, if it returns a stream.

    ``imported`` are those of ``names`` that come from an import. Any imported function named
    ``current_stream`` (vLLM's and SGLang's wrappers among them) and the project's configured
    ``stream-functions`` count as fetching the ambient stream.
    """
    if names & AMBIENT_STREAM_FUNCTIONS or names & set(project_functions):
        return StreamSource.AMBIENT
    if any(name.rsplit(".", 1)[-1] == "current_stream" for name in imported):
        return StreamSource.AMBIENT
    if names & OTHER_STREAM_FUNCTIONS:
        return StreamSource.OTHER
    return None


def call_source(rule, call: cst.Call) -> StreamSource | None:
    """What ``call`` returns, if it returns a stream (``rule`` resolves its names)."""
    names = qualified_names(rule, call.func)
    return stream_source(names, imported_names(rule, call.func), rule.settings.stream_functions)


def makes_stream(rule, call: cst.Call) -> bool:
    return call_source(rule, call) is not None
