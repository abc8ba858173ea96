"""Reports: tables in several formats and the paper's figures."""

from storyeval.report.tables import FORMATS, format_table, latex_escape

__all__ = ["FORMATS", "format_table", "latex_escape"]
