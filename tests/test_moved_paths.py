"""The forwarding mechanism for a module that moves (`storyeval._moved.forward`): the old path
warns, names the new one, and gives the very same object. The paths of 0.1 were removed in 0.4
as announced; importing one now fails."""

from __future__ import annotations

import importlib

import pytest

from storyeval._moved import REMOVED_IN, forward


def test_forward_warns_and_gives_the_same_object():
    getattr_ = forward("storyeval.old_place", "storyeval.correlation.ties")
    with pytest.warns(DeprecationWarning, match=rf"storyeval.correlation.ties.*{REMOVED_IN}"):
        value = getattr_("tie_values")
    assert value is importlib.import_module("storyeval.correlation.ties").tie_values
    with pytest.raises(AttributeError):
        getattr_("__wrapped__")


@pytest.mark.parametrize("old", ["storyeval.meta.kendall", "storyeval.meta.williams",
                                 "storyeval.resample.annotate"])
def test_the_paths_of_0_1_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
