"""Imported once by the conversion fork server (multiprocessing "forkserver" preload, see
`convert.convert_and_save_with_limit`): Docling, its plugin stages and our PDF pipeline are
imported and the converter is built here, so every conversion process is forked warm.

Nothing here loads a model: onnxruntime sessions start threads, and a process that forks
must not have threads of its own; each child loads the models it needs.
"""

from rag_assets.parsing.convert import _converter

_converter(None)
