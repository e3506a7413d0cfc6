"""`python -m aipager.cli`: the same command as the `aipager` program."""

from aipager.cli.app import main

main()
