"""The reader ablation's item ranges and variants."""

from __future__ import annotations

import pytest

from benchmarks.reader_ablation import VARIANTS, main, parse_items


def test_item_ranges_are_half_open_and_kept_in_order():
    assert parse_items("80:83,5:6") == [80, 81, 82, 5]


def test_the_variants_differ_only_in_the_prior_and_base_forms():
    shipped = VARIANTS["shipped"]
    assert shipped.prior_weight > 0 and shipped.base_forms
    assert (VARIANTS["plain"].prior_weight, VARIANTS["plain"].base_forms) == (0.0, False)
    assert VARIANTS["prior"].prior_weight == shipped.prior_weight
    assert VARIANTS["base"].base_forms and not VARIANTS["base"].prior_weight


def test_an_unknown_variant_is_refused_before_any_model_loads(capsys):
    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--variants", "shipped,nope"])
    assert "unknown variant" in capsys.readouterr().err
