"""multilingual-e5-small adapted to insurance French on CPU: pairs the corpus gives for free,
in-batch negatives, and a new e5-local model folder (embedder spec "e5-local-adapted").

Pairs come from the law articles of ../shared/corpora/code-des-assurances that no evaluation
set cites (the articles golden-shared's evidence names are left out; the insurers' documents
of golden-insurance and the sealed set are another corpus, never read here):
  definition  a quoted defined term            <-> the sentence that defines it
  clause      an article's first sentence      <-> the rest of the article
  paragraph   a long paragraph's first sentence <-> the rest of that paragraph
The articles have no headings besides their number, so there is no heading <-> section pair.
The short side is embedded as a query ("query: "), the text as a passage ("passage: ").

Training is sentence-transformers' MultipleNegativesRankingLoss written out: cross-entropy over
cosines scaled by 20, each query against every passage of its batch (a batch never holds two
pairs of one article, whose passages would be false negatives); AdamW with linear warm-up and
decay. The word-embedding table stays frozen: it is 96M of the 118M weights, and CPU time and
optimizer memory are better spent on the encoder.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rag_assets.embedding import e5_local

CORPUS = "code-des-assurances"
KINDS = ("definition", "clause", "paragraph")
_LINKS = "**Liens relatifs"  # lexlib's trailer: citations, not text
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[«\"A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATION = re.compile(r"(?:\b[A-Z]|\bart|\bArt|\bal|n°|\bcf|\bMM?)\.$")
_QUOTED = r"[\"«“]\s*([^\"»”]{2,60}?)\s*[\"»”]"
_DEFINITIONS = (
    re.compile(_QUOTED + r"\s*,?\s*(?:désigne|s'entend|est considérée? comme)"),
    re.compile(r"(?:on entend par|l'expression\s*:?|le terme|les termes)\s*" + _QUOTED, re.IGNORECASE),
)
_QUERY_WORDS = 40  # the short side: a sentence, cut like a question would be
_MIN_PASSAGE_WORDS = 20


@dataclass(frozen=True)
class Pair:
    query: str
    passage: str
    source: str  # the article, relative to the corpora root
    kind: str


def article_text(markdown: str) -> list[str]:
    """An article's paragraphs (lines of one paragraph joined), without its title or lexlib's links."""
    body = markdown.split(_LINKS, 1)[0]
    paragraphs = []
    for block in re.split(r"\n\s*\n", body):
        text = " ".join(line.strip() for line in block.splitlines() if not line.startswith("# ")).strip()
        if text:
            paragraphs.append(text)
    return paragraphs


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in _SENTENCE_BREAK.split(text):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] += " " + piece  # "art. L. 113-2", "n°. 5": not a sentence end
        else:
            out.append(piece)
    return out


def _words(text: str) -> int:
    return len(text.split())


def _short(text: str) -> str:
    words = text.split()
    return " ".join(words[:_QUERY_WORDS])


def article_pairs(markdown: str, source: str) -> list[Pair]:
    paragraphs = article_text(markdown)
    pairs = []
    for at, paragraph in enumerate(paragraphs):
        for sentence in sentences(paragraph):
            definition = sentence
            # "L'expression « X » désigne :" defines in the items that follow
            for following in paragraphs[at + 1 :] if sentence.endswith(":") else ():
                if _words(definition) >= _MIN_PASSAGE_WORDS:
                    break
                definition += " " + following
            for pattern in _DEFINITIONS:
                for match in pattern.finditer(sentence):
                    term = match.group(1).strip(" ,;:")
                    if _words(definition) >= 6:
                        pairs.append(Pair(term, definition, source, "definition"))
    text_sentences = [s for p in paragraphs for s in sentences(p)]
    # a first sentence that only announces a list ("L'assuré est obligé :") says too little alone
    head = 1
    while head < len(text_sentences) and _words(" ".join(text_sentences[:head])) < 8:
        head += 1
    rest = " ".join(text_sentences[head:])
    if _words(rest) >= _MIN_PASSAGE_WORDS:
        pairs.append(Pair(_short(" ".join(text_sentences[:head])), rest, source, "clause"))
    if len(paragraphs) > 1:  # a one-paragraph article already gave its clause pair
        for paragraph in paragraphs:
            parts = sentences(paragraph)
            rest = " ".join(parts[1:])
            if len(parts) > 1 and _words(parts[0]) >= 8 and _words(rest) >= _MIN_PASSAGE_WORDS:
                pairs.append(Pair(_short(parts[0]), rest, source, "paragraph"))
    return list(dict.fromkeys(pairs))  # one definition sentence may match two patterns


def cited_documents(question_files: Iterable[Path]) -> set[str]:
    """Every document an evaluation set's evidence names (paths relative to the corpora root)."""
    cited: set[str] = set()
    for path in question_files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                cited.update(item["document"] for item in json.loads(line).get("evidence", []))
    return cited


def corpus_pairs(corpora_root: Path, excluded: set[str], corpus: str = CORPUS) -> tuple[list[Pair], int]:
    """Pairs of every article of `corpus` not in `excluded`, and how many articles were read."""
    pairs, articles = [], 0
    for path in sorted((Path(corpora_root) / corpus).rglob("Article *.md")):
        source = path.relative_to(corpora_root).as_posix()
        if source in excluded:
            continue
        articles += 1
        pairs.extend(article_pairs(path.read_text(encoding="utf-8"), source))
    return pairs, articles


def select_pairs(pairs: Sequence[Pair], limit: int, seed: int = 0) -> list[Pair]:
    """At most `limit` pairs: every definition (the rarest kind), then a seeded sample of the rest."""
    definitions = [p for p in pairs if p.kind == "definition"]
    others = [p for p in pairs if p.kind != "definition"]
    random.Random(seed).shuffle(others)
    return (definitions + others)[: max(limit, 0)]


def batches(pairs: Sequence[Pair], size: int, seed: int = 0) -> list[list[Pair]]:
    """Shuffled batches in which no two pairs share an article (their passages would be negatives
    of each other); a pair that fits no open batch starts the next one."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    out: list[list[Pair]] = []
    waiting: list[Pair] = []
    while order or waiting:
        batch: list[Pair] = []
        sources: set[str] = set()
        pending = waiting + order
        waiting, order = [], []
        for pair in pending:
            if len(batch) < size and pair.source not in sources:
                batch.append(pair)
                sources.add(pair.source)
            else:
                waiting.append(pair)
        if len(batch) < 2:  # a lone pair has no negative
            break
        out.append(batch)
    return out


@dataclass
class Recipe:
    batch_size: int = 32
    learning_rate: float = 2e-5
    epochs: int = 1
    max_tokens: int = 128  # a passage, <s> and </s> included (the start of a clause's rest)
    query_tokens: int = 64
    scale: float = 20.0  # MNRL's: cosines times 20 as logits
    warmup: float = 0.1  # fraction of the steps
    weight_decay: float = 0.01
    max_pairs: int = 2000  # 63 steps of 32: ~11 min on 2 shared cores
    seed: int = 0
    threads: int = 2
    frozen: tuple[str, ...] = field(
        default=(
            "embeddings.word_embeddings.weight",
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
        )
    )


def _encode_ids(tokenizer: e5_local.PieceTokenizer, config: dict, texts: Sequence[str], limit: int):
    import torch

    contents = [ids[: limit - 2] for ids in tokenizer.content_ids(texts)]
    lengths = torch.tensor([len(c) + 2 for c in contents])
    ids = torch.full((len(contents), int(lengths.max())), config["pad_token_id"], dtype=torch.long)
    for row, content in enumerate(contents):
        ids[row, 0], ids[row, len(content) + 1] = config["bos_token_id"], config["eos_token_id"]
        ids[row, 1 : len(content) + 1] = torch.from_numpy(content)
    return ids, lengths


def train(
    folder: Path, pairs: Sequence[Pair], recipe: Recipe, log: Callable[[str], None] = print
) -> tuple[dict[str, np.ndarray], dict]:
    """Fine-tune the model folder's float weights on `pairs`; returns the new tensors (numpy,
    BertModel names) and a record of the run (steps, losses, seconds)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    config = json.loads((Path(folder) / "config.json").read_text())
    tokenizer = e5_local.PieceTokenizer(Path(folder))
    state = e5_local.torch_state(Path(folder))
    trained = {name: t.requires_grad_() for name, t in state.items() if name not in recipe.frozen}
    decay = [t for name, t in trained.items() if name.endswith(".weight") and "LayerNorm" not in name]
    rest = [t for name, t in trained.items() if not (name.endswith(".weight") and "LayerNorm" not in name)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=recipe.learning_rate,
    )
    plan = [b for epoch in range(recipe.epochs) for b in batches(pairs, recipe.batch_size, recipe.seed + epoch)]
    warmup = max(1, math.ceil(recipe.warmup * len(plan)))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (len(plan) - step) / max(1, len(plan) - warmup)))
    )
    started, losses = time.monotonic(), []
    for step, batch in enumerate(plan):
        layers = e5_local.torch_layers(state, config["num_hidden_layers"])
        q_ids, q_len = _encode_ids(
            tokenizer, config, [e5_local.QUERY_PREFIX + p.query for p in batch], recipe.query_tokens
        )
        p_ids, p_len = _encode_ids(
            tokenizer, config, [e5_local.PASSAGE_PREFIX + p.passage for p in batch], recipe.max_tokens
        )
        queries = F.normalize(e5_local.torch_mean_pooled(state, layers, config, q_ids, q_len), dim=-1)
        passages = F.normalize(e5_local.torch_mean_pooled(state, layers, config, p_ids, p_len), dim=-1)
        loss = F.cross_entropy(recipe.scale * queries @ passages.T, torch.arange(len(batch)))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(trained.values()), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(round(loss.item(), 4))
        log(f"step {step + 1}/{len(plan)}  loss {loss.item():.4f}  {time.monotonic() - started:.0f} s")
    record = {
        "recipe": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(recipe).items()},
        "pairs": len(pairs),
        "steps": len(plan),
        "losses": losses,
        "seconds": round(time.monotonic() - started, 1),
        "torch": torch.__version__,
    }
    return {name: t.detach().numpy() for name, t in state.items()}, record
