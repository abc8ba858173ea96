"""Generation-side statistics: set-level distinct-n, novelty against a corpus (a streamed,
on-disk n-gram hash index), in-group vs out-group embedding similarity with a permutation test,
log-odds keyness with an informative Dirichlet prior, and their spread across runs.

See `storyeval.generation.corpus`, `storyeval.generation.lexical`,
`storyeval.generation.similarity` and `storyeval.generation.keyness`.
"""

from storyeval.generation.corpus import NgramIndex, words
from storyeval.generation.keyness import log_odds_keyness
from storyeval.generation.lexical import diversity_table, novelty_n, set_distinct_n
from storyeval.generation.similarity import group_similarity

__all__ = ["NgramIndex", "diversity_table", "group_similarity", "log_odds_keyness",
           "novelty_n", "set_distinct_n", "words"]
