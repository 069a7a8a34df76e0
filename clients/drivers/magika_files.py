"""magika (Google's file-type detector): the content types of a few files made here, one batch."""

import io
import tempfile
import zipfile
from pathlib import Path

from magika import Magika

import common
from images import png_bytes, text_page

PYTHON = b'''import argparse\nimport json\n\n\ndef main():\n    parser = argparse.ArgumentParser(description="count words")\n    parser.add_argument("path")\n    args = parser.parse_args()\n    with open(args.path) as f:\n        words = f.read().split()\n    print(json.dumps({"words": len(words)}))\n\n\nif __name__ == "__main__":\n    main()\n'''
HTML = b'''<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Report</title></head>\n<body>\n  <h1>Quarterly report</h1>\n  <p>The numbers went <b>up</b> this quarter.</p>\n  <ul><li>one</li><li>two</li><li>three</li></ul>\n</body>\n</html>\n'''
JSON = b'{\n  "name": "onnxplug",\n  "providers": ["numpy", "numba", "opencl"],\n  "version": 1,\n  "nested": {"a": [1, 2, 3], "b": null, "c": true}\n}\n'
CSV = b"id,name,city,score\n" + b"".join(b"%d,name%d,city%d,%d.5\n" % (i, i, i % 7, i * 3) for i in range(40))
SHELL = b'#!/bin/sh\nset -eu\nfor f in "$@"; do\n  if [ -f "$f" ]; then\n    wc -l "$f"\n  else\n    echo "missing: $f" >&2\n  fi\ndone\n'


def zip_bytes() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        # fixed dates: the bytes, and so the answer, are the same at every run
        archive.writestr(zipfile.ZipInfo("readme.txt", (2026, 1, 1, 0, 0, 0)), "hello " * 200)
        archive.writestr(zipfile.ZipInfo("data.json", (2026, 1, 1, 0, 0, 0)), JSON)
    return out.getvalue()


def main() -> None:
    samples = {"script.py": PYTHON, "page.html": HTML, "data.json": JSON, "table.csv": CSV, "run.sh": SHELL,
               "archive.zip": zip_bytes(), "text.png": png_bytes(text_page(["magika"]))}
    magika = Magika()
    answer = {}
    with tempfile.TemporaryDirectory() as folder:
        # extensionless names: the answer comes from the content alone
        paths = []
        for i, content in enumerate(samples.values()):
            path = Path(folder) / f"sample{i}"
            path.write_bytes(content)
            paths.append(path)
        for name, result in zip(samples, magika.identify_paths(paths)):
            answer[name] = {"label": str(result.output.label), "score": float(result.score)}
    single = magika.identify_bytes(PYTHON)
    answer["bytes"] = {"label": str(single.output.label), "score": float(single.score)}
    common.emit(answer, {"score": 1e-3})


if __name__ == "__main__":
    main()
