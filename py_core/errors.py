"""Errors named after the exception the JavaScript side must throw.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder

The JS shim turns `dom_name` into `TypeError` or `new DOMException(message, dom_name)`.
"""

from __future__ import annotations

import logging

LOG = logging.getLogger("py_core")


class WebNNError(Exception):
    """Base class: every error the core raises on purpose carries the DOM name the page must see."""

    dom_name = "UnknownError"

    def to_json(self) -> dict[str, str]:
        return {"name": self.dom_name, "message": str(self)}


class WebNNTypeError(WebNNError):
    """Invalid arguments: the JS side throws a TypeError."""

    dom_name = "TypeError"


class InvalidStateError(WebNNError):
    dom_name = "InvalidStateError"


class NotSupportedError(WebNNError):
    dom_name = "NotSupportedError"


class OperationError(WebNNError):
    dom_name = "OperationError"


class DataError(WebNNError):
    dom_name = "DataError"


class UnknownError(WebNNError):
    dom_name = "UnknownError"


def internal_error(where: str, exc: BaseException, cls: type[WebNNError] = OperationError) -> WebNNError:
    """An unexpected Python exception as the WebNN error the page sees: the op and label (`where`), never the
    Python or NumPy text, which goes to the log (the worker's console) for debugging."""
    if isinstance(exc, WebNNError):
        return type(exc)(f"{where}: {exc}")
    LOG.error("%s: internal error", where, exc_info=exc)
    # NumPy refuses an array past the address space (2 GiB in 32-bit WebAssembly) with a ValueError
    if isinstance(exc, MemoryError) or (isinstance(exc, ValueError) and "array is too big" in str(exc)):
        return OperationError(f"{where}: out of memory in the WebNN worker")
    return cls(f"{where}: internal error in the WebNN engine (details in the worker's console)")


class TFLiteModelError(DataError):
    """A .tflite model the loader cannot read: the message names the model, where (byte offset, table, tensor
    or operator) and what is wrong.  Every failure of py_core.loaders.tflite is one of these."""


class TFLiteUnsupportedError(TFLiteModelError, NotSupportedError):
    """A well-formed model with operators (or types) WebNN or the loader has no mapping for."""

    dom_name = "NotSupportedError"
