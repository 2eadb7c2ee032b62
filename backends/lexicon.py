"""WordNet 3.0 (Miller 1995; Fellbaum 1998) read offline through NLTK from Debian's files.

Debian's `wordnet-base` and `wordnet-sense-index` put the WordNet database under
/usr/share/wordnet. NLTK only reads WordNet from `<nltk_data>/corpora/wordnet/` on its
data path, and that folder must also hold a `lexnames` file, which Debian does not ship.
So once per cache dir we build `<cache_dir>/nltk_data/corpora/wordnet/` from copies
(≈ 36 MB) of the Debian files plus the standard 45-line `lexnames` list, and put it on
`nltk.data.path`. Links will not do: NLTK 3.10 resolves symlinks and refuses files outside
the corpus root, refuses hard-linked files, and refuses group- or world-writable ones.

Example:
    >>> from backends import lexicon
    >>> lexicon.lemmatize("geese")
    'goose'
    >>> lexicon.headword("tired"), lexicon.lemmatize("tired")
    ('tired', 'tire')
    >>> lexicon.glosses("dog", max_senses=1)[0]
    'a member of the genus Canis (probably descended from the common wolf) ...'
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from backends.settings import load_settings

if TYPE_CHECKING:
    from nltk.corpus.reader import Lemma, WordNetCorpusReader

log = logging.getLogger(__name__)

# Where Debian's `wordnet-base` and `wordnet-sense-index` install the database files.
DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
# Files NLTK's reader cannot start without (besides `lexnames`, which we write ourselves).
REQUIRED_FILES = ("data.noun", "index.noun", "noun.exc", "index.sense")
INSTALL_HINT = "sudo apt-get install wordnet-base wordnet-sense-index"

Pos = Literal["n", "v", "a", "r"]
# Order in which `lemmatize` tries parts of speech, as NLTK's WordNetLemmatizer defaults to n.
POS_ORDER: tuple[Pos, ...] = ("n", "v", "a", "r")

# WordNet 3.0's lexicographer file list (man 5 lexnames): number, name, syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb). NLTK reads it to name each synset's lexname.
LEXNAMES = """\
00	adj.all	3
01	adj.pert	3
02	adv.all	4
03	noun.Tops	1
04	noun.act	1
05	noun.animal	1
06	noun.artifact	1
07	noun.attribute	1
08	noun.body	1
09	noun.cognition	1
10	noun.communication	1
11	noun.event	1
12	noun.feeling	1
13	noun.food	1
14	noun.group	1
15	noun.location	1
16	noun.motive	1
17	noun.object	1
18	noun.person	1
19	noun.phenomenon	1
20	noun.plant	1
21	noun.possession	1
22	noun.process	1
23	noun.quantity	1
24	noun.relation	1
25	noun.shape	1
26	noun.state	1
27	noun.substance	1
28	noun.time	1
29	verb.body	2
30	verb.change	2
31	verb.cognition	2
32	verb.communication	2
33	verb.competition	2
34	verb.consumption	2
35	verb.contact	2
36	verb.creation	2
37	verb.emotion	2
38	verb.motion	2
39	verb.perception	2
40	verb.possession	2
41	verb.social	2
42	verb.stative	2
43	verb.weather	2
44	adj.ppl	3
"""


def cache_dir() -> Path:
    """The app's cache folder (`backends.settings`: `$NONCE_CACHE_DIR`, else
    ~/.cache/nonce-arena), read as the models' is, so WordNet's layout lands beside them."""
    return load_settings().cache_dir


def build_nltk_wordnet(source: Path = DEBIAN_WORDNET_DIR, root: Path | None = None) -> Path:
    """Build (idempotently) `<root>/corpora/wordnet/` from `source`; return `root`.

    `root` defaults to `<cache_dir()>/nltk_data`. Raises RuntimeError, with the apt
    command, when the Debian files are missing.
    """
    missing = [name for name in REQUIRED_FILES if not (source / name).is_file()]
    if missing:
        raise RuntimeError(
            f"WordNet files {missing} not found in {source}; install them with: {INSTALL_HINT}"
        )
    root = root if root is not None else cache_dir() / "nltk_data"
    target = root / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    target.chmod(0o755)  # NLTK refuses a corpus folder others could write to
    for path in sorted(source.iterdir()):
        if path.is_file():
            _copy(path, target / path.name)
    _write_if_changed(target / "lexnames", LEXNAMES)
    return root


def _copy(source: Path, target: Path) -> None:
    """Copy `source` to `target` (owner-writable only) unless a same-size copy is there."""
    if target.is_file() and not target.is_symlink():
        if target.stat().st_size == source.stat().st_size:
            return
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(source, tmp)
    tmp.chmod(0o644)
    os.replace(tmp, target)  # atomic, so a concurrent reader never sees half a file


def _write_if_changed(path: Path, text: str) -> None:
    """Write `text` to `path` atomically unless it already holds exactly that."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o644)
    os.replace(tmp, path)


@lru_cache(maxsize=1)
def wordnet() -> WordNetCorpusReader:
    """NLTK's WordNet reader over the Debian files (built into the cache on first use)."""
    import nltk
    from nltk.corpus.reader import WordNetCorpusReader
    from nltk.data import FileSystemPathPointer

    class EnglishWordNet(WordNetCorpusReader):
        """English only: skip the sense-key map to other WordNet versions, which only the
        Open Multilingual Wordnet uses and which takes about half of the load time."""

        def map_wn(self, version: str = "wordnet") -> None:
            return None

        _counts: dict[str, int] | None = None

        def lemma_count(self, lemma: Lemma) -> int:
            """SemCor's tag count of the lemma (`cntlist.rev`), from a table read once: NLTK
            searches the file again for every lemma, a seek and a read at each of ~15
            steps, and the reader's class guess asks for ~150 candidates' counts a word."""
            if lemma._lang != "eng":
                return 0
            if self._counts is None:
                with self.open("cntlist.rev") as lines:  # 'key sense_number count' a line
                    self._counts = {key: int(n) for key, _, n in map(str.split, lines)}
            return self._counts.get(lemma._key, 0)

    root = build_nltk_wordnet()
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    with warnings.catch_warnings():  # no Open Multilingual Wordnet reader is passed
        warnings.filterwarnings("ignore", message="The multilingual functions")
        # our folder itself, not the first corpora/wordnet anywhere on the data path
        reader = EnglishWordNet(FileSystemPathPointer(root / "corpora" / "wordnet"), None)
    log.info("WordNet %s loaded from %s", reader.get_version(), root)
    return reader


def _as_entry(word: str) -> str:
    """The word as WordNet spells its entries: lowercase, words joined by '_'."""
    return word.strip().lower().replace(" ", "_")


def lemmatize(word: str) -> str:
    """The word's WordNet base form, trying noun, verb, adjective, adverb in turn.

    Like NLTK's WordNetLemmatizer (Morphy), but not fixed to one part of speech;
    a word WordNet does not know comes back lowercased.
    """
    wn = wordnet()
    form = _as_entry(word)
    for pos in POS_ORDER:
        lemma = wn.morphy(form, pos)
        if lemma:
            return lemma
    return form


def headword(word: str) -> str:
    """The form a dictionary lists the word under: its base form (`lemmatize`), except a
    participle that WordNet knows as an adjective used more often than its verb.

    `lemmatize` tries the verb before the adjective, so "tired" -> "tire", "jagged" ->
    "jag", "interesting" -> "interest", "fleeting" -> "fleet": a different word, often a
    noun's. English lexicalises such participles (a tired child is not one who tires), and
    WordNet's sense counts (SemCor tags, `cntlist.rev`) say which reading is the common
    one: "tired" as an adjective 9 against the verb "tire" 6, "interested" 27 against 8,
    so they stay; "closed" 25 against "close" 86, "used" 8 against 623, "opened" 4 against
    154, so they are the verb's forms, and so is a tie ("stabilized" 2, "stabilize" 2).
    Without the sense counts every count is 0 and this is `lemmatize`.
    """
    wn = wordnet()
    form = _as_entry(word)
    verb = wn.morphy(form, "v")
    if verb and verb != form and not wn.morphy(form, "n"):
        as_adjective = _tag_count(form, "a") + _tag_count(form, "s")  # head and satellite
        if as_adjective > _tag_count(verb, "v"):
            return form
    return lemmatize(word)


def _tag_count(name: str, pos: Pos | Literal["s"]) -> int:
    """How often SemCor tags the lemma in that part of speech, over all its senses."""
    return sum(lemma.count() for lemma in wordnet().lemmas(name, pos))


# The parts of speech a definition probe can name. Adverbs are rare among benchmark words
# (DefGen has none) but not among the words people make up ("She zimbly opened the door"):
# read as "softly", such a word was taken for a verb by the few verbs in the reading's tail.
CLASSES: tuple[Pos, ...] = ("n", "v", "a", "r")


def class_shares(word: str) -> dict[Pos, float]:
    """How often the word is each of `CLASSES`, as its form: SemCor's tag counts over the
    senses of its base form in each (an adjective's satellites included), plus one for
    each part of speech WordNet has it in at all, normalised: "drowned" {"v": 1.0},
    "cry" mostly a verb, "large" mostly an adjective. {} for a word WordNet does not know."""
    counts = _class_counts(_as_entry(word))
    total = sum(count for _, count in counts)
    return {pos: count / total for pos, count in counts}


@lru_cache(maxsize=1 << 16)  # the reader asks for about 150 candidates a word, many again
def _class_counts(form: str) -> tuple[tuple[Pos, float], ...]:
    wn, counts = wordnet(), []
    for pos in CLASSES:
        base = wn.morphy(form, pos)
        if base:
            tags = ("a", "s") if pos == "a" else (pos,)  # an adjective's satellites too
            counts.append((pos, 1.0 + sum(_tag_count(base, tag) for tag in tags)))
    return tuple(counts)


def plural_noun(word: str) -> bool:
    """Whether WordNet reads the form only as a noun's inflection ("children", "cars",
    "knees" as no verb's form): a subject a verb can follow. False where WordNet is
    missing, for a base form ("news") and for a form a verb or adjective also has
    ("sports", "drinks")."""
    try:
        wn = wordnet()
    except (RuntimeError, LookupError, OSError):
        return False
    form = _as_entry(word)
    base = wn.morphy(form, "n")
    return bool(base) and base != form and not wn.morphy(form, "v") and not wn.morphy(form, "a")


def senses(word: str) -> list[Lemma]:
    """The word's WordNet senses (any part of speech, any inflection), most frequent first.

    Frequency is the sense's SemCor tag count (`cntlist.rev`); ties keep WordNet's order.
    """
    wn = wordnet()
    form = _as_entry(word)
    found: list[Lemma] = []
    for pos in POS_ORDER:
        base = wn.morphy(form, pos)
        if base:
            found.extend(wn.lemmas(base, pos))
    unique = list({lemma.key(): lemma for lemma in found}.values())  # Lemma == compares names
    return sorted(unique, key=lambda lemma: -lemma.count())


def glosses(word: str, max_senses: int = 3) -> list[str]:
    """Definitions of the word's `max_senses` most frequent senses, most frequent first."""
    definitions = [lemma.synset().definition() for lemma in senses(word)]
    return list(dict.fromkeys(definitions))[:max_senses]


def examples(word: str, max_senses: int | None = None) -> list[str]:
    """WordNet's example sentences for the word's senses, most frequent sense first."""
    chosen = senses(word)[:max_senses]
    sentences = [text for lemma in chosen for text in lemma.synset().examples()]
    return list(dict.fromkeys(sentences))


_SINGLE_WORD = re.compile(r"^[^_\-\d]+$")


@lru_cache(maxsize=1)
def _single_word_lemmas() -> tuple[str, ...]:
    names = {name.lower() for name in wordnet().all_lemma_names()}
    return tuple(sorted(name for name in names if _SINGLE_WORD.match(name)))


def single_word_lemmas() -> list[str]:
    """All WordNet lemma names without '_', '-' or digits, lowercased, unique, sorted."""
    return list(_single_word_lemmas())
