"""The whole UI builds without launching, every button has an API name, and only the layout
(and app.py) import Gradio."""

from __future__ import annotations

import subprocess
import sys

import gradio as gr

from demo.callbacks import Callbacks
from demo.guidelines import REVEAL, SHORTCUTS, SHORTCUTS_HEAD, SHORTCUTS_SWITCH
from demo.layout import build_app
from demo.settings import DemoSettings

ENDPOINTS = {
    "/learn",
    "/redraw",
    "/battle_pool",
    "/battle_own",
    "/vote_a",
    "/vote_b",
    "/vote_tie",
    "/vote_both_bad",
    "/leaderboard",
    "/export",
}


def test_the_whole_ui_builds_with_every_endpoint(tmp_path):
    callbacks = Callbacks(DemoSettings(cache_dir=tmp_path))
    app = build_app(callbacks.settings, callbacks)
    assert isinstance(app, gr.Blocks)
    assert set(app.get_api_info()["named_endpoints"]) == ENDPOINTS
    buttons = [b for b in app.blocks.values() if isinstance(b, gr.Button)]
    named = {fn.api_name for fn in app.fns.values() if fn.api_name}
    wired = {target[0] for fn in app.fns.values() if fn.api_name in named for target in fn.targets}
    assert {b._id for b in buttons if not isinstance(b, gr.LoginButton)} <= wired
    callbacks.close()


def test_keyboard_shortcuts_press_real_buttons_and_the_guidelines_show(tmp_path):
    callbacks = Callbacks(DemoSettings(cache_dir=tmp_path))
    app = build_app(callbacks.settings, callbacks)
    buttons = {b.elem_id for b in app.blocks.values() if isinstance(b, gr.Button)}
    assert set(SHORTCUTS.values()) <= buttons
    for key, elem_id in SHORTCUTS.items():
        assert f'"{key}": "{elem_id}"' in SHORTCUTS_HEAD
    shown = " ".join(str(b.value) for b in app.blocks.values() if isinstance(b, gr.Markdown))
    assert "How to judge" in shown and "Keyboard:" in shown
    # a switch turns them off (WCAG 2.1.4), the script reads it, and tells screen readers
    switches = [b for b in app.blocks.values() if getattr(b, "elem_id", None) == SHORTCUTS_SWITCH]
    assert len(switches) == 1 and isinstance(switches[0], gr.Checkbox) and switches[0].value
    assert switches[0].interactive  # with no event, Gradio would render it disabled
    assert f'document.querySelector("#{SHORTCUTS_SWITCH} input")' in SHORTCUTS_HEAD
    assert "aria-keyshortcuts" in SHORTCUTS_HEAD and '"aria-live", "polite"' in SHORTCUTS_HEAD
    assert f'document.getElementById("{REVEAL}")' in SHORTCUTS_HEAD
    callbacks.close()


def test_the_own_word_button_comes_after_the_fields_it_reads(tmp_path):
    callbacks = Callbacks(DemoSettings(cache_dir=tmp_path))
    app = build_app(callbacks.settings, callbacks)
    order = [getattr(b, "elem_id", None) for b in app.blocks.values()]
    assert order.index("own-word") < order.index("own-sentences") < order.index("battle-own")
    labels = {b.label for b in app.blocks.values() if isinstance(b, (gr.Dataframe, gr.Plot))}
    assert "Human judges: win rates" in labels and "Dataframe" not in labels and None not in labels
    callbacks.close()


def test_the_queue_is_bounded(tmp_path):
    settings = DemoSettings(cache_dir=tmp_path, queue_size=7, delete_cache=(60, 120))
    callbacks = Callbacks(settings)
    app = build_app(settings, callbacks)
    assert app._queue.max_size == 7 and app.delete_cache == (60, 120)
    callbacks.close()


def test_only_the_layout_imports_gradio():
    code = (
        "import sys, demo.callbacks, demo.arena, demo.boards, demo.engine, demo.plots, "
        "demo.settings, demo.__main__; print('gradio' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_theme_draws_text_people_read_at_4_5_to_1():
    from demo.layout import launch_options
    from tests.demo.colours import contrast

    options = launch_options()
    theme = options["theme"]

    def colour(value: str) -> str:  # "*primary_700" -> the theme's colour of that name
        return getattr(theme, value[1:]) if value.startswith("*") else value

    for mode in ("", "_dark"):
        fill = colour(getattr(theme, f"button_primary_background_fill{mode}"))
        assert contrast("#ffffff", fill) >= 4.5, (mode, fill)  # white text on primary buttons
    assert contrast(colour(theme.block_info_text_color), "#ffffff") >= 4.5  # the fields' hints
    assert options["head"].startswith("<script>")
