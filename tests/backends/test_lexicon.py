"""The offline WordNet lexicon built from Debian's wordnet-base files."""

import pytest

from backends import lexicon

pytestmark = pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)


def test_lexnames_is_wordnets_list():
    lines = lexicon.LEXNAMES.splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[44] == "44\tadj.ppl\t3"


def test_reader_reads_lexnames():
    wn = lexicon.wordnet()
    assert wn.get_version() == "3.0"
    assert wn.synset("dog.n.01").lexname() == "noun.animal"
    assert wn.synset("run.v.01").lexname() == "verb.motion"


def test_build_is_idempotent(tmp_path):
    root = lexicon.build_nltk_wordnet(root=tmp_path / "nltk_data")
    files = sorted(p.name for p in (root / "corpora" / "wordnet").iterdir())
    assert "lexnames" in files and "data.noun" in files
    assert lexicon.build_nltk_wordnet(root=tmp_path / "nltk_data") == root
    assert sorted(p.name for p in (root / "corpora" / "wordnet").iterdir()) == files


def test_missing_files_name_the_apt_command(tmp_path):
    with pytest.raises(RuntimeError, match="apt-get install wordnet-base"):
        lexicon.build_nltk_wordnet(source=tmp_path, root=tmp_path / "nltk_data")


def test_cache_dir_reads_env(monkeypatch, tmp_path):
    from backends.settings import Settings, load_settings

    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path))
    assert lexicon.cache_dir() == tmp_path
    # an empty value means the default, for WordNet's layout as for the models (it once sent
    # nltk_data to the working folder while the models went to the home folder)
    monkeypatch.setenv("NONCE_CACHE_DIR", " ")
    assert lexicon.cache_dir() == load_settings().cache_dir == Settings().cache_dir


def test_lemmatize():
    assert lexicon.lemmatize("geese") == "goose"
    assert lexicon.lemmatize("Dogs") == "dog"
    assert lexicon.lemmatize("barked") == "bark"
    assert lexicon.lemmatize("blorptastic") == "blorptastic"


def test_headword_keeps_a_participle_that_is_mostly_an_adjective():
    # lemmatize reads these as verbs' forms and lands on other words (a tyre, a notch)
    assert lexicon.lemmatize("tired") == "tire" and lexicon.lemmatize("jagged") == "jag"
    for word in ("tired", "jagged", "interesting", "Interested"):
        assert lexicon.headword(word) == word.lower()
    # where the verb is the common reading, the base form as before
    for word, base in (
        ("closed", "close"),
        ("used", "use"),
        ("drained", "drain"),
        ("barked", "bark"),
    ):
        assert lexicon.headword(word) == base
    # nouns, nouns in -ing and unknown words as lemmatize has them
    for word in ("geese", "swimming", "building", "blorptastic"):
        assert lexicon.headword(word) == lexicon.lemmatize(word)


def test_sense_counts_come_from_the_table_as_nltk_reads_them_from_the_file():
    from nltk.corpus.reader import WordNetCorpusReader

    wn = lexicon.wordnet()
    entries = "tired.a tire.v closed.a close.v dog.n anvil.n slithy.a".split()
    lemmas = [lemma for entry in entries for lemma in wn.lemmas(*entry.split("."))]
    assert len(lemmas) > 20
    counts = [wn.lemma_count(lemma) for lemma in lemmas]
    assert counts == [WordNetCorpusReader.lemma_count(wn, lemma) for lemma in lemmas]
    assert wn.lemma_count(wn.lemma("dog.n.01.dog")) == 42 and 0 in counts  # counted or not


def test_class_shares_say_what_a_form_is_used_as():
    words = ("drowned", "crying", "cry", "large", "anvil", "softly")
    shares = {w: lexicon.class_shares(w) for w in words}
    assert shares["drowned"] == {"v": 1.0}  # a verb's form only
    assert shares["crying"]["v"] > 0.9  # as read, the form says verb...
    assert 0.5 < shares["cry"]["v"] < 0.8 and shares["cry"]["n"] > 0.2  # ...its base form less
    assert max(shares["large"], key=shares["large"].get) == "a"
    assert shares["anvil"] == {"n": 1.0}
    assert shares["softly"] == {"r": 1.0}  # an adverb is a class of its own
    assert all(sum(s.values()) == pytest.approx(1.0) for s in shares.values())
    assert lexicon.class_shares("blorptastic") == {}


def test_glosses_most_frequent_first():
    dog = lexicon.glosses("dog")
    assert 0 < len(dog) <= 3
    assert "Canis" in dog[0]
    assert lexicon.glosses("geese", max_senses=1)[0].startswith("web-footed")
    assert lexicon.glosses("blorptastic") == []


def test_examples():
    assert "the dog barked all night" in lexicon.examples("dog")


def test_single_word_lemmas():
    words = lexicon.single_word_lemmas()
    assert len(words) > 50_000
    assert words == sorted(set(words))
    assert "dog" in words and "goose" in words
    assert not any("_" in w or "-" in w or any(c.isdigit() for c in w) for w in words)
    assert all(w == w.lower() for w in words)


def test_plural_noun_is_a_form_wordnet_reads_only_as_a_nouns():
    assert all(lexicon.plural_noun(w) for w in ("children", "cars", "hikers", "Turks"))
    assert not lexicon.plural_noun("child")  # a base form
    assert not lexicon.plural_noun("news")  # WordNet's base form, not an inflection
    assert not lexicon.plural_noun("drinks")  # a verb's form too ("she drinks")
    assert not lexicon.plural_noun("blorptastics")
