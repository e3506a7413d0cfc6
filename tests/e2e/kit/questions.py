"""AskUserQuestion questions the scenarios script the fake model to ask."""

from __future__ import annotations

COLOUR = {"question": "Which colour should the button be?", "header": "Colour",
          "multiSelect": False,
          "options": [{"label": "Green", "description": "calm"},
                      {"label": "Red", "description": "loud"},
                      {"label": "Blue", "description": "cool"}]}
SIZE = {"question": "Which size should it be?", "header": "Size", "multiSelect": False,
        "options": [{"label": "Small", "description": "s"},
                    {"label": "Medium", "description": "m"},
                    {"label": "Large", "description": "l"}]}
TOPPINGS = {"question": "Which toppings do you want?", "header": "Toppings", "multiSelect": True,
            "options": [{"label": "Cheese", "description": "c"},
                        {"label": "Ham", "description": "h"},
                        {"label": "Olives", "description": "o"}]}
