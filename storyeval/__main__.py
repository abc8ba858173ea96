"""``python -m storyeval`` runs the command line."""

from storyeval.cli import main

raise SystemExit(main())
