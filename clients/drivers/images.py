"""Test images drawn with Pillow: printed text on a white page, a captcha-like strip."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont


def font(size: int) -> ImageFont.ImageFont:
    # Pillow's built-in scalable font: the same glyphs on every machine, no font files needed
    return ImageFont.load_default(size=size)


def text_page(lines: list[str], size: int = 36, width: int = 720, margin: int = 24) -> Image.Image:
    """Black lines of text on white, one under the other."""
    height = margin * 2 + len(lines) * int(size * 1.8)
    page = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((margin, margin + i * int(size * 1.8)), line, fill="black", font=font(size))
    return page


def captcha(text: str, size: int = 40) -> Image.Image:
    """Dark characters spaced out on a light grey strip with a few thin lines through it."""
    strip = Image.new("RGB", (40 + 36 * len(text), 64), (235, 235, 228))
    draw = ImageDraw.Draw(strip)
    for i, ch in enumerate(text):
        draw.text((20 + 36 * i, 8 + (i % 2) * 4), ch, fill=(30, 30, 90), font=font(size))
    draw.line((0, 50, strip.width, 20), fill=(150, 150, 150), width=1)
    draw.line((0, 15, strip.width, 45), fill=(170, 160, 150), width=1)
    return strip


def png_bytes(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
