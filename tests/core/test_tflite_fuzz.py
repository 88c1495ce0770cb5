"""The TFLite loader on damaged real models: a load or one TFLiteModelError, never anything else, and no
allocation the file cannot justify (scripts/fuzz_tflite.py; its deep run is a documented command).

The models are the MediaPipe ones of web/mediapipe_models.py (the mediapipe==0.10.14 wheel)."""

from __future__ import annotations

import re
import tracemalloc
from typing import Any

import pytest

tflite = pytest.importorskip("tflite")

from scriptfiles import load_script  # noqa: E402

from py_core.errors import TFLiteModelError  # noqa: E402
from py_core.loaders import read_tflite  # noqa: E402

fuzz = load_script("fuzz_tflite")

CASES = 15  # about 5 s here; `scripts/fuzz_tflite.py --cases N` for more (all five models)
# one model per family of operators: conv/depthwise/pools, the custom transposed conv, DENSIFY of sparse weights
FUZZED = ("face_detection_short_range", "selfie_segmentation", "pose_detection")


@pytest.fixture(scope="module")
def real_models() -> dict[str, bytes]:
    try:
        return fuzz.load_models(list(FUZZED))
    except (FileNotFoundError, OSError) as e:
        pytest.skip(f"the MediaPipe models are not installed (pip install mediapipe==0.10.14): {e}")


def test_damaged_real_models_load_or_raise_tflite_model_error(real_models: dict[str, bytes]) -> None:
    report = fuzz.run(real_models, seed=0, max_cases=CASES)
    print(report.summary())
    assert report.cases == CASES
    assert not report.findings, report.summary()
    outcomes = {outcome for _, outcome in report.counts}
    assert "TFLiteModelError" in outcomes and "ok" in outcomes  # the damage reached both ends


def _dense_size_position(data: bytes, tensor: int, level: int) -> int:
    """Byte offset of DimMetadata(level).dense_size of tensor's sparsity in the intact model."""
    g = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    d = g.Tensors(tensor).Sparsity().DimMetadata(level)
    return int(d._tab.Pos + d._tab.Offset(6))


def test_flipped_dense_size_is_refused_before_densify_allocates(real_models: dict[str, bytes]) -> None:
    """pose_detection's sparse filter (tensor 15, [16, 1, 1, 24]): one flipped byte made its first dense size
    16 + 2^28, and densify allocated 2 GiB of positions before failing."""
    data = bytearray(real_models["pose_detection"])
    pos = _dense_size_position(bytes(data), 15, 0)
    assert int.from_bytes(data[pos:pos + 4], "little") == 16
    data[pos + 3] ^= 0x10
    tracemalloc.start()
    try:
        with pytest.raises(TFLiteModelError, match=r"^pose_detection\.tflite: constant tensor 15 "
                           r"'model_1/model/conv2d_1/Conv2D_dequantize': sparsity: level 0 is dense with size "
                           r"268435472, its dimension has 16$"):
            fuzz.load(bytes(data), "pose_detection.tflite")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # the intact load peaks at 22 MiB


@pytest.mark.parametrize("cut", [0, 7, 100, 4096, 120_000])  # the flatbuffer ends at 244 KB, a zip follows
def test_truncated_model_names_file_and_offset(real_models: dict[str, bytes], cut: int, tmp_path: Any) -> None:
    data = real_models["selfie_segmentation"]
    path = tmp_path / "selfie_segmentation.tflite"
    path.write_bytes(data[:cut])
    # the file identifier at byte 4, or the root table pointing past the end of the cut file
    with pytest.raises(TFLiteModelError, match=rf"^{re.escape(str(path))}: (not a TFLite model \({cut} bytes, "
                       rf"file identifier .* at byte 4|malformed model \(table at byte \d+\): a field at byte "
                       rf"\d+ lies outside the {cut}-byte file)"):
        read_tflite(path)
