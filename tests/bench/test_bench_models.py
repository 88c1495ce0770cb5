"""The shipped suite on real TFLite models (through py_core's loader): the polyfill and native WebNN's default
context in every --browser, where the npm Chromium (chromium-npm) has a usable native WebNN, each judged against
the model run in float64 by the CPython reference.  All five models on every variant: `python -m bench run
--browser chromium-npm --cases tflite:...` (see the README's bench section)."""

from __future__ import annotations

import pytest

from bench.suite import test_webnn  # noqa: F401 - collected here with this module's cases

pytest.importorskip("tflite")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.webnn_cases("tflite:face_detection_short_range+hand_landmark_lite"),
    pytest.mark.webnn_impl("polyfill", "native:default"),
]
