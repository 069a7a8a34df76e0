"""ddddocr with its default model (quantized by onnxruntime's tools): the text of drawn captchas."""

import ddddocr

import common
from images import captcha, png_bytes


def main() -> None:
    ocr = ddddocr.DdddOcr(show_ad=False)
    answer = {text: ocr.classification(png_bytes(captcha(text))) for text in ("3a7b", "XK29", "hello")}
    common.emit(answer)


if __name__ == "__main__":
    main()
