"""Grounding documents for the designer (DESIGN.md section 6).

A corpus is anything with a ``text`` (or ``orig_doc``) column: a JSONL file, a Parquet
file, a Hugging Face dataset (``hf:NAME[:SPLIT]``, streamed), or the embedded default
``stdlib``: the docstrings of the Python standard library installed with the
interpreter, cut into documents — varied (text processing, dates, math, networking
concepts, data structures...), always present, no download.

``Corpus.sample(n, seed)`` is deterministic for a given source and seed. Sampling
streams the source once (reservoir sampling), so large files are never held in memory.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import SpadeError

TEXT_COLUMNS = ("text", "orig_doc")
DEFAULT_WORD_BUDGET = 400
MIN_DOC_WORDS = 25

#: standard-library modules whose docstrings make the default corpus
STDLIB_MODULES = (
    "abc argparse array ast asyncio base64 bisect calendar cmath codecs collections colorsys "
    "concurrent.futures contextlib copy csv dataclasses datetime decimal difflib dis email enum "
    "filecmp fnmatch fractions ftplib functools gettext glob graphlib gzip hashlib heapq hmac html "
    "http.client http.cookies imaplib ipaddress itertools json locale logging lzma mailbox math "
    "mimetypes numbers operator optparse os pathlib pickle pprint queue quopri random re sched "
    "secrets selectors shelve shlex shutil signal smtplib socket sqlite3 statistics string struct "
    "subprocess tarfile tempfile textwrap threading time timeit tokenize traceback turtle types "
    "typing unicodedata unittest urllib.parse uuid warnings wave weakref xml.dom.minidom "
    "xml.etree.ElementTree zipfile zlib zoneinfo"
).split()


class CorpusError(SpadeError):
    """A corpus source cannot be read or has no text column."""


@dataclass(frozen=True)
class Document:
    """A grounding document; ``ref`` says where it came from (stored as provenance)."""

    ref: str
    text: str

    def truncated(self, word_budget: int = DEFAULT_WORD_BUDGET) -> "Document":
        words = self.text.split()
        if len(words) <= word_budget:
            return self
        return Document(self.ref, " ".join(words[:word_budget]) + " ...")


def _row_text(row: dict, where: str) -> str | None:
    for col in TEXT_COLUMNS:
        value = row.get(col)
        if isinstance(value, str) and value.strip():
            return value
    return None


def iter_stdlib_documents() -> Iterator[Document]:
    """Docstrings of standard-library modules, classes and functions (>= 25 words each)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for modname in STDLIB_MODULES:
            try:
                module = importlib.import_module(modname)
            except Exception:  # a module missing from this build of Python
                continue
            items = [(modname, module)]
            for name, obj in sorted(vars(module).items()):
                if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                    continue
                if inspect.isclass(obj) or inspect.isfunction(obj):
                    items.append((f"{modname}.{name}", obj))
            for ref, obj in items:
                doc = inspect.cleandoc(obj.__doc__) if isinstance(obj.__doc__, str) else ""
                if len(doc.split()) >= MIN_DOC_WORDS:
                    yield Document(f"stdlib:{ref}", doc)


def _iter_jsonl(path: Path) -> Iterator[Document]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
            text = _row_text(row, f"{path}:{lineno}") if isinstance(row, dict) else None
            if text is None:
                raise CorpusError(f"{path}:{lineno}: no non-empty 'text' or 'orig_doc' field")
            yield Document(f"{path.name}:{lineno}", text)


def _iter_parquet(path: Path) -> Iterator[Document]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:
        raise CorpusError(f"{path}: not a readable Parquet file ({exc})") from None
    column = next((c for c in TEXT_COLUMNS if c in pf.schema_arrow.names), None)
    if column is None:
        raise CorpusError(f"{path}: no 'text' or 'orig_doc' column (columns: {pf.schema_arrow.names})")
    index = 0
    for batch in pf.iter_batches(columns=[column], batch_size=1024):
        for value in batch.column(0).to_pylist():
            if isinstance(value, str) and value.strip():
                yield Document(f"{path.name}:{index}", value)
            index += 1


def _iter_hf(spec: str) -> Iterator[Document]:
    import datasets

    name, _, split = spec.partition(":")
    ds = datasets.load_dataset(name, split=split or "train", streaming=True)
    for index, row in enumerate(ds):
        text = _row_text(row, spec)
        if text is not None:
            yield Document(f"hf:{name}:{index}", text)


class Corpus:
    """A named source of grounding documents; see the module docstring for sources."""

    def __init__(self, source: str = "stdlib") -> None:
        self.source = source
        if source not in ("stdlib", "default") and not source.startswith("hf:"):
            path = Path(source)
            if not path.is_file():
                raise CorpusError(f"corpus file {source} does not exist (use a .jsonl/.parquet file, hf:NAME or stdlib)")
            if path.suffix not in (".jsonl", ".json", ".parquet"):
                raise CorpusError(f"corpus file {source}: expected .jsonl or .parquet")

    def __iter__(self) -> Iterator[Document]:
        if self.source in ("stdlib", "default"):
            return iter_stdlib_documents()
        if self.source.startswith("hf:"):
            return _iter_hf(self.source[3:])
        path = Path(self.source)
        return _iter_parquet(path) if path.suffix == ".parquet" else _iter_jsonl(path)

    def sample(self, n: int, seed: int = 0, word_budget: int = DEFAULT_WORD_BUDGET) -> list[Document]:
        """``n`` documents drawn uniformly without replacement (reservoir sampling),
        deterministic for a seed, each truncated to ``word_budget`` words."""
        if n <= 0:
            return []
        rng = random.Random(seed)
        reservoir: list[Document] = []
        for i, doc in enumerate(self):
            if i < n:
                reservoir.append(doc)
            else:
                j = rng.randint(0, i)
                if j < n:
                    reservoir[j] = doc
        if not reservoir:
            raise CorpusError(f"corpus {self.source} has no documents")
        rng.shuffle(reservoir)
        return [d.truncated(word_budget) for d in reservoir]
