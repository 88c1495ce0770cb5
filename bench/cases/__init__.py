"""What the bench runs: graphs.py (a case: WPT vectors and graph files in one form, the wire form a page replays),
models.py (TFLite models through py_core's loader), frameworks.py (models through onnxruntime-web and LiteRT.js),
client_models.py (the ONNX models those clients run) and select.py (the selection syntax over all of them)."""
