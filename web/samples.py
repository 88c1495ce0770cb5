"""The gallery's sample photos from scikit-image (public-domain test images) as PNGs, and the Y4M video that
stands in for a camera in the browser tests.

    python scripts/make_samples.py [--out web/gallery/samples] [--y4m FILE]

The PNGs are generated, not committed (about 0.5 MB each): the dev server writes them on the first request of
/gallery/samples/<name>.png (through make_samples() here), or the script does; existing files are kept.
`--y4m FILE` also writes a short 640x480 4:2:0 video of the astronaut (letterboxed, as a webcam frame would
be) for Chromium's `--use-file-for-fake-video-capture`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "web" / "gallery" / "samples"


def _astronaut() -> np.ndarray:
    from skimage import data

    return np.asarray(data.astronaut())  # type: ignore[no-untyped-call]


def _cameraman() -> np.ndarray:
    from skimage import data

    return np.repeat(np.asarray(data.camera())[:, :, None], 3, axis=2)  # type: ignore[no-untyped-call]


# name -> (RGB uint8 image, caption shown by the gallery)
SAMPLES: dict[str, tuple[Callable[[], np.ndarray], str]] = {
    "astronaut": (_astronaut, "Eileen Collins, NASA (public domain), via scikit-image"),
    "cameraman": (_cameraman, "The cameraman (scikit-image test image, grayscale)"),
}


def write_png(path: Path, image: np.ndarray) -> None:
    """Write `path` atomically: a uniquely named temporary file in the same directory, then os.replace.
    Concurrent writers (two first requests to the dev server) never share a temporary file, and a reader
    sees the old file or the whole new one."""
    from skimage.io import imsave

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".part.png")
    os.close(fd)
    try:
        imsave(name, image, check_contrast=False)
        os.chmod(name, 0o644)  # mkstemp makes it owner-only; the PNG is a public file like the others
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def camera_frame(image: np.ndarray, width: int = 640, height: int = 480) -> np.ndarray:
    """`image` scaled to the frame height and centred on a grey background: a webcam-shaped frame."""
    from skimage.transform import resize

    h, w = image.shape[:2]
    scale = height / h
    resized = resize(image, (height, round(w * scale)), anti_aliasing=True)  # type: ignore[no-untyped-call]
    scaled = (resized * 255).round().astype(np.uint8)
    frame = np.full((height, width, 3), 96, np.uint8)
    x0 = (width - scaled.shape[1]) // 2
    frame[:, x0:x0 + scaled.shape[1]] = scaled
    return frame


def to_i420(rgb: np.ndarray) -> bytes:
    """BT.601 limited-range Y, U, V planes, chroma averaged over 2x2 blocks."""
    x = rgb.astype(np.float64)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    h, w = y.shape

    def sub(c: np.ndarray) -> np.ndarray:
        return np.asarray(c.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3)))

    planes = [y, sub(u), sub(v)]
    return b"".join(np.clip(np.round(p), 0, 255).astype(np.uint8).tobytes() for p in planes)


def write_y4m(path: Path, frame: np.ndarray, frames: int = 30, fps: int = 30) -> Path:
    """A Y4M (YUV4MPEG2, 4:2:0) video repeating `frame`; Chromium's fake camera loops it."""
    h, w = frame.shape[:2]
    payload = to_i420(frame)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for _ in range(frames):
            f.write(b"FRAME\n")
            f.write(payload)
    return path


def make_samples(out: Path = OUT, *, force: bool = False) -> list[Path]:
    """Write every sample PNG that is missing (all with force); return their paths."""
    paths = []
    for name, (load, _) in SAMPLES.items():
        path = out / f"{name}.png"
        if force or not path.is_file():
            write_png(path, load())
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """The command line of scripts/make_samples.py."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="directory of the PNGs (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rewrite existing files")
    parser.add_argument("--y4m", type=Path, help="also write the fake-camera video here")
    args = parser.parse_args(argv)
    try:
        paths = make_samples(args.out, force=args.force)
    except ImportError as e:
        print(f"make_samples: scikit-image is needed (pip install -e '.[models]'): {e}", file=sys.stderr)
        return 2
    if args.y4m:
        paths.append(write_y4m(args.y4m, camera_frame(_astronaut())))
    for p in paths:
        print(f"make_samples: {p} ({p.stat().st_size // 1024} KB)")
    return 0
