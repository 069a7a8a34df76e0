"""nudenet (YOLOv8n detector): detections on a drawn image, from a file path and from an array."""

import tempfile
from pathlib import Path

import numpy as np
from nudenet import NudeDetector
from PIL import Image, ImageDraw, ImageFilter

import common


def image() -> Image.Image:
    # a softened cartoon face: the detector finds a face in it and nothing else
    canvas = Image.new("RGB", (480, 480), (70, 110, 160))
    skin = (240, 200, 170)
    draw = ImageDraw.Draw(canvas)
    draw.ellipse((140, 60, 340, 320), fill=skin)
    draw.ellipse((180, 140, 225, 165), fill="white")
    draw.ellipse((255, 140, 300, 165), fill="white")
    draw.ellipse((193, 143, 213, 163), fill=(60, 40, 20))
    draw.ellipse((268, 143, 288, 163), fill=(60, 40, 20))
    draw.polygon([(240, 170), (225, 230), (255, 230)], fill=(200, 140, 110))
    draw.arc((200, 230, 280, 280), 20, 160, fill=(150, 50, 50), width=6)
    draw.pieslice((130, 30, 350, 200), 180, 360, fill=(60, 40, 20))
    draw.rectangle((170, 320, 310, 480), fill=skin)
    draw.rectangle((60, 380, 420, 480), fill=(30, 30, 120))
    return canvas.filter(ImageFilter.GaussianBlur(4))


def main() -> None:
    detector = NudeDetector()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "drawn.png"
        image().save(path)
        from_path = detector.detect(str(path))
    from_array = detector.detect(np.ascontiguousarray(np.asarray(image())[:, :, ::-1]))
    common.emit({"path": from_path, "array": from_array}, {"box": 3.0, "score": 1e-2})


if __name__ == "__main__":
    main()
