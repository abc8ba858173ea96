"""Imported by the figure workers' forkserver only (its preload list): arms the forkserver to
die with the process that started it (`storyeval.report._lifeline`). Do not import it
elsewhere: the importing process would exit when its parent does."""

from storyeval.report._lifeline import arm

arm(death_signal=False)  # started from a short-lived thread: see arm
