"""Every numeric field of real ``score`` output has a documented direction and range."""

from __future__ import annotations

from sigmoid_head.cli import main
from sigmoid_head.evaluation.spans import SpanConfig, add_errors
from sigmoid_head.scoring.fields import FIELDS, HIGHER_BETTER, HIGHER_WORSE, describe, field_for
from sigmoid_head.scoring.force_decode import score_records


def _numeric_fields(row: dict) -> set[str]:
    out = set()
    for key, value in row.items():
        if isinstance(value, list):
            out |= {f"{key}[].{k}" for item in value for k, v in item.items()
                    if isinstance(v, int | float)}
        elif isinstance(value, int | float):
            out.add(key)
    return out


def test_every_numeric_output_field_is_described(causal) -> None:
    rows = score_records(causal, [{"source": "el perro", "candidate": "the dog eats"}],
                         with_tokens=True, progress=False)
    rows[0]["candidate"] = "the dog eats"
    add_errors(rows, SpanConfig(threshold=1.0))
    rows[0] |= {"combined": 0.5, "combined_log": -0.7, "sigmoid_platt": 0.4}
    names = _numeric_fields(rows[0])
    assert {"tokens[].start", "words[].end", "errors[].confidence", "entropy_mean"} <= names
    missing = sorted(n for n in names if field_for(n) is None)
    assert missing == []


def test_directions_are_the_right_way_round() -> None:
    assert field_for("entropy_mean").direction == HIGHER_WORSE
    assert field_for("tokens[].entropy").direction == HIGHER_WORSE
    assert field_for("softmax_mean_log").direction == HIGHER_BETTER
    assert field_for("sigmoid:rank16_min").direction == HIGHER_BETTER
    assert field_for("errors[].confidence").direction == HIGHER_WORSE
    assert field_for("tokens[].end").range.startswith("[0, len")
    assert field_for("no_such_field") is None
    assert all(f.direction in (HIGHER_BETTER, HIGHER_WORSE, "-") for f in FIELDS)


def test_describe_option_prints_the_table_without_a_model(capsys) -> None:
    for command in ("score", "generate"):
        assert main([command, "--describe"]) == 0
        out = capsys.readouterr().out
        assert out == describe()
        assert "| `entropy_mean` | higher = worse |" in out


def test_describe_names_the_methods_behind_m(capsys) -> None:
    """``<m>`` is spelled out: every registered method, a newly registered one included."""
    from sigmoid_head.registry import methods as registry

    assert main(["score", "--describe"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("`<m>` stands for"))
    assert all(f"`{n}`" in line for n in registry.names()) and "`sigmoid`" in line
    registry.register(registry.Method("zz_new", reads="lm_logits", token_values=lambda s: s))
    try:
        assert "`zz_new`" in describe()
    finally:
        registry.unregister("zz_new")
    assert "`zz_new`" not in describe()


def test_describe_lists_geo_mean_as_derived_by_evaluate(capsys) -> None:
    """``<m>_mean_log`` is the log a row holds; ``<m>_geo_mean``, its exponential, is listed
    as evaluate's own (not a key of the rows)."""
    from sigmoid_head.registry import columns

    log, geo = field_for("softmax_mean_log"), field_for("softmax_geo_mean")
    assert log.range == "(-inf, 0]" and "log-probability" in log.meaning
    assert geo is not None and geo.range == "[0, 1]" and geo.direction == HIGHER_BETTER
    assert "evaluate only" in geo.meaning and "exp(<m>_mean_log)" in geo.meaning
    assert "softmax_geo_mean" in columns.derived_keys()
    assert "softmax_mean_log" not in columns.derived_keys()
    assert main(["score", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "| `<m>_geo_mean` | higher = better | [0, 1] | exp(<m>_mean_log)" in out
    assert "geo-mean" not in out


def test_every_describe_row_is_four_cells_when_pasted() -> None:
    import re

    from sigmoid_head.scoring import fields as fields_module
    from sigmoid_head.scoring.rerank import describe as rerank_describe

    text = fields_module.describe() + rerank_describe()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert any("ln \\|V\\|" in row for row in rows)  # the range with a bar in it, escaped
    for row in rows:  # split on the bars that are not escaped
        assert len(re.split(r"(?<!\\)\|", row)) == 6, row
