"""Every gallery sample in Chromium and Firefox, on its sample input, checked for meaning, with screenshots.

One browser per engine and one samples page (web/gallery/samples.html) serve the whole module, so the polyfill
boots, and the TFLite loader converts each model, once per engine.  Chromium gets a fake camera fed from a Y4M
of the astronaut and the native-WebNN flag (its navigator.ml is present but createContext() fails on Debian's
build); Firefox gets its synthetic fake camera and has no navigator.ml.

References (gallery_reference.py, CPython): LiteRT on the very tensors the page fed its models (checks the
WebNN numerics and the page's decoding), and the whole pipeline in NumPy + LiteRT on the photo (checks the
page's pre- and post-processing).  Screenshots: test-results/gallery/<browser>-<sample>.png.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pages import open_page
from scriptfiles import load_script

from web import samples as make_samples
from web.browsers import launch_args

pytest.importorskip("ai_edge_litert.interpreter")
pytest.importorskip("cv2")
skimage_data = pytest.importorskip("skimage.data")

import gallery_reference as ref  # noqa: E402

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
# pytest-playwright empties test-results/ when a session starts: $PYODIDE_WEBNN_SHOTS keeps them elsewhere
SHOTS = Path(os.environ.get("PYODIDE_WEBNN_SHOTS") or ROOT / "test-results" / "gallery")
TIMEOUT_MS = 240_000
FACE = ref.ASTRONAUT_FACE


train_digits = load_script("train_digits")


class Gallery:
    """The shared samples page of one engine."""

    def __init__(self, page: Any, browser_name: str, errors: list[str]):
        self.page = page
        self.browser_name = browser_name
        self.errors = errors

    def open(self, sample: str, source: str = "astronaut") -> dict[str, Any]:
        snap: dict[str, Any] = self.page.evaluate("([s, src]) => window.gallery.open(s, {source: src})",
                                                  [sample, source])
        assert not snap["errors"], snap["errors"]
        return snap

    def floats(self, expr: str, *args: Any) -> np.ndarray:
        return np.frombuffer(base64.b64decode(self.page.evaluate(expr, list(args))), dtype=np.float32)

    def input(self, model: str) -> np.ndarray:
        """The last tensor the page fed `model`."""
        return self.floats("([m]) => window.gallery.input(m)", model)

    def output(self, model: str, name: str) -> np.ndarray:
        return self.floats("([m, n]) => window.gallery.output(m, n)", model, name)

    def stat(self, name: str) -> str:
        text: str = self.page.locator(f'#stats dd[data-stat="{name}"]').inner_text()
        return text

    def shot(self, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{self.browser_name}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return np.asarray(skimage_data.astronaut())


@pytest.fixture(scope="module")
def camera_frame(astronaut: np.ndarray) -> np.ndarray:
    """The 640x480 frame the fake camera shows (the astronaut letterboxed on grey)."""
    return np.asarray(make_samples.camera_frame(astronaut))


@pytest.fixture(scope="module")
def gallery(browser_type: Any, browser_type_launch_args: dict[str, Any], browser_name: str, dev_server: str,
            camera_frame: np.ndarray, tmp_path_factory: pytest.TempPathFactory) -> Any:
    make_samples.make_samples()
    kw = launch_args(browser_name, native_webnn=True, base=browser_type_launch_args)
    if browser_name == "chromium":
        y4m = make_samples.write_y4m(tmp_path_factory.mktemp("camera") / "astronaut.y4m", camera_frame)
        kw["args"] = list(dict.fromkeys(kw["args"] + [
            "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-video-capture={y4m}"]))
    else:
        kw["firefox_user_prefs"] = {**kw.get("firefox_user_prefs", {}), "media.navigator.streams.fake": True,
                                    "media.navigator.permission.disabled": True}
    browser = browser_type.launch(**kw)
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page, errors = open_page(context, f"{dev_server}/gallery/samples.html#faces", TIMEOUT_MS)
    page.evaluate("window.gallery.ready")
    yield Gallery(page, browser_name, errors)
    context.close()
    browser.close()


def _iou(a: Any, b: Any) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union


def _inside(points: np.ndarray, box: Any, margin: float = 0.0) -> np.ndarray:
    x0, y0, x1, y1 = box
    mx, my = (x1 - x0) * margin, (y1 - y0) * margin
    return ((points[:, 0] >= x0 - mx) & (points[:, 0] <= x1 + mx)
            & (points[:, 1] >= y0 - my) & (points[:, 1] <= y1 + my))


# strokes in drawing-area pixels (280 x 280), one list of points per pen stroke
DRAWN = {
    3: [[(90, 60), (150, 45), (185, 90), (130, 135), (190, 180), (150, 235), (90, 220)]],
    4: [[(170, 40), (80, 170), (205, 170)], [(170, 40), (170, 245)]],
    7: [[(70, 60), (210, 60), (130, 240)]],
}


def _roi(r: dict[str, float]) -> ref.Roi:
    return ref.Roi(r["cx"], r["cy"], r["width"], r["height"], r["angle"])


# ------------------------------------------------------------------------------------------------ samples


def test_face_detection_box_covers_her_face(gallery: Gallery, astronaut: np.ndarray) -> None:
    snap = gallery.open("faces")
    faces = snap["result"]["faces"]
    assert len(faces) == 1, faces
    box, kps = np.array(faces[0]["box"]), np.array(faces[0]["keypoints"])
    assert faces[0]["score"] > 0.85
    assert _iou(box, FACE) > 0.9, box  # the known box, found by LiteRT in CPython
    assert _inside(kps[:4], box).all()  # eyes, nose tip, mouth inside; the ears sit on the box's sides
    assert kps[0, 0] < kps[2, 0] < kps[1, 0] and kps[2, 1] < kps[3, 1]  # right eye, nose, left eye; mouth below
    # the page's decoding on LiteRT's outputs for the page's own input gives the page's box
    x = gallery.input("face_detection_short_range").reshape(1, 128, 128, 3)
    out = ref.litert("face_detection_short_range", x)
    (det,) = ref.decode(out["regressors"], out["classificators"], ref.FACE_SSD)
    np.testing.assert_allclose(det.box * 512, box, atol=0.05)  # square photo: no letterbox offset
    np.testing.assert_allclose(det.keypoints * 512, kps, atol=0.05)
    # the whole CPython pipeline (its own resize) on the photo
    (_, ref_box, ref_kps), = ref.detect_faces(astronaut)
    np.testing.assert_allclose(box, ref_box, atol=4.0)
    assert snap["latency"][0] > 0 and gallery.stat("Inference (last)").endswith("ms")
    assert snap["tasks"]["polyfill"]["status"] == "done" and snap["tasks"]["loader"]["status"] == "done"
    assert "converted in the polyfill's worker" in snap["tasks"]["model:face_detection_short_range"]["msg"]
    log = gallery.page.evaluate("window.gallery.log()")  # the progress the page showed on the way
    assert len({e["msg"] for e in log if e["task"] == "polyfill"}) >= 6  # the polyfill's boot stages
    assert {"loader", "model:face_detection_short_range"} <= {e["task"] for e in log}
    gallery.shot("faces")


def test_background_blur_mask_agrees_with_litert(gallery: Gallery, astronaut: np.ndarray) -> None:
    snap = gallery.open("blur")
    x = gallery.input("selfie_segmentation").reshape(1, 256, 256, 3)
    mask = gallery.output("selfie_segmentation", "activation_10").reshape(256, 256)
    same_input = ref.litert("selfie_segmentation", x)["activation_10"][0, :, :, 0]
    assert np.abs(mask - same_input).max() < 5e-4  # the loader's documented tolerance for this model
    assert ref.iou_mask(mask > 0.5, same_input > 0.5) > 0.99
    own_input = ref.selfie_mask(astronaut)  # LiteRT on CPython's own (skimage) resize of the photo
    iou = ref.iou_mask(mask > 0.5, own_input > 0.5)
    print(f"{gallery.browser_name}: selfie mask IoU vs LiteRT {iou:.4f}")
    assert iou > 0.95
    assert abs(snap["result"]["personFraction"] - (mask > 0.5).mean()) < 1e-6
    # the picture: her face stays sharp, the flag at the left is blurred (mean |output - photo| per channel)
    diff = gallery.page.evaluate("""async () => {
      const c = document.querySelector('#view canvas');
      const out = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const img = new Image();
      img.src = 'samples/astronaut.png';
      await img.decode();
      const o = Object.assign(document.createElement('canvas'), {width: c.width, height: c.height});
      o.getContext('2d').drawImage(img, 0, 0, c.width, c.height);
      const orig = o.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const mean = (x0, y0, x1, y1) => {
        let s = 0;
        for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) for (let k = 0; k < 3; k++) {
          const i = 4 * (y * c.width + x) + k;
          s += Math.abs(out[i] - orig[i]);
        }
        return s / ((x1 - x0) * (y1 - y0) * 3);
      };
      return {face: mean(205, 105, 245, 150), flag: mean(10, 10, 80, 200)};
    }""")
    assert diff["face"] < 2 and diff["flag"] > 8, diff
    gallery.shot("blur")


def test_face_mesh_lands_on_her_face(gallery: Gallery, astronaut: np.ndarray) -> None:
    snap = gallery.open("mesh")
    r = snap["result"]
    assert r["presence"] > 0.9
    lm = np.array(r["landmarks"])
    assert lm.shape == (468, 3)
    roi = _roi(r["roi"])
    assert _inside(lm, FACE, margin=0.15).all()  # brow-to-chin, cheek-to-cheek: the face box, a little wider
    assert _inside(lm, FACE).mean() > 0.8
    # LiteRT on the page's 192x192 crop, projected like the page: the same points
    x = gallery.input("face_landmark").reshape(1, 192, 192, 3)
    raw = ref.litert("face_landmark", x)["conv2d_21"].reshape(468, 3)
    np.testing.assert_allclose(roi.to_image(raw[:, :2] / 192), lm[:, :2], atol=0.05)
    # the whole pipeline in CPython (cv2 crop) on the photo
    _, ref_lm, ref_roi = ref.face_mesh(astronaut)
    dist = np.linalg.norm(ref_lm[:, :2] - lm[:, :2], axis=1)
    print(f"{gallery.browser_name}: face mesh vs CPython pipeline: mean {dist.mean():.2f} px, max {dist.max():.2f}")
    assert dist.mean() < 1.5 and dist.max() < 4.0
    assert abs(roi.angle - ref_roi.angle) < 0.02
    gallery.shot("mesh")


def test_pose_landmarks_find_head_and_shoulders(gallery: Gallery, astronaut: np.ndarray) -> None:
    snap = gallery.open("pose")
    r = snap["result"]
    assert r["presence"] > 0.5 and r["people"][0]["score"] > 0.5
    lm = np.array(r["landmarks"])
    assert lm.shape == (33, 4)
    nose, l_eye, r_eye, l_sh, r_sh = lm[0], lm[2], lm[5], lm[11], lm[12]
    assert _inside(np.array([nose, l_eye, r_eye]), FACE).all()
    assert min(l_sh[1], r_sh[1]) > FACE[3]  # shoulders below the chin
    assert r_sh[0] < FACE[0] and l_sh[0] > FACE[2]  # and out to either side (her left is our right)
    assert (lm[[0, 2, 5, 11, 12], 3] > 0.5).all()  # visible
    # LiteRT on the page's 256x256 crop: the same raw landmarks
    x = gallery.input("pose_landmark_full").reshape(1, 256, 256, 3)
    raw = ref.litert("pose_landmark_full", x)["Identity"].reshape(39, 5)
    page_raw = gallery.output("pose_landmark_full", "Identity").reshape(39, 5)
    assert np.abs(raw[:, :3] - page_raw[:, :3]).max() < 5e-3  # input pixels of the 256x256 crop
    # the whole pipeline in CPython: her head and shoulders, within a few pixels
    _, ref_lm, _ = ref.pose(astronaut)
    upper = list(range(13))
    dist = np.linalg.norm(ref_lm[upper, :2] - lm[upper, :2], axis=1)
    print(f"{gallery.browser_name}: pose vs CPython pipeline (head, shoulders): mean {dist.mean():.2f} px")
    assert dist.mean() < 12.0  # measured 2.2 (Chromium), 5.8 (Firefox): resizes differ, the ROI magnifies 5x
    gallery.shot("pose")


def test_digits_classify_held_out_digits(gallery: Gallery) -> None:
    gallery.open("digits")
    x_train, x_test, y_train, y_test = train_digits.load_split()
    # every held-out digit painted into the drawing area and read back through the page's preprocessing
    got = gallery.page.evaluate("""async (xs) => {
      const out = [];
      for (const x of xs) {
        const r = await window.gallery.digits.classifyPainted(x);
        out.push([r.digit, r.input]);
      }
      return out;
    }""", x_test.tolist())
    digits = np.array([d for d, _ in got])
    accuracy = float((digits == y_test).mean())
    print(f"{gallery.browser_name}: held-out digits accuracy {accuracy:.4f} ({len(y_test)} digits)")
    assert accuracy > 0.9
    # the page's preprocessing is the Python twin's (train_digits.ink_to_8x8), up to the canvas's 8-bit grey
    # levels: 16 cells x half a level (0.5 / 255) = 0.031 at most
    page_inputs = np.array([v for _, v in got], dtype=np.float64)
    np.testing.assert_allclose(page_inputs, train_digits.through_page(x_test), atol=0.032)
    assert gallery.stat("Inference (last)").endswith("ms")

    # digits drawn with the mouse (pointer events on the drawing area), once the loading panel has gone
    gallery.page.wait_for_selector("#loading", state="hidden")
    for digit, strokes in DRAWN.items():
        gallery.page.evaluate("window.gallery.digits.clear()")
        box = gallery.page.locator("canvas.draw").bounding_box()
        mouse = gallery.page.mouse
        for stroke in strokes:
            mouse.move(box["x"] + stroke[0][0], box["y"] + stroke[0][1])
            mouse.down()
            for x, y in stroke[1:]:
                mouse.move(box["x"] + x, box["y"] + y, steps=10)
            mouse.up()
        gallery.page.wait_for_function(f"window.gallery.snapshot().result?.digit === {digit}", timeout=20_000)
    gallery.shot("digits")


# ------------------------------------------------------------------------------------------------ page


def test_implementation_picker_explains_native(gallery: Gallery) -> None:
    snap = gallery.page.evaluate("window.gallery.snapshot()")
    impls = {i["id"]: i for i in snap["impls"]}
    assert impls["polyfill"]["available"]
    native = impls["native"]
    assert not native["available"]
    if gallery.browser_name == "chromium":  # the flag gives navigator.ml, Debian's build cannot run it
        assert "createContext() fails" in native["reason"] and "NotSupportedError" in native["reason"]
    else:
        assert "no navigator.ml" in native["reason"]
    assert gallery.page.locator('#impls button[data-id="native"]').is_disabled()
    assert native["reason"].rstrip(".") in gallery.page.locator("#impl-note").inner_text()


def test_camera_runs_live(gallery: Gallery, camera_frame: np.ndarray) -> None:
    snap = gallery.open("faces", source="camera")
    assert snap["cameraProblem"] is None
    gallery.page.evaluate("window.gallery.frames(3)")
    snap = gallery.page.evaluate("window.gallery.snapshot()")
    assert snap["frames"] >= 4 and snap["fps"] > 0
    assert float(gallery.stat("Frames per second")) > 0
    faces = snap["result"]["faces"]
    if gallery.browser_name == "chromium":  # the astronaut, from a Y4M file
        assert len(faces) == 1
        (_, ref_box, _), = ref.detect_faces(camera_frame)
        np.testing.assert_allclose(faces[0]["box"], ref_box, atol=8.0)  # after YUV 4:2:0 and back
        gallery.shot("faces-camera")
        gallery.open("blur", source="camera")
        x = gallery.input("selfie_segmentation").reshape(1, 256, 256, 3)
        mask = gallery.output("selfie_segmentation", "activation_10").reshape(256, 256)
        lite = ref.litert("selfie_segmentation", x)["activation_10"][0, :, :, 0]
        assert ref.iou_mask(mask > 0.5, lite > 0.5) > 0.99 and (mask > 0.5).mean() > 0.3
        gallery.page.evaluate("window.gallery.frames(2)")
    else:  # Firefox's synthetic camera: frames flow, no face in them
        assert faces == []
    gallery.shot("camera")
    gallery.open("faces")  # back to the photo: stops the camera


def test_converted_programs_come_back_from_the_browser_cache(gallery: Gallery) -> None:
    """A second load of a converted model (as after a reload) skips the loader: Cache Storage has it."""
    got = gallery.page.evaluate("""async () => {
      const {loadProgram} = await import('./lib/models.js');
      const first = await loadProgram('face_detection_short_range');
      const again = await loadProgram('face_detection_short_range', {memory: false});
      const same = new Uint8Array(first.weights).every((b, i) => b === new Uint8Array(again.weights)[i]);
      return {first: first.source, again: again.source, steps: [first.program.operations.length,
              again.program.operations.length], same, bytes: [first.weights.byteLength, again.weights.byteLength]};
    }""")
    assert got["first"] == "converted" and got["again"] == "cache", got
    assert got["steps"][0] == got["steps"][1] and got["bytes"][0] == got["bytes"][1] and got["same"]


def test_index_links_every_sample(gallery: Gallery, dev_server: str) -> None:
    page = gallery.page.context.new_page()
    try:
        page.goto(f"{dev_server}/")
        hrefs = page.eval_on_selector_all(".samples a", "as => as.map(a => a.getAttribute('href'))")
        samples = gallery.page.evaluate("window.gallery.samples")
        assert {f"/gallery/samples.html#{s}" for s in samples} <= set(hrefs)
    finally:
        page.close()


def test_no_page_errors(gallery: Gallery) -> None:
    assert gallery.errors == []
    assert gallery.page.evaluate("window.gallery.snapshot().errors") == []
