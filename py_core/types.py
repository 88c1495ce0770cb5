"""Data types and operand descriptors.  https://www.w3.org/TR/webnn/#api-mloperanddescriptor"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class DataType(StrEnum):
    """MLOperandDataType.  https://www.w3.org/TR/webnn/#enumdef-mloperanddatatype"""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    UINT64 = "uint64"
    INT8 = "int8"
    UINT8 = "uint8"

    @property
    def byte_size(self) -> int:
        """Bytes per element."""
        return _BYTE_SIZE[self]

    @property
    def numpy_name(self) -> str:
        """The NumPy dtype name with the same layout (kept as a string: this module imports no NumPy)."""
        return self.value

    @classmethod
    def parse(cls, value: object) -> DataType:
        """Parse an MLOperandDataType string; raises ValueError for anything else."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        raise ValueError(f"'{value}' is not a valid MLOperandDataType")


_BYTE_SIZE = {
    DataType.FLOAT32: 4,
    DataType.FLOAT16: 2,
    DataType.INT32: 4,
    DataType.UINT32: 4,
    DataType.INT64: 8,
    DataType.UINT64: 8,
    DataType.INT8: 1,
    DataType.UINT8: 1,
}

ALL_TYPES: frozenset[DataType] = frozenset(DataType)
FLOATS: frozenset[DataType] = frozenset({DataType.FLOAT32, DataType.FLOAT16})
SIGNED_INTS: frozenset[DataType] = frozenset({DataType.INT32, DataType.INT64, DataType.INT8})
UNSIGNED_INTS: frozenset[DataType] = frozenset({DataType.UINT32, DataType.UINT64, DataType.UINT8})
INTS: frozenset[DataType] = SIGNED_INTS | UNSIGNED_INTS
SIGNED: frozenset[DataType] = FLOATS | SIGNED_INTS
# "float32, float16, int32, int64" style groups appear in several spec tables
FLOATS_INT32_INT64: frozenset[DataType] = FLOATS | {DataType.INT32, DataType.INT64}
INDEX_TYPES: frozenset[DataType] = frozenset({DataType.INT32, DataType.UINT32, DataType.INT64})

# Inclusive value range of each integer data type (Python ints: exact for 64-bit types)
INT_RANGES: dict[DataType, tuple[int, int]] = {
    DataType.INT8: (-(2**7), 2**7 - 1),
    DataType.UINT8: (0, 2**8 - 1),
    DataType.INT32: (-(2**31), 2**31 - 1),
    DataType.UINT32: (0, 2**32 - 1),
    DataType.INT64: (-(2**63), 2**63 - 1),
    DataType.UINT64: (0, 2**64 - 1),
}

# Largest operand rank this implementation accepts (opSupportLimits' rankRange.max for every operand).
MAX_RANK = 8
# Largest WebIDL [EnforceRange] unsigned long (axes, sizes and other unsigned long arguments).
MAX_UNSIGNED_LONG = 2**32 - 1
# Largest valid dimension, and largest element count: "an integer greater than zero and in the range of
# long" (https://www.w3.org/TR/webnn/#valid-dimension); Chromium's OperandDescriptor::Create checks the same
# int32 range.  A shape is still a sequence of unsigned long, so 2^31 .. 2^32-1 pass the IDL conversion and
# fail here, with a TypeError either way.
MAX_DIMENSION = 2**31 - 1
# Chosen to match what 32-bit indexing backends accept: one tensor up to 2 GiB.
MAX_TENSOR_BYTE_LENGTH = 2**31 - 1


@dataclass(frozen=True)
class OperandDescriptor:
    """MLOperandDescriptor: a data type and a shape.  https://www.w3.org/TR/webnn/#dictdef-mloperanddescriptor"""

    data_type: DataType
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element_count(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count

    @property
    def byte_length(self) -> int:
        return self.element_count * self.data_type.byte_size

    def with_shape(self, shape: tuple[int, ...] | list[int]) -> OperandDescriptor:
        return OperandDescriptor(self.data_type, tuple(int(d) for d in shape))

    def with_type(self, data_type: DataType) -> OperandDescriptor:
        return OperandDescriptor(data_type, self.shape)

    def to_json(self) -> dict[str, object]:
        return {"dataType": self.data_type.value, "shape": list(self.shape)}

    def __str__(self) -> str:
        return f"{self.data_type.value}[{', '.join(str(d) for d in self.shape)}]"
