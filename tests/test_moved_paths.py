"""The import paths of release 0.1 keep working in 0.2, with a DeprecationWarning that names
the new path (docs/design.md, "Where new code goes"), and give the very same objects."""

from __future__ import annotations

import importlib
import warnings

import pytest

from storyeval._moved import REMOVED_IN

#: old module -> (new module, a name it exports)
MOVED_MODULES = {
    "storyeval.meta.correlation": ("storyeval.correlation.kernel", "pairwise_correlations"),
    "storyeval.meta.kendall": ("storyeval.correlation.kendall", "kendall_counts"),
    "storyeval.meta.kendall_sorted": ("storyeval.correlation.kendall_sorted", "sorted_counts"),
    "storyeval.meta.kendall_weighted": ("storyeval.correlation.kendall_weighted",
                                        "WeightedKendall"),
    "storyeval.meta._kendall_numba": ("storyeval.correlation._kendall_numba", "DIRECT_MAX_N"),
    "storyeval.meta.ties": ("storyeval.correlation.ties", "tie_values"),
    "storyeval.meta.levels": ("storyeval.correlation.levels", "correlate"),
    "storyeval.resample._kernels": ("storyeval.correlation.resampled", "level_statistic"),
    "storyeval.resample._overall": ("storyeval.correlation.resampled_overall", "OverallKernel"),
    "storyeval.resample.annotate": ("storyeval.meta.resampling", "add_bootstrap_ci"),
    "storyeval.meta.compare": ("storyeval.compare.procedures", "resolve_tests"),
    "storyeval.meta.williams": ("storyeval.compare.williams", "williams_test"),
    "storyeval.meta.dependent": ("storyeval.compare.dependent", "ustat_diff"),
    "storyeval.meta.multitest": ("storyeval.compare.multitest", "adjust_pvalues"),
    "storyeval.meta.icc": ("storyeval.agreement.icc", "icc2k"),
    "storyeval.meta.agreement": ("storyeval.agreement.coefficients", "gwet_ac1"),
    "storyeval.meta.annotators": ("storyeval.agreement.annotators", "annotator_agreement"),
    "storyeval.meta.power": ("storyeval.power.planner", "plan_power"),
    "storyeval.meta.power_model": ("storyeval.power.model", "__name__"),
    "storyeval.meta.power_batch": ("storyeval.power.batch", "__name__"),
    "storyeval.meta.user_study": ("storyeval.reproduction.user_study", "user_study_table"),
    "storyeval.meta.selection": ("storyeval.data.selection", "select_measures"),
}


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_module_path_warns_and_gives_the_same_object(old):
    new, name = MOVED_MODULES[old]
    if name == "__name__":  # a module without public names: any attribute it defines
        name = next(n for n in vars(importlib.import_module(new)) if not n.startswith("__"))
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new}\.{name}.*"
                                                rf"removed in storyeval {REMOVED_IN}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)


def test_from_import_of_an_old_path_works():
    with pytest.warns(DeprecationWarning, match="storyeval.agreement.icc"):
        from storyeval.meta.icc import icc2k
    from storyeval.agreement import icc2k as new
    assert icc2k is new


def test_unknown_name_on_an_old_path_is_an_attribute_error():
    module = importlib.import_module("storyeval.meta.icc")
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize(("name", "home"), [("icc2k", "storyeval.agreement"),
                                            ("correlate", "storyeval.correlation"),
                                            ("williams_test", "storyeval.compare"),
                                            ("plan_power", "storyeval.power")])
def test_names_read_through_storyeval_meta_warn(name, home):
    import storyeval.meta as meta

    with pytest.warns(DeprecationWarning, match=rf"storyeval\.meta\.{name} moved to {home}"):
        value = getattr(meta, name)
    assert value is getattr(importlib.import_module(home), name)


def test_pipeline_names_of_storyeval_meta_do_not_warn():
    import storyeval.meta as meta

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert callable(meta.meta_evaluate) and meta.MetaResult is not None


@pytest.mark.parametrize("name", ["register", "get_metric", "available_metrics", "FAMILIES"])
def test_registry_names_through_metrics_base_warn(name):
    from storyeval.metrics import base, registry

    with pytest.warns(DeprecationWarning, match=f"storyeval.metrics.registry.{name}"):
        value = getattr(base, name)
    assert value is getattr(registry, name)


@pytest.mark.parametrize("name", ["read_scores", "scores_to_dataset"])
def test_dataset_builders_through_data_io_warn(name):
    from storyeval.data import io, scores

    with pytest.warns(DeprecationWarning, match=f"storyeval.data.scores.{name}"):
        value = getattr(io, name)
    assert value is getattr(scores, name)
