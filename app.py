"""Nonce Arena: read the settings, build the Gradio app, launch it (Hugging Face Spaces run this).

python app.py    # http://localhost:7860 (GRADIO_SERVER_PORT / GRADIO_SERVER_NAME to change)
"""

import logging
import sys

from demo.callbacks import Callbacks
from demo.layout import build_app, launch_options
from demo.settings import load_demo_settings
from demo.store import StoreUnavailable

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:  # a NONCE_* setting out of range, or a vote store that cannot be opened: one line
        settings = load_demo_settings()
        callbacks = Callbacks(settings)
    except (ValueError, StoreUnavailable) as err:
        sys.exit(f"error: {err}")
    app = build_app(settings, callbacks)
    if settings.warm_up:  # the first Learn click then finds the LM and the learners loaded
        callbacks.warm_up_in_background()
    app.launch(show_error=False, **launch_options())
