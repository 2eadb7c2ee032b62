"""The page: components, then wiring. Only this module and app.py import Gradio.

Each handler here only adapts Gradio to `demo.callbacks`: it collects who is asking, turns
the library's ValueError/RuntimeError into gr.Error, and maps the callback's result (a dict
keyed by component name) onto the components.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from typing import Any

import gradio as gr

from backends.inputs import MAX_DEFINITION_CHARS, MAX_EXAMPLES, MAX_WORD_CHARS
from backends.learners import learner_names
from backends.models import LM_PRESETS
from backends.settings import load_settings
from demo.boards import POS_FILTERS, SENTENCES
from demo.callbacks import Callbacks
from demo.engine import DEFAULT_TT_STEPS
from demo.exports import EXPORT_FORMATS
from demo.guidelines import (
    FOCUS_NEXT_BATTLE,
    GUIDELINES,
    REVEAL,
    SHORTCUTS_HEAD,
    SHORTCUTS_NOTE,
    SHORTCUTS_SWITCH,
)
from demo.identity import Who, client_address
from demo.items import ready_examples
from demo.ratelimit import RateLimited
from demo.settings import DemoSettings
from demo.vocabulary import JUDGE_TITLES, JUDGES, VOTE_BUTTONS

INTRO = """# Nonce Arena
Type a made-up word and a few sentences that use it. Each *learner* builds an embedding for
the word from those sentences, the language model reads it as a brand-new token and defines
it. Then judge learners blind in the **Arena**; every vote feeds the **Leaderboard**."""

VOTES = VOTE_BUTTONS

Components = dict[str, Any]


def _guarded(fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The library's refusals become a message on the page, never a stack trace."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, RuntimeError) as err:
        # Gradio renders a toast's message as HTML: what the person typed must stay text
        raise gr.Error(html.escape(str(err), quote=False), print_exception=False) from err


def _keyed(values: dict[str, Any], ui: Components) -> dict[Any, Any]:
    out = {ui[name]: value for name, value in values.items() if name in ui}
    if "voting_open" in values:
        for choice in VOTES:
            out[ui[f"vote_{choice}"]] = gr.Button(interactive=values["voting_open"])
    return out


def _who(
    settings: DemoSettings, browser_id: str | None, request: gr.Request | None, profile: Any
) -> Who:
    user = getattr(profile, "username", None)
    session = getattr(request, "session_hash", None)
    host = getattr(getattr(request, "client", None), "host", None)
    headers = getattr(request, "headers", None) or {}
    address = client_address(host, headers.get("x-forwarded-for"), settings.trust_forwarded)
    return Who(hf_user=user, browser_id=browser_id or None, session=session, address=address)


def _hardware_note() -> str:
    import torch  # the layout is built at launch, never at import

    if torch.cuda.is_available():
        return f"This machine has a GPU: **{torch.cuda.get_device_name(0)}**."
    return "This machine has **no GPU**: everything runs on the **CPU**."


def _learn_tab(settings: DemoSettings) -> Components:
    with gr.Row():
        with gr.Column(scale=2):
            ui = _learn_form(settings)
        with gr.Column(scale=3):
            ui["status"] = gr.Markdown("Fill in a word and sentences, then press **Learn**.")
            ui["cards"] = gr.Markdown(elem_id="definition-cards")
            ui["space"] = gr.Radio(
                [("Input embeddings", "input"), ("Output embeddings", "output")],
                value="input",
                label="Embedding space of the plots",
            )
            ui["neighbours_plot"] = gr.Plot(label="Nearest neighbours", elem_id="neighbours-plot")
            ui["map_plot"] = gr.Plot(label="t-SNE map", elem_id="map-plot")
    ui["view"] = gr.State(None)  # this session's last result, for redrawing in another space
    return ui


def _learn_form(settings: DemoSettings) -> Components:
    ui: Components = {}
    # no max_length on these boxes: a browser cuts a longer paste without a word, where the
    # library refuses it with the limit named (backends/inputs.py)
    ui["word"] = gr.Textbox(
        label="New word", info=f"one word, up to {MAX_WORD_CHARS} characters", elem_id="learn-word"
    )
    ui["sentences"] = gr.Textbox(
        label=f"Example sentences that use the word: one per line, up to {MAX_EXAMPLES}",
        # measured: benchmarks/results/defgen-test-natural{,2}.json against defgen-test-do.json
        info="Whole sentences teach more than short phrases: on 100 held-out words, college's "
        "definitions picked out the word 60-65% of the time from three written sentences "
        "(two authors'), 45% from WordNet's short usage phrases.",
        lines=4,
        max_lines=MAX_EXAMPLES + 2,
        elem_id="learn-sentences",
    )
    ui["definition"] = gr.Textbox(
        label="Definition hint (optional; the definition reader reads it; up to "
        f"{MAX_DEFINITION_CHARS} characters)",
    )
    ui["real_word"] = gr.Textbox(
        label="Real word it stands for (optional)",
        info="what the LM says of that word, which it knows, beside the learners, and how "
        "near each came to it",
        value="",  # an initial value makes it optional in API calls (gradio_client)
        max_lines=1,
        elem_id="learn-real-word",
    )
    chosen = list(settings.learn_learners) or learner_names()
    ui["learners"] = gr.CheckboxGroup(learner_names(), value=chosen, label="Learners")
    ui["tt_steps"] = gr.Slider(
        0,
        100,
        value=DEFAULT_TT_STEPS,
        step=1,
        label="Token tuning: gradient steps (each takes seconds on a CPU)",
    )
    with gr.Row():
        ui["lm"] = gr.Dropdown(list(LM_PRESETS), value=load_settings().lm, label="Language model")
        ui["device"] = gr.Radio(
            [("Automatic", "auto"), ("CPU", "cpu"), ("GPU (CUDA)", "cuda")],
            value="auto",
            label="Where it runs",
        )
    gr.Markdown(_hardware_note())
    ui["learn"] = gr.Button("Learn", variant="primary", elem_id="learn-button")
    gr.Examples(
        [
            [e.word, "\n".join(e.examples), e.definition, e.real_word]
            for e in ready_examples(settings.examples)
        ],
        inputs=[ui["word"], ui["sentences"], ui["definition"], ui["real_word"]],
        label="Ready examples: one click fills the form",
    )
    return ui


def _arena_tab() -> Components:
    ui: Components = {}
    gr.Markdown(
        "Two anonymous learners define the same word. Start a battle on a prepared word, "
        "or on your own word and sentences; then say which definition is better."
    )
    with gr.Accordion("Guidelines for judging", open=True, elem_id="guidelines"):
        gr.Markdown(GUIDELINES)
    gr.Markdown(SHORTCUTS_NOTE, elem_id="shortcuts")
    # read by the page's script alone: no event, so Gradio must be told it is interactive
    gr.Checkbox(
        value=True, label="Single-key shortcuts", interactive=True, elem_id=SHORTCUTS_SWITCH
    )
    ui["battle_pool"] = gr.Button(
        "Battle on a prepared word", variant="primary", elem_id="battle-pool"
    )
    with gr.Accordion("Or a battle on my own word", open=False, elem_id="own-accordion"):
        ui["own_word"] = gr.Textbox(
            label="New word",
            info=f"one word, up to {MAX_WORD_CHARS} characters",
            elem_id="own-word",
        )
        ui["own_sentences"] = gr.Textbox(
            label="Sentences, one per line", lines=3, elem_id="own-sentences"
        )
        # after the fields it reads, in the order a keyboard reaches them
        ui["battle_own"] = gr.Button("Battle on my word", elem_id="battle-own")
    ui["battle_word"] = gr.Textbox(label="Word", interactive=False, elem_id="battle-word")
    ui["battle_sentences"] = gr.Textbox(
        label="Sentences the learners saw", interactive=False, elem_id="battle-sentences"
    )
    with gr.Row():
        ui["definition_a"] = gr.Textbox(
            label="Definition A", interactive=False, lines=3, elem_id="definition-a"
        )
        ui["definition_b"] = gr.Textbox(
            label="Definition B", interactive=False, lines=3, elem_id="definition-b"
        )
    with gr.Row():
        for choice, text in VOTES.items():
            ui[f"vote_{choice}"] = gr.Button(text, interactive=False, elem_id=f"vote-{choice}")
    ui["reveal"] = gr.Markdown(elem_id=REVEAL)
    # the battle's id is all the page holds; the server keeps which learners it pits
    ui["battle_id"] = gr.Textbox(visible=False, label="battle id")
    return ui


def _leaderboard_tab() -> Components:
    ui: Components = {}
    with gr.Row():
        ui["sentences_shown"] = gr.Radio(
            list(SENTENCES), value="all", label="Battles that showed this many sentences"
        )
        ui["pos_shown"] = gr.Radio(
            list(POS_FILTERS),
            value="all",
            label="Part of speech of the hidden word (prepared words)",
            elem_id="pos-shown",
        )
        ui["refresh"] = gr.Button("Refresh", elem_id="refresh")
    for judge in JUDGES:
        ui[f"{judge}_note"] = gr.Markdown(elem_id=f"{judge}-note")
        title = JUDGE_TITLES[judge]  # each table and map named for its judge (screen readers)
        ui[f"{judge}_table"] = gr.Dataframe(
            interactive=False, label=f"{title}: Bradley–Terry scores", elem_id=f"{judge}-table"
        )
        ui[f"{judge}_style_note"] = gr.Markdown(elem_id=f"{judge}-style-note")
        ui[f"{judge}_style"] = gr.Dataframe(
            interactive=False,
            label=f"{title}: scores with length held fixed",
            elem_id=f"{judge}-style",
        )
        ui[f"{judge}_heat"] = gr.Plot(label=f"{title}: win rates", elem_id=f"{judge}-heat")
    with gr.Accordion("Export votes", open=False):
        with gr.Row():
            ui["export_format"] = gr.Radio(list(EXPORT_FORMATS), value="jsonl", label="Format")
            ui["export_judge"] = gr.Radio([*JUDGES, "all"], value="human", label="Judge")
        ui["export"] = gr.Button("Export")
        ui["export_note"] = gr.Markdown()
        ui["export_file"] = gr.File(label="Download", interactive=False)
    return ui


def _wire_learn(cb: Callbacks, ui: Components, settings: DemoSettings) -> None:
    # the API's order: real_word came last (with a default), so older calls still work
    names = (
        "word",
        "sentences",
        "definition",
        "learners",
        "lm",
        "device",
        "space",
        "tt_steps",
        "real_word",
    )
    outputs = [ui[n] for n in ("status", "cards", "view", "neighbours_plot", "map_plot")]

    # explicit parameters: Gradio finds gr.Progress only among positional ones
    def on_learn(
        word,
        sentences,
        definition,
        learners,
        lm,
        device,
        space,
        tt_steps,
        request: gr.Request,
        real_word="",
        progress=gr.Progress(),  # noqa: B008 (Gradio injects it)
    ):
        values = (word, sentences, definition, learners, lm, device, space, tt_steps)
        who = _who(settings, None, request, None)  # Learn is limited per client address
        return _keyed(
            _guarded(cb.learn, *values, progress=progress, who=who, real_word=real_word), ui
        )

    def on_space(view, space):
        if view is None:  # nothing learnt yet: the space chosen applies to the next Learn
            return gr.skip(), gr.skip()
        return _keyed(_guarded(cb.redraw, view, space), ui)

    # one Learn at a time: the LM is CPU/GPU-bound and its nonce slot is shared
    ui["learn"].click(
        on_learn, [ui[n] for n in names], outputs, api_name="learn", concurrency_limit=1
    )
    ui["space"].change(
        on_space,
        [ui["view"], ui["space"]],
        [ui["neighbours_plot"], ui["map_plot"]],
        api_name="redraw",
        concurrency_limit=1,
    )


def _wire_arena(cb: Callbacks, ui: Components, settings: DemoSettings) -> None:
    shown = ("battle_id", "battle_word", "battle_sentences", "definition_a", "definition_b")
    buttons = [ui[f"vote_{c}"] for c in VOTES]
    outputs = [ui[n] for n in (*shown, "reveal")] + buttons
    parallel = settings.event_concurrency

    def on_battle_pool(browser_id, request: gr.Request, profile: gr.OAuthProfile | None):
        return _keyed(_guarded(cb.battle_pool, _who(settings, browser_id, request, profile)), ui)

    def on_battle_own(
        word, sentences, browser_id, request: gr.Request, profile: gr.OAuthProfile | None
    ):
        who = _who(settings, browser_id, request, profile)
        return _keyed(_guarded(cb.battle_own, word, sentences, who), ui)

    ui["battle_pool"].click(
        on_battle_pool,
        [ui["browser_id"]],
        outputs,
        api_name="battle_pool",
        concurrency_limit=parallel,
    )
    own_inputs = [ui["own_word"], ui["own_sentences"], ui["browser_id"]]
    ui["battle_own"].click(
        on_battle_own, own_inputs, outputs, api_name="battle_own", concurrency_limit=parallel
    )
    for choice in VOTES:
        event = ui[f"vote_{choice}"].click(
            _vote_handler(cb, ui, settings, choice),
            [ui["battle_id"], ui["browser_id"]],
            [ui["reveal"], *buttons],
            api_name=f"vote_{choice}",
            concurrency_limit=parallel,
        )
        event.success(
            _board_handler(cb, ui),
            _board_inputs(ui),
            _board_outputs(ui),
            api_visibility="private",
        )
        event.success(None, js=FOCUS_NEXT_BATTLE, api_visibility="private")


def _vote_handler(cb: Callbacks, ui: Components, settings: DemoSettings, choice: str) -> Callable:
    def on_vote(battle_id, browser_id, request: gr.Request, profile: gr.OAuthProfile | None):
        who = _who(settings, browser_id, request, profile)
        return _keyed(_guarded(cb.vote, battle_id, choice, who), ui)

    on_vote.__name__ = f"vote_{choice}"
    return on_vote


def _board_inputs(ui: Components) -> list[Any]:
    """The board's filters: number of sentences shown, part of speech of the hidden word."""
    return [ui["sentences_shown"], ui["pos_shown"]]


def _board_outputs(ui: Components) -> list[Any]:
    parts = ("note", "table", "style_note", "style", "heat")
    return [ui[f"{j}_{part}"] for j in JUDGES for part in parts]


def _board_handler(cb: Callbacks, ui: Components) -> Callable:
    def on_leaderboard(sentences="all", pos="all"):
        return _keyed(_guarded(cb.leaderboards, sentences, pos), ui)

    return on_leaderboard


def _wire_board(cb: Callbacks, ui: Components, settings: DemoSettings, tab: Any) -> None:
    parallel = settings.event_concurrency
    refresh = _board_handler(cb, ui)
    shown = _board_inputs(ui)
    ui["refresh"].click(
        refresh, shown, _board_outputs(ui), api_name="leaderboard", concurrency_limit=parallel
    )
    for selector in shown:
        selector.change(refresh, shown, _board_outputs(ui), api_visibility="private")
    tab.select(refresh, shown, _board_outputs(ui), api_visibility="private")

    def on_export(fmt, judge, request: gr.Request):
        try:
            return _keyed(_guarded(cb.export, fmt, judge, _who(settings, None, request, None)), ui)
        except gr.Error as err:
            if not isinstance(err.__cause__, RateLimited):
                raise
            # said in the note and a toast, the last file left in place: an error would mark
            # the file box failed while the note still told of the export before
            gr.Warning(err.message)
            return {ui["export_file"]: gr.skip(), ui["export_note"]: f"Not exported: {err.message}"}

    ui["export"].click(
        on_export,
        [ui["export_format"], ui["export_judge"]],
        [ui["export_file"], ui["export_note"]],
        api_name="export",
        concurrency_limit=2,
    )


def launch_options() -> dict[str, Any]:
    """What `launch()` takes besides where to serve: the shortcuts' script and the theme.

    Gradio's default theme, with text people must read at WCAG's 4.5:1 or more: white on
    its orange primary buttons was 2.8:1 (now orange 700, 5.2:1) and the fields' hints
    (#bbbbc2) 1.9:1 (now neutral 600, 7.7:1), as an axe-core pass found."""
    theme = gr.themes.Default().set(
        button_primary_background_fill="*primary_700",
        button_primary_background_fill_hover="*primary_800",
        button_primary_border_color="*primary_700",
        button_primary_background_fill_dark="*primary_700",
        button_primary_background_fill_hover_dark="*primary_800",
        button_primary_border_color_dark="*primary_700",
        block_info_text_color="*neutral_600",
    )
    return {"head": SHORTCUTS_HEAD, "theme": theme}


def build_app(settings: DemoSettings, callbacks: Callbacks | None = None) -> gr.Blocks:
    """The whole UI, wired to `callbacks` (built from `settings` when None), its queue bounded
    as `settings` says; not launched (calling `.queue()` again would drop those bounds)."""
    cb = callbacks or Callbacks(settings)
    # Gradio 6 refits its queue statistics with pandas over every past event after each event
    # (quadratic in traffic: ~0.1 s per vote after a few hundred); every 100 events is plenty
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "100")
    with gr.Blocks(title="Nonce Arena", delete_cache=settings.delete_cache) as app:
        # a stable secret, so the id survives server restarts (a random one would not)
        browser_id = gr.BrowserState(
            None, storage_key="nonce-arena-annotator", secret=settings.id_salt
        )
        gr.Markdown(INTRO)
        if settings.hf_login:
            gr.LoginButton()
        with gr.Tabs():
            with gr.Tab("Learn", id="learn"):
                ui = _learn_tab(settings)
            with gr.Tab("Arena", id="arena"):
                ui |= _arena_tab()
            with gr.Tab("Leaderboard", id="leaderboard") as board_tab:
                ui |= _leaderboard_tab()
        ui["browser_id"] = browser_id
        _wire_learn(cb, ui, settings)
        _wire_arena(cb, ui, settings)
        _wire_board(cb, ui, settings, board_tab)
        # a browser without a valid signed id (new, or forged) gets a fresh one from the server
        app.load(cb.browser_id, browser_id, browser_id, api_visibility="private")
        app.load(
            _board_handler(cb, ui),
            _board_inputs(ui),
            _board_outputs(ui),
            api_visibility="private",
        )
    return app.queue(
        max_size=settings.queue_size, default_concurrency_limit=settings.default_concurrency
    )
