"""The `aipager` command line (typer), one sub-app per noun."""
