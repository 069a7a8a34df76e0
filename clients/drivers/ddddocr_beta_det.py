"""ddddocr's float models: the beta recogniser on drawn captchas, and the character detector."""

import ddddocr

import common
from images import captcha, png_bytes


def main() -> None:
    ocr = ddddocr.DdddOcr(beta=True, show_ad=False)
    texts = {text: ocr.classification(png_bytes(captcha(text))) for text in ("3a7b", "XK29", "hello")}
    det = ddddocr.DdddOcr(det=True, ocr=False, show_ad=False)
    boxes = det.detection(png_bytes(captcha("W8mQ", size=48).resize((320, 128))))
    common.emit({"texts": texts, "boxes": boxes}, {"boxes": 2.0})


if __name__ == "__main__":
    main()
