"""pyodide-webnn core: a WebNN graph builder, validator and NumPy executor.  https://www.w3.org/TR/webnn/"""

from __future__ import annotations

__version__ = "0.1.0"

from py_core.builder import BuilderOperand, GraphBuilder, graph_from_json
from py_core.errors import WebNNError, WebNNTypeError
from py_core.types import DataType, OperandDescriptor

__all__ = [
    "BuilderOperand",
    "DataType",
    "GraphBuilder",
    "OperandDescriptor",
    "WebNNError",
    "WebNNTypeError",
    "graph_from_json",
    "__version__",
]
