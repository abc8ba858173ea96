"""``python -m storyeval`` runs the command line."""

from storyeval.cli import entry

raise SystemExit(entry())
