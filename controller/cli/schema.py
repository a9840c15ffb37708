"""`dpctl schema`: the intent's JSON Schema."""

from __future__ import annotations

from controller.cli.common import command_app, print_json
from controller.intent import intent_schema

app = command_app()


@app.command()
def schema() -> None:
    """Print the JSON Schema of the fabric intent."""
    print_json(intent_schema())
