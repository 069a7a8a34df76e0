import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


def _corners(boxes: np.ndarray, center_point_box: int) -> tuple[np.ndarray, ...]:
    """(x_min, y_min, x_max, y_max) from [y1, x1, y2, x2] (any corner order) or [xc, yc, w, h]."""
    if center_point_box:
        xc, yc, w, h = boxes.T
        return xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2
    y1, x1, y2, x2 = boxes.T
    return np.minimum(x1, x2), np.minimum(y1, y2), np.maximum(x1, x2), np.maximum(y1, y2)


@op("NonMaxSuppression")
class NonMaxSuppression(NumpyKernel):
    """Greedy NMS per (batch, class): best score first (ties: lower index), dropping boxes whose IoU
    with a kept box exceeds the threshold. Each kept box costs one vectorised IoU row."""

    def compute(self, boxes, scores, max_output=None, iou_threshold=None, score_threshold=None):
        limit = max(int(max_output.reshape(-1)[0]), 0) if max_output is not None and max_output.size else 0
        iou_thr = iou_threshold.reshape(-1)[0] if iou_threshold is not None and iou_threshold.size else 0.0
        use_score = score_threshold is not None and score_threshold.size > 0
        selected = []
        for b in range(boxes.shape[0]):
            x0, y0, x1, y1 = _corners(boxes[b], self.attr("center_point_box", 0))
            area = (x1 - x0) * (y1 - y0)
            for c in range(scores.shape[1]):
                s = scores[b, c]
                cand = np.flatnonzero(s > score_threshold.reshape(-1)[0]) if use_score else np.arange(s.size)
                order = cand[np.lexsort((cand, -s[cand]))]
                alive = np.ones(order.size, dtype=bool)
                kept = 0
                for pos in range(order.size):
                    if kept >= limit:
                        break
                    if not alive[pos]:
                        continue
                    i, rest = order[pos], order[pos + 1:]
                    selected.append((b, c, i))
                    kept += 1
                    w = np.minimum(x1[i], x1[rest]) - np.maximum(x0[i], x0[rest])
                    h = np.minimum(y1[i], y1[rest]) - np.maximum(y0[i], y0[rest])
                    inter = w * h
                    union = area[i] + area[rest] - inter
                    valid = (w > 0) & (h > 0) & (inter > 0) & (area[i] > 0) & (area[rest] > 0) & (union > 0)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        alive[pos + 1:] &= ~(valid & (inter / union > iou_thr))
        return np.array(selected, dtype=np.int64).reshape(-1, 3)
