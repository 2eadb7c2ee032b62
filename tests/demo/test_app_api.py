"""The app launched in-process on a free port, driven through its API with gradio_client."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from demo.engine import run_battle
from demo.sampling import replay
from demo.settings import DemoSettings
from tests.readme import python_example
from tests.tools.loadtest import client_of, launch, open_limits

pytestmark = pytest.mark.integration

FAST = ["centroid", "prompting"]
SENTENCES = "A wug is a small <script>alert(1)</script> bird.\nThe wug sang all night."


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, callbacks) of a running app whose arena pits the fast learners on a small pool."""
    folder = tmp_path_factory.mktemp("app")
    pool = folder / "pool.jsonl"
    words = ["blick", "dax", "fep", "toma"]
    pool.write_text(
        "\n".join(json.dumps({"word": w, "examples": [f"A {w} sat here."]}) for w in words)
    )
    settings = DemoSettings(
        cache_dir=folder,
        arena_learners=tuple(FAST),
        arena_items=pool,
        **open_limits(),  # the concurrency test votes fast on purpose
        leaderboard_rounds=20,
        event_concurrency=20,
    )
    url, callbacks, app = launch(settings, canned=False)
    yield url, callbacks
    app.close()
    callbacks.close()


def human_votes(client) -> str:
    return client.predict(api_name="/leaderboard")[0]


def test_a_space_chosen_before_any_learn_is_no_error(served):
    url, _ = served
    client = client_of(url)  # a new session: nothing learnt, no plots to redraw
    unchanged = {"__type__": "update"}  # gr.skip(): the plots stay as they are
    assert client.predict("output", api_name="/redraw") == (unchanged, unchanged)


def test_the_readmes_api_example_runs_as_written(served):
    url, callbacks = served
    example = python_example("from gradio_client import Client")
    assert example.count('"http://localhost:7860/"') == 1
    before = callbacks.store.count_votes()
    exec(example.replace('"http://localhost:7860/"', repr(url)), {})  # noqa: S102
    assert callbacks.store.count_votes() == before + 1


def test_learn_beside_the_real_word(served):
    url, _ = served
    status, cards, _neighbours, tsne = client_of(url).predict(
        "wug", SENTENCES, "", FAST, "gemma-3-270m", "cpu", "input", 0, "bird", api_name="/learn"
    )
    assert "**The real word: “bird”**" in cards and "`oracle_in_context`" in cards
    # centroid's vector holds what it learned; prompting's is random, so it has no cosine
    said = cards.count("“bird” (its reference vector, input space): cosine")
    assert said == cards.count("No cosine to “bird”") == 1
    assert "the real word: bird" in json.dumps(tsne)  # its point on the map


def test_learn_battle_vote_leaderboard(served):
    url, callbacks = served
    client = client_of(url)
    status, cards, neighbours, tsne = client.predict(
        "wug", SENTENCES, "", FAST, "gemma-3-270m", "cpu", "input", 5, api_name="/learn"
    )
    assert "Ran on **cpu**" in status and all(name in cards for name in FAST)
    assert "<script>" not in cards  # whatever a definition echoes is shown as text
    assert neighbours and tsne  # Plotly figures came back
    redrawn = client.predict("output", api_name="/redraw")
    assert "output embeddings" in json.dumps(redrawn)
    before = human_votes(client)
    # the Learn run cached both embeddings: the battle only samples two definitions
    shown = client.predict("wug", SENTENCES, None, api_name="/battle_own")
    battle_id, word, sentences, definition_a, definition_b = shown[:5]
    assert word == "wug" and "<script>alert(1)</script>" in sentences
    battle = callbacks.store.get_battle(battle_id)
    assert (battle.output_a, battle.output_b) == (definition_a, definition_b)
    assert json.loads(battle.decoding)["seed"] == battle.seed is not None
    # the stored decoding gives the battle's texts again
    decoding, max_new_tokens, mark_cut = replay(battle.decoding)
    again = run_battle(
        battle.item,
        [battle.learner_a, battle.learner_b],
        lm=battle.lm,
        configs=callbacks.arena.configs,
        decoding=decoding,
        max_new_tokens=max_new_tokens,
        cache=callbacks.cache,
        mark_cut=mark_cut,
    )
    assert [again[battle.learner_a], again[battle.learner_b]] == [definition_a, definition_b]
    reveal = client.predict(battle_id, None, api_name="/vote_b")
    assert "A was" in (reveal if isinstance(reveal, str) else reveal[0])
    after = human_votes(client)
    votes = callbacks.store.count_votes("human")  # other tests of this app vote too
    assert before != after and f"— {votes} vote{'s' * (votes != 1)}." in after


def test_forged_and_second_votes_are_refused_through_the_api(served):
    url, callbacks = served
    callbacks.arena.prefill(callbacks.arena.pool, {"centroid": "x", "prompting": "y"})
    client, other = client_of(url), client_of(url)
    with pytest.raises(Exception, match="does not contain the word"):
        client.predict("zorp", "No such word here.", None, api_name="/battle_own")
    with pytest.raises(Exception, match="unknown battle"):
        client.predict("forged-id", None, api_name="/vote_a")
    battle_id = client.predict(None, api_name="/battle_pool")[0]
    with pytest.raises(Exception, match="another annotator"):
        other.predict(battle_id, None, api_name="/vote_a")
    client.predict(battle_id, None, api_name="/vote_tie")
    again = client.predict(battle_id, None, api_name="/vote_a")  # the first vote stands
    assert "already judged this battle (**a tie**)" in again
    assert callbacks.store.vote_on(battle_id).vote == "tie"


def test_a_refused_export_says_so_and_leaves_the_last_file(served):
    url, _ = served
    client = client_of(url)
    notes = [client.predict("jsonl", "human", api_name="/export") for _ in range(4)]
    # three in a burst per address (no other test here exports), then refused
    assert all(note.endswith(" exported as jsonl.") for _, note in notes[:3]), notes
    file, note = notes[3]
    assert file == {"__type__": "update"}  # gr.skip(): the box keeps the last export's link
    assert re.search(r"Too many exports .*; try again in [1-9]\d* s\.$", note), note


def test_twenty_clients_cast_five_hundred_votes(served):
    url, callbacks = served
    callbacks.arena.prefill(callbacks.arena.pool, {"centroid": "x", "prompting": "y"})
    start = callbacks.store.count_votes("human")
    choices = ["a", "b", "tie", "both_bad"]

    def annotate(worker: int) -> int:
        client = client_of(url)
        for k in range(25):
            battle_id = client.predict(None, api_name="/battle_pool")[0]
            client.predict(battle_id, None, api_name=f"/vote_{choices[(worker + k) % 4]}")
        return 25

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert sum(pool.map(annotate, range(20))) == 500
    assert callbacks.store.count_votes("human") - start == 500
    board = callbacks.boards.board("human")
    assert board.votes == start + 500
    assert sum(row.battles for row in board.ratings.rows) == 2 * board.votes
    assert f"{start + 500} votes" in client_of(url).predict(api_name="/leaderboard")[0]
