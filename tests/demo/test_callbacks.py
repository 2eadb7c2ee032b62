"""The app's callbacks called as plain functions, with no model: definitions come from the cache."""

from __future__ import annotations

import csv
import json
import os
import re

import numpy as np
import pytest

from backends.inputs import InputError, check_examples
from backends.neighbours import Neighbour
from demo.callbacks import Callbacks
from demo.identity import Who
from demo.items import arena_pool, ready_examples, split_sentences
from demo.plots import learner_colour, map_figure, neighbours_figure, win_rate_figure
from demo.ratelimit import RateLimited
from demo.settings import ASSETS, DemoSettings, RateLimit, load_demo_settings
from demo.store import Item, VoteRefused
from demo.text import definition_cards, literal
from tests.demo.colours import contrast

FAST = ("centroid", "prompting")
CHEAP = {"centroid": "a small striped bird", "prompting": "a kind of <b>tool</b>"}
ALICE, BOB = Who(session="alice-session"), Who(session="bob-session")


def write_pool(path, items):
    path.write_text("\n".join(json.dumps({"word": w, "examples": ex}) for w, ex in items))
    return path


@pytest.fixture
def settings(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", [("blick", ["A blick sat on the fence."])])
    return DemoSettings(
        cache_dir=tmp_path,
        arena_learners=FAST,
        arena_items=pool,
        vote_limit=RateLimit(per_minute=600, burst=50),
        battle_limit=RateLimit(per_minute=600, burst=50),
        leaderboard_rounds=20,
    )


@pytest.fixture
def cb(settings):
    callbacks = Callbacks(settings)
    callbacks.arena.prefill(callbacks.arena.pool, CHEAP)
    yield callbacks
    callbacks.close()


def test_pool_battle_then_vote_reveals_names_and_feeds_the_board(cb):
    shown = cb.battle_pool(ALICE)
    assert shown["voting_open"] is True and shown["battle_word"] == "blick"
    assert {shown["definition_a"], shown["definition_b"]} == set(CHEAP.values())
    result = cb.vote(shown["battle_id"], "a", ALICE)
    assert result["voting_open"] is False
    assert "centroid" in result["reveal"] and "prompting" in result["reveal"]
    boards = cb.leaderboards()
    assert "1 vote" in boards["human_note"] and "0 votes" in boards["auto_note"]
    assert set(boards["human_table"]["learner"]) == set(FAST)
    assert boards["human_table"]["battles"].tolist() == [1, 1]
    # one battle each: both scores are preliminary, and the note says so
    assert "Preliminary (fewer than 50 battles" in boards["human_note"]
    assert "centroid" in boards["human_note"] and "Preliminary" not in boards["auto_note"]
    # and one learner won its only battle: how far above the other is the prior's word
    shown_first = re.search(r"Ordered, not measured apart: (\w+) \| (\w+)\.", boards["human_note"])
    assert shown_first and set(shown_first.groups()) == set(FAST)  # the winner first
    assert "Never compared" not in boards["human_note"]  # the two met


def test_forged_and_replayed_votes_are_refused(cb):
    with pytest.raises(VoteRefused, match="unknown battle"):
        cb.vote("not-a-real-battle", "a", ALICE)
    battle_id = cb.battle_pool(ALICE)["battle_id"]
    with pytest.raises(VoteRefused, match="another annotator"):
        cb.vote(battle_id, "a", BOB)
    cb.vote(battle_id, "tie", ALICE)
    # her second key a moment later: the first vote stands, and she is told so, no error
    again = cb.vote(battle_id, "b", ALICE)
    assert again["reveal"].startswith("You had already judged this battle (**a tie**)")
    assert "You have judged **1** battle" in again["reveal"] and not again["voting_open"]
    with pytest.raises(VoteRefused, match="unknown vote"):
        cb.vote(cb.battle_pool(ALICE)["battle_id"], "c", ALICE)
    assert cb.store.count_votes() == 1


def test_own_word_battle_keeps_markup_as_text(cb):
    sentences = "The <script>alert(1)</script> zorp ate it.\n\nA zorp is *bold*."
    item = Item("zorp", tuple(split_sentences(sentences)))
    cb.arena.prefill([item], CHEAP)
    shown = cb.battle_own("zorp", sentences, ALICE)
    assert "<script>alert(1)</script>" in shown["battle_sentences"]  # a Textbox shows it as text
    stored = cb.store.get_battle(shown["battle_id"])
    assert stored.item == item and stored.annotator == cb.identities.annotator(ALICE)


@pytest.mark.parametrize(
    ("word", "sentences", "message"),
    [
        ("", "A blick.", "enter the new word"),
        ("two words", "two words here", "single word"),
        ("blick", "", "at least one sentence"),
        ("blick", "No word here.", "does not contain"),
    ],
)
def test_bad_input_is_refused_before_any_model_runs(cb, word, sentences, message):
    with pytest.raises(InputError, match=message):
        cb.learn(word, sentences, "", list(FAST), "gemma-3-270m", "cpu", "input")
    with pytest.raises(InputError, match=message):
        cb.battle_own(word, sentences, ALICE)
    if not word:  # a form never opened sends None: the same message, not "got NoneType"
        with pytest.raises(InputError, match=message):
            cb.battle_own(None, sentences, ALICE)


def test_bad_choices_name_the_valid_ones(cb):
    with pytest.raises(ValueError, match="did you mean 'centroid'"):
        cb.learn("blick", "A blick.", "", ["centriod"], "gemma-3-270m", "cpu", "input")
    with pytest.raises(ValueError, match="choose one of: gemma-3-270m"):
        cb.learn("blick", "A blick.", "", list(FAST), "owner/model", "cpu", "input")
    with pytest.raises(ValueError, match="steps=900"):
        cb.learn("blick", "A blick.", "", list(FAST), "gemma-3-270m", "cpu", "input", 900)
    with pytest.raises(ValueError, match="export format"):
        cb.export("xml", "human")


def test_export_writes_every_vote_in_both_formats(cb):
    for _ in range(3):
        cb.vote(cb.battle_pool(ALICE)["battle_id"], "b", ALICE)
    jsonl = cb.export("jsonl", "human")["export_file"]
    rows = [json.loads(line) for line in open(jsonl, encoding="utf-8")]
    assert len(rows) == 3 and rows[0]["annotator"].startswith("anon:")
    assert "alice-session" not in open(jsonl, encoding="utf-8").read()
    with open(cb.export("csv", "all")["export_file"], encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == 3


def test_exports_are_limited_per_address_and_their_files_pruned(settings):
    cb = Callbacks(settings.with_(export_files_kept=2))
    here = Who(session="x", address="203.0.113.5")
    files = [cb.export("jsonl", "all", here)["export_file"] for _ in range(3)]
    with pytest.raises(RateLimited, match="Too many exports"):
        cb.export("csv", "all", here)
    cb.export("csv", "all", Who(session="y", address="203.0.113.6"))  # another address
    assert len(cb.exports.files()) == 2
    assert not os.path.exists(files[0])  # pruned once newer exports were made
    cb.close()
    assert not os.path.exists(files[-1]) and not cb.exports.root.exists()


def test_sentences_are_measured_before_they_are_split():
    with pytest.raises(ValueError, match="the limit is 24,000 in all"):
        split_sentences("The wug sang.\n" * 1_000_000)
    assert split_sentences("A wug.\n\n  The wug sang.  \n") == ["A wug.", "The wug sang."]


def test_a_line_ends_only_at_a_typed_line_break():
    # str.splitlines also ends a line at U+2028/U+2029/U+0085 and \x0b, \x0c, \x1c-\x1e
    text = "The wug\u2028sat.\u2029 And wug\x85 here.\r\nA wug\rTwo\x0bwugs\x1c.\n"
    lines = ["The wug\u2028sat.\u2029 And wug\x85 here.", "A wug", "Two\x0bwugs\x1c."]
    assert split_sentences(text) == lines
    assert [e.text for e in check_examples("wug", lines[:2])] == [
        "The wug sat. And wug here.",
        "A wug",
    ]
    with pytest.raises(InputError, match=r"sentence 3 contains a control .*\(U\+000B\); remove it"):
        check_examples("wug", lines)


def test_rate_limit_per_annotator(cb, settings):
    one = RateLimit(per_minute=1, burst=1)
    strict = Callbacks(settings.with_(vote_limit=one))  # the address limit stays at the default
    strict.arena.prefill(strict.arena.pool, CHEAP)
    strict.vote(strict.battle_pool(ALICE)["battle_id"], "a", ALICE)
    second = strict.battle_pool(ALICE)["battle_id"]
    with pytest.raises(RateLimited, match="try again"):
        strict.vote(second, "a", ALICE)
    strict.vote(strict.battle_pool(BOB)["battle_id"], "a", BOB)  # others are not held up


def test_learn_is_limited_per_address_before_the_lm_is_touched(settings, monkeypatch):
    import demo.engine

    class ReachedTheLM(Exception):
        pass

    def set_up_lm(*_args, **_kwargs):
        raise ReachedTheLM

    monkeypatch.setattr(demo.engine, "set_up_lm", set_up_lm)
    cb = Callbacks(settings.with_(learn_limit=RateLimit(per_minute=1, burst=2)))
    args = ("wug", "A wug sang.", "", ["centroid"], "gemma-3-270m", "cpu", "input", 0)
    here, there = Who(session="x", address="203.0.113.5"), Who(address="203.0.113.6")
    with pytest.raises(InputError, match="does not contain the word"):  # a typo: no click spent
        cb.learn("wug", "A dax sang.", *args[2:], who=here)
    with pytest.raises(InputError, match="definition is 601 characters long"):
        cb.learn(*args[:2], "x" * 601, *args[3:], who=here)
    with pytest.raises(InputError, match="is the new word itself"):  # nor this one
        cb.learn(*args, who=here, real_word="wugs")
    for _ in range(2):
        with pytest.raises(ReachedTheLM):
            cb.learn(*args, who=here)
    with pytest.raises(RateLimited, match=r"Too many Learn requests .*\(per address\); try again"):
        cb.learn(*args, who=here)
    with pytest.raises(ReachedTheLM):  # another address, and a caller in this process
        cb.learn(*args, who=there)
    with pytest.raises(ReachedTheLM):
        cb.learn(*args)
    cb.close()


def test_points_are_signed_without_a_negative_zero():
    from demo.callbacks import _points

    assert [_points(x) for x in (-0.2, 0.0, 0.4, -12.6, 57.5)] == ["+0", "+0", "+0", "-13", "+58"]
    assert _points(float("nan")) == "n/a"


def test_literal_shows_markup_as_characters():
    shown = literal("<script>alert(1)</script> *x* [a](b)\n# h")
    assert "<" not in shown and "&lt;script&gt;" in shown
    assert r"\*x\*" in shown and r"\[a\]\(b\)" in shown and "\n" not in shown
    cards = definition_cards("<img src=x>", [("centroid", "<b>hi</b>", 0.5)])
    assert "<img" not in cards and "<b>" not in cards


def test_a_learners_note_shows_on_its_card():
    from backends.learners.definition_reader import SPELLING_ONLY

    cards = definition_cards(
        "wug", [("definition_reader", "a thing.", 0.1, SPELLING_ONLY), ("centroid", "x.", 0.1, "")]
    )
    reader, centroid = cards.split("---")[1:]
    assert "definition hint" in reader and "spelling" in reader
    assert "spelling" not in centroid and "definition hint" not in centroid


def test_a_card_names_its_nearest_tokens_in_words():
    # the chart shows them only to the eye: a screen reader, or a copy, reads them here
    nearest = [(" anvil", 0.8312), ("<b>", 0.5), (" ", 0.4)] + [(f" w{k}", 0.1) for k in range(9)]
    cards = definition_cards("florp", [("centroid", "a block.", 0.1, "", nearest)])
    line = cards.split("\n")[-1]
    assert line.startswith("Nearest tokens (input space, cosine): anvil 0.83 · &lt;b&gt; 0.50")
    assert line.count("·") == 4  # five named, a blank token skipped
    assert "Nearest" not in definition_cards("florp", [("cache", "a.", 0.1, "", [])])


def test_the_real_words_card_comes_last_and_each_learner_says_how_near_it_came():
    import torch

    from backends.pipeline import KnownWord

    rows = [
        ("centroid", "a block.", 0.1, "", []),
        ("college", "an iron block.", 1.0, "", []),
        ("prompting", "a thing.", 0.0, "", []),  # a random vector: no cosine
    ]
    said = {"oracle": "a heavy <b>iron</b> block.", "oracle_in_context": ""}
    itself = {"oracle": False, "oracle_in_context": False}
    cosines, ranks = {"centroid": 0.2, "college": 0.98}, {"centroid": 4051, "college": 3}
    known = KnownWord("anvil", said, itself, torch.zeros(4), cosines, ranks, 77636)
    blocks = definition_cards("florp", rows, known).split("\n\n---\n\n")
    assert blocks[-1].startswith("**The real word: “anvil”** · not a learner")
    assert "Alone (`oracle`):\n\n> a heavy &lt;b&gt;iron&lt;/b&gt; block\\." in blocks[-1]
    assert "(`oracle_in_context`):\n\n> *(nothing)*" in blocks[-1]
    said_of = "“anvil” (its reference vector, input space): cosine"
    assert f"{said_of} 0.20 · rank 4,051 of 77,636 WordNet words by cosine" in blocks[1]
    assert f"{said_of} 0.98 · rank 3 of 77,636 WordNet words by cosine" in blocks[2]
    assert "No cosine to “anvil”: its vector does not hold what it learned." in blocks[3]
    assert "osine" not in definition_cards("florp", rows)  # no real word, no line
    # an oracle's definition that names its own word is said to
    said = {"oracle": "a heavy block.", "oracle_in_context": "an anvil's block."}
    itself = {"oracle": False, "oracle_in_context": True}
    known = KnownWord("anvil", said, itself, torch.zeros(4), cosines, ranks, 77636)
    card = definition_cards("florp", rows, known).split("---")[-1]
    assert card.count("say the word itself") == 1 and card.endswith("would not need.*")


def test_figures_escape_tokens_and_keep_nan_cells():
    from types import SimpleNamespace

    row = SimpleNamespace(learner="centroid", neighbours={"input": [Neighbour("<a>", 7, 0.5)]})
    fig = neighbours_figure(SimpleNamespace(word="w<", results=[row]), "input")
    assert "&lt;a&gt;" in fig.data[0].y[0] and "<a>" not in fig.data[0].y[0]
    heat = win_rate_figure(("a", "b"), np.array([[np.nan, 0.7], [0.3, np.nan]]), "t")
    assert heat.data[0].text[0][0] == ""
    assert not heat.layout.annotations  # the diagonal is no pair


def test_pairs_that_never_met_are_marked_and_every_number_is_readable():
    from demo.plots import NEVER_MET, WIN_RATE_COLOURS

    rates = np.array([[np.nan, 1.0, np.nan], [0.0, np.nan, 0.5], [np.nan, 0.5, np.nan]])
    heat = win_rate_figure(("a", "b", "c"), rates, "t")
    marked = {(note.y, note.x) for note in heat.layout.annotations if note.text == "never met"}
    assert marked == {("a", "c"), ("c", "a")}  # not the diagonal
    assert heat.layout.plot_bgcolor == NEVER_MET  # the colour behind a cell without a share

    # black numbers on every colour of the scale, and on the grey: WCAG's 4.5:1 and more
    for colour in [c for _, c in WIN_RATE_COLOURS] + [NEVER_MET]:
        assert contrast("#000000", colour) >= 7.0, colour
    assert heat.data[0].textfont.color == "#000000"


def test_a_learner_has_one_colour_in_both_figures_and_a_missing_chart_is_said():
    from types import SimpleNamespace

    from backends.projection import MapPoint

    rows = [
        SimpleNamespace(learner="cache", neighbours={"output": []}),  # a zero output vector
        SimpleNamespace(learner="college", neighbours={"output": [Neighbour("anvil", 7, 0.9)]}),
    ]
    bars = neighbours_figure(SimpleNamespace(word="florp", results=rows), "output")
    assert [trace.name for trace in bars.data] == ["college"]
    assert "no neighbours for cache" in bars.layout.title.text
    points = [MapPoint("college", "college", True, 1.0, 0.0, 0.0)]
    star = map_figure(points, "pca", "florp", "output").data[0]
    assert bars.data[0].marker.color == star.marker.color == learner_colour("college")
    assert learner_colour("cache") != learner_colour("college")
    assert "No map" in map_figure([], "none", "florp", "output").layout.title.text
    # the real word is drawn in a colour of its own, named as what it is, not a learner
    from backends.learners import learner_names
    from backends.pipeline import real_word_label

    real = real_word_label("anvil")
    assert learner_colour(real) not in {learner_colour(n) for n in learner_names()}
    target = map_figure([MapPoint(real, real, True, 1.0, 0.0, 0.0)], "pca", "florp", "input")
    assert "its reference vector" in target.data[0].hovertemplate
    assert "learned by" not in target.data[0].hovertemplate


def test_shipped_assets_are_valid():
    examples = ready_examples(ASSETS / "examples.json")
    assert {"slithy", "borogove"} <= {e.word for e in examples}
    assert {e.word: e.real_word for e in examples if e.real_word}["florp"] == "anvil"
    pool = arena_pool(ASSETS / "arena_items.jsonl")
    assert len(pool) >= 500 and all(1 <= len(i.examples) <= 3 for i in pool)


def test_settings_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NONCE_ARENA_LEARNERS", "centroid, cache")
    monkeypatch.setenv("NONCE_VOTES_PER_MIN", "5")
    loaded = load_demo_settings()
    assert loaded.db_target == str(tmp_path / "votes.sqlite")
    assert loaded.arena_learners == ("centroid", "cache") and loaded.vote_limit.per_minute == 5
    monkeypatch.setenv("NONCE_DB", "postgresql://db/votes")
    assert load_demo_settings().db_target == "postgresql://db/votes"
    monkeypatch.setenv("NONCE_VOTES_PER_MIN", "0")
    with pytest.raises(ValueError, match="NONCE_VOTES_PER_MIN"):
        load_demo_settings()
    monkeypatch.setenv("NONCE_VOTES_PER_MIN", "5")
    monkeypatch.setenv("NONCE_LEARNS_PER_MIN", "100")
    assert load_demo_settings().learn_limit.per_minute == 100
    monkeypatch.delenv("NONCE_LEARNS_PER_MIN")
    monkeypatch.setenv("NONCE_ARENA_ORACLE_SHARE", "0.2")
    assert load_demo_settings().arena_oracle_share == 0.2
    monkeypatch.setenv("NONCE_ARENA_ORACLE_SHARE", "2")
    with pytest.raises(ValueError, match="NONCE_ARENA_ORACLE_SHARE"):
        load_demo_settings()
    monkeypatch.delenv("NONCE_ARENA_ORACLE_SHARE")
    # each refused with its name, before the app starts: not a parse error, nor a NaN
    # that passes every comparison (a rate limit of NaN limited nothing)
    for name, value in [
        ("NONCE_VOTES_PER_MIN", "nan"),
        ("NONCE_QUEUE_SIZE", "-1"),
        ("NONCE_REPEAT_SHARE", "2"),
        ("NONCE_ARENA_TEMPERATURE", "abc"),
        ("NONCE_ARENA_TOP_K", "2.5"),
        ("NONCE_ARENA_TT_STEPS", "-5"),
        ("NONCE_HUB_EVERY_MINUTES", "inf"),
        ("NONCE_LEARNS_PER_MIN", "0"),
    ]:
        monkeypatch.setenv(name, value)
        with pytest.raises(ValueError, match=f"{name}="):
            load_demo_settings()
        monkeypatch.delenv(name)
    assert load_demo_settings().queue_size == DemoSettings().queue_size  # the defaults again
