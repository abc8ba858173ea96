"""Imported by the figure workers' forkserver (its preload list): arms the forkserver to die
with the process that started it (`storyeval.report._lifeline`).

Importing it elsewhere (pytest's ``--doctest-modules`` imports every module) arms nothing: the
guard arms only a process whose parent set ``STORYEVAL_FORKSERVER_PARENT`` to its own pid just
before starting the forkserver (`storyeval.report.figures.FigureWorkers`)."""

import os

from storyeval.report._lifeline import arm

#: Environment variable holding the pid of the process that starts the forkserver.
PARENT_VARIABLE = "STORYEVAL_FORKSERVER_PARENT"

if os.environ.get(PARENT_VARIABLE) == str(os.getppid()):
    arm(death_signal=False)  # started from a short-lived thread: see arm
