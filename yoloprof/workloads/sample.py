"""The bundled sample image that `yoloprof infer` uses when no source is given.

The JPEG is committed (assets/sample.jpg) so inference needs no network and no user data; this
module also holds the script that drew it, so it can be regenerated identically:
`python -m yoloprof.workloads.sample`.
"""

from __future__ import annotations

import random
from importlib import resources
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

SAMPLE_NAME = "sample.jpg"
SAMPLE_SIZE = (640, 480)


def sample_image_path() -> Path:
    """Path of the bundled sample JPEG inside the installed package."""
    return Path(str(resources.files("yoloprof.workloads") / "assets" / SAMPLE_NAME))


def draw_sample(seed: int = 0) -> Image.Image:
    """A 640x480 picture of overlapping coloured shapes on a gradient: a VGA-sized JPEG, so decode
    and letterbox cost what a camera frame of that size costs, at under 20 KB in the package."""
    rng = random.Random(seed)
    w, h = SAMPLE_SIZE
    image = Image.linear_gradient("L").resize((w, h)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(7):
        x0, y0 = rng.randrange(0, w - 120), rng.randrange(0, h - 120)
        x1, y1 = x0 + rng.randrange(40, 200), y0 + rng.randrange(40, 200)
        colour = tuple(rng.randrange(30, 255) for _ in range(3))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x0, y0, min(x1, w - 1), min(y1, h - 1)), fill=colour, outline=(0, 0, 0), width=3)
    return image.filter(ImageFilter.GaussianBlur(0.8))


if __name__ == "__main__":  # regenerate the committed asset
    out = Path(__file__).with_name("assets") / SAMPLE_NAME
    draw_sample().save(out, quality=85)
    print(f"wrote {out.name}: {out.stat().st_size} bytes")
