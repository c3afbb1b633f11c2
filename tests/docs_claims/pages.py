"""The claims of every claim, by page (the lists of the sibling modules spread in)."""

from __future__ import annotations

from .labels58 import ISSUE58_CLAIMS
from .optim60 import ISSUE60_CLAIMS
from .results import RESULTS_CLAIMS
from .results_more import MORE_RESULTS_CLAIMS
from .self_study import SELF_CLAIMS
from .settings import SETTING_CLAIMS
from .sources import (
    DEMO_FULL,
    HQ,
    LLM_SUITE,
    NUMBER,
    RES,
    Claim,
    W,
    _default_prior,
    _softmax_min_test,
    at_least,
    at_most_apart,
    bound,
    cell,
    combo,
    data,
    demo,
    dominant_defaults,
    eval_self_gap,
    holm_max,
    hq_cell,
    human_qe,
    human_qe_pair,
    in_performance,
    ratio,
    rauq_alphas,
    requires_python,
    row,
    t,
    threshold_ps,
    vocab_cell,
    words,
)

_WMT_VARIANTS = "mlqe-roen-word: head variants, word MCC"
_MQM_VARIANTS = "mqm-ted-zhen: head variants, segment Pearson (mean log)"


def _variant(heading: str, head: str) -> list[str]:
    """Head, softmax, delta, its interval and the analytic Holm p of one head-variant row."""
    anchor = f"#### {heading}"
    return [*hq_cell(heading, head, 1, 2, 3), *cell(HQ, anchor, head, 4), *hq_cell(heading, head, 7)]


def _curve(point: str, col: int) -> list[str]:
    """The decimal figures of one cell of the learning-curve table's row ``point``."""
    return cell(HQ, "#### Learning curve", point, col)


_MEAN = "pe-all, mean of 3 seeds"
_SEG = "#### Learning curve, secondary: WMT segment Pearson"


def _seg(point: str, kind: str, col: int) -> list[str]:
    """Figures of one cell of the curve's secondary segment table (``kind``: its
    "compared" cell, "mean log, both" or "each side's best on dev")."""
    from .sources import NUMBER, _page

    text = _page(HQ)
    for line in text[text.index(_SEG):].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[:2] == [point, kind]:
            return NUMBER.findall(cells[col])
    raise AssertionError(f"no row {point} / {kind} in the secondary curve table")


def _combo28(col: int) -> list[str]:
    """Figures of the WMT segment row of the 28k head's combination table."""
    from .sources import NUMBER, _page

    text = _page(HQ)
    block = text[text.index(t("human-qe-analysis:combination-pe-all")):]
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[:2] == ["mlqe-roen-word", "segment pearson"]:
            return NUMBER.findall(cells[col])
    raise AssertionError("no WMT segment row in the 28k combination table")


def _combo28_word(col: int) -> list[str]:
    from .sources import NUMBER

    return NUMBER.findall(row(HQ, t("human-qe-analysis:combination-pe-all"), "mlqe-roen-word")[col])


_BEST = "each side's best on dev"
_GEN = "general-en"


def _licence_version() -> str:
    """The CC BY version the general English corpus's README names (its licence)."""
    import re

    from .sources import ROOT

    readme = ROOT / "recipes" / "human_qe" / "data" / "general-en" / "README.md"
    return re.search(r"\(CC BY (\d\.\d),", readme.read_text(encoding="utf-8"))[1]

CURVE_CLAIMS = [
    Claim(
        HQ,
        "on et-en the clean mixed head's word MCC is 0.198 against BoostedProb's 0.223 (0.022 below the softmax, Holm p 0.024), and on the MQM TED subset the clean one's segment Pearson is 0.059 against the softmax's 0.053 (+0.006 [-0.111, +0.103], analytic Holm p 1)",
        lambda: [
            _eten("labelled_roen_mix1", 2)[0], _eten("labelled_roen_mix1", 3)[0],
            f"{-float(_eten('labelled_roen_mix1', 4)[0]):.3f}", _eten("labelled_roen_mix1", 4)[3],
            *hq_cell(_MQM_VARIANTS, "labelled_roen_mix1", 1, 2),
            *_variant(_MQM_VARIANTS, "labelled_roen_mix1")[2:5],  # its Holm p of 1 has no decimal
        ],
    ),
    Claim(
        HQ,
        "The head's WMT word MCC rises from 0.209 at 2,000 pairs to 0.228 at 8,000 and to 0.243 at 28,115 (mean of three seeds, SD 0.001), against the softmax's 0.256; the paired gap shrinks from -0.047 to -0.028 to -0.013, and none of the three seeds at 28,115 pairs differs from the softmax (Holm p 0.432, 0.232 and 0.312).",
        lambda: [
            _curve("pe2k", 2)[0], _curve("pe8k", 2)[0], *_curve(_MEAN, 2), _curve("pe2k", 3)[0],
            _curve("pe8k", 3)[0], _curve(_MEAN, 3)[0], _curve("pe-all", 3)[3],
            _curve("pe-all_s1", 3)[3], _curve("pe-all_s2", 3)[3],
        ],
    ),
    Claim(
        HQ,
        "sizes, not a forecast. On the fixed MQM subset the head stays just below the softmax (segment Pearson 0.144 on average over the seeds against 0.157), and Mu-SHROOM's IoU does not move (0.342 against 0.342).",
        lambda: [_curve(_MEAN, 6)[0], _curve(_MEAN, 6)[2], _curve(_MEAN, 7)[0], _curve(_MEAN, 7)[2]],
    ),
    Claim(
        HQ,
        "the 28,115-pair head's Pearson with minus HTER on the WMT test is 0.450 against 0.392 (+0.058 [+0.019, +0.095], Holm p 0.032 over the table's 12 rows); the other two seeds give +0.052 (Holm p 0.084) and +0.058 (Holm p 0.032). As mean log-probabilities the gap is wider (0.399 against 0.275).",
        lambda: [
            *_seg("pe-all", _BEST, 2), *_seg("pe-all", _BEST, 3), *_seg("pe-all", _BEST, 4),
            *_seg("pe-all", _BEST, 6), _seg("pe-all_s1", _BEST, 4)[0], *_seg("pe-all_s1", _BEST, 6),
            _seg("pe-all_s2", _BEST, 4)[0], *_seg("pe-all_s2", _BEST, 6),
            *_seg("pe-all", "mean log, both", 2), *_seg("pe-all", "mean log, both", 3),
        ],
    ),
    Claim(
        HQ,
        "On the words it saw in training the head keeps the higher ROC-AUC (0.642 against 0.616 at 28,115 pairs, seed 0, not tested); on unseen words it stays below (0.738 against 0.809), but that gap narrows too, from 0.176 at 2,000 pairs to 0.071.",
        lambda: [
            vocab_cell(4, point="pe-all")[0], vocab_cell(5, point="pe-all")[0],
            vocab_cell(4, point="pe-all")[1], vocab_cell(5, point="pe-all")[1],
            f"{float(vocab_cell(5)[1]) - float(vocab_cell(4)[1]):.3f}",
            f"{float(vocab_cell(5, point='pe-all')[1]) - float(vocab_cell(4, point='pe-all')[1]):.3f}",
        ],
    ),
    Claim(
        HQ,
        "Its features lift the dev-fitted segment model on WMT ro-en from 0.405 to 0.467 (+0.062 [+0.034, +0.090], Holm p < 0.001); the word model is not distinguishable (+0.018, Holm p 0.258), nor is either model on the MQM subset.",
        lambda: [
            *_combo28(3), *_combo28(4), *_combo28(5), *_combo28(6), *_combo28(8),
            *_combo28_word(5), *_combo28_word(8),
        ],
    ),
    Claim(
        HQ,
        "the head's word-level gap to the softmax on WMT ro-en is no longer significant (-0.013 on average), and at segment level its features lift a dev-fitted quality model from 0.405 to 0.467 Pearson (Holm p < 0.001;",
        lambda: [_curve(_MEAN, 3)[0], *_combo28(3), *_combo28(4), *_combo28(8)],
    ),
    Claim(
        HQ,
        "million tokens of English textbook prose (24 times the page's head's tokens) scores word MCC 0.179 on WMT ro-en, below the page's head and 0.077 below the softmax (Holm p < 0.001; section",
        lambda: [_curve(_GEN, 2)[0], f"{-float(_curve(_GEN, 3)[0]):.3f}", _curve(_GEN, 3)[3]],
    ),
    Claim(
        HQ,
        "anatomy; CC BY 4.0, attribution and",
        lambda: [_licence_version()],
    ),
    Claim(
        HQ,
        "Its WMT ro-en word MCC is 0.179 against the softmax's 0.256 (-0.077 [-0.095, -0.059], Holm p < 0.001): below the 2,000-pair head's 0.209 and below the rule \"flag every MT word unseen in its training text\" on the same words (0.199). The seen-word edge that every post-edit head has is gone (ROC-AUC on seen words 0.596 against the softmax's 0.616; unseen 0.622 against 0.757). At segment level it equals the softmax (mean log-probability 0.276 against 0.275, Holm p 0.994; with each side's dev-best score 0.350 against BoostedProb's 0.392, Holm p 0.1); on the MQM subset 0.152 against 0.157, as the post-edit heads; on Mu-SHROOM IoU 0.346 against 0.342 with",
        lambda: [
            *_curve(_GEN, 2), *_curve(_GEN, 3), _curve("pe2k", 2)[0],
            *vocab_cell(2, point=_GEN), vocab_cell(4, point=_GEN)[0],
            vocab_cell(5, point=_GEN)[0], vocab_cell(4, point=_GEN)[1],
            vocab_cell(5, point=_GEN)[1], _seg(_GEN, "mean log, both", 2)[0],
            _seg(_GEN, "mean log, both", 3)[0], _seg(_GEN, "mean log, both", 6)[0],
            _seg(_GEN, _BEST, 2)[0], _seg(_GEN, _BEST, 3)[0], _seg(_GEN, _BEST, 6)[0],
            *_curve(_GEN, 6), *_curve(_GEN, 7),
        ],
    ),
    Claim(
        HQ,
        "the gap to the softmax shrinks from -0.047 at 2,000 pairs to -0.013 at 28,115, and its",
        lambda: [_curve("pe2k", 3)[0], _curve(_MEAN, 3)[0]],
    ),
]


def _eten(head: str, col: int) -> list[str]:
    """The decimal figures of one cell of the et-en labelled-head table's row ``head``."""
    return cell(HQ, "#### WMT 2021 et-en word tags", head, col)


LABELLED_CLAIMS = [
    Claim(
        HQ,
        "the clean ro-en tag head's word MCC is 0.188 and the unsupervised head's 0.168, against BoostedProb's 0.223; the tag head is 0.032 below the softmax (Holm p < 0.001)",
        lambda: [
            _eten("labelled_roen", 2)[0], _eten("prior001", 2)[0], _eten("labelled_roen", 3)[0],
            f"{-float(_eten('labelled_roen', 4)[0]):.3f}", _eten("labelled_roen", 4)[3],
        ],
    ),
    Claim(
        HQ,
        "its word MCC is 0.283 against the softmax's 0.256 (+0.027 [-0.003, +0.059], two-sided; analytic Holm p 0.086 over the three softmax-side baselines)",
        lambda: _variant(_WMT_VARIANTS, "labelled_roen"),
    ),
    Claim(
        HQ,
        "and 0.074 above the unsupervised head of this page (analytic Holm p 9.6e-11). Its word ROC-AUC is 0.719.",
        lambda: [
            f"{-float(hq_cell('mlqe-roen-word: the prior001 head against', 'labelled_roen', 1)[0]):.3f}",
            *[v for v in hq_cell("mlqe-roen-word: the prior001 head against", "labelled_roen", 5) if "." in v],
            *hq_cell(_WMT_VARIANTS, "labelled_roen", 9),
        ],
    ),
    Claim(
        HQ,
        "neither labelled head is above the softmax's segment Pearson of 0.053: the news MQM head (retrained on its clean split, issue 58) scores 0.014 (-0.039 [-0.191, +0.091], analytic Holm p = 1) and the clean ro-en tag head -0.054 (-0.107 [-0.232, -0.012], analytic Holm p = 0.18)",
        lambda: [
            *hq_cell(_MQM_VARIANTS, "labelled_gmt2023", 2),
            *[v for v in _variant(_MQM_VARIANTS, "labelled_gmt2023")[0:1]],
            *_variant(_MQM_VARIANTS, "labelled_gmt2023")[2:5],
            *[v for i, v in enumerate(_variant(_MQM_VARIANTS, "labelled_roen")) if i != 1],
        ],
    ),
]


CLAIMS: list[Claim] = [
    Claim(
        HQ,
        "Word MCC on WMT 2021 ro-en: head 0.209 vs softmax 0.256 (-0.047, two-sided Holm p < 0.001)",
        lambda: [
            human_qe("mlqe-roen-word", "word", "methods", "sigmoid", "mcc")[0],
            human_qe("mlqe-roen-word", "word", "methods", "softmax", "mcc")[0],
            *human_qe_pair("mlqe-roen-word", "softmax"),
        ],
    ),
    Claim(
        HQ,
        "segment Pearson of the mean log-probability: head 0.054 vs softmax 0.154 (-0.100, two-sided Holm p < 0.001; analytic Holm p 1.2e-6)",
        lambda: [
            human_qe("mqm-ted-zhen", "segment", "sigmoid_mean_log", "pearson")[0],
            human_qe("mqm-ted-zhen", "segment", "softmax_mean_log", "pearson")[0],
            *human_qe_pair("mqm-ted-zhen", "softmax_mean_log"),
            human_qe("mqm-ted-zhen", "paired", "softmax_mean_log")["p_holm_normal"],
        ],
    ),
    Claim(
        HQ,
        "At the word level its MCC is also below the softmax's (0.065 against 0.084)",
        lambda: [
            human_qe("mqm-ted-zhen", "word", "methods", m, "mcc")[0] for m in ("sigmoid", "softmax")
        ],
    ),
    Claim(
        HQ,
        "Mu-SHROOM English IoU: head 0.350 vs softmax 0.342 (+0.008, two-sided Holm p = 0.288)",
        lambda: [
            human_qe("mushroom-en", "shroom", "methods", "sigmoid", "iou")[0],
            human_qe("mushroom-en", "shroom", "methods", "softmax", "iou")[0],
            *human_qe_pair("mushroom-en", "softmax"),
        ],
    ),
    Claim(
        HQ,
        "the prior head's word MCC is 0.206 on average (SD 0.003 across seeds) against 0.099 (SD 0.002)",
        lambda: [
            *hq_cell("mlqe-roen-word: seeds", "prior001", 3, 4),
            *hq_cell("mlqe-roen-word: seeds", "paper", 3, 4),
        ],
    ),
    Claim(
        HQ,
        "seed-0 heads differ by +0.113 (Holm",
        lambda: hq_cell("mlqe-roen-word: the prior001 head against", "paper", 1),
    ),
    Claim(
        HQ,
        "three seeds each, mean segment Pearson -0.028 (prior) against -0.011 (paper), mean IoU 0.350 against 0.342, and the seed-0 prior head against each paper seed has an analytic Holm p of 0.8 or more",
        lambda: [
            *hq_cell("mqm-ted-zhen: seeds", "prior001", 3),
            *hq_cell("mqm-ted-zhen: seeds", "paper", 3),
            *hq_cell("mushroom-en: seeds", "prior001", 3),
            *hq_cell("mushroom-en: seeds", "paper", 3),
            at_least(
                min(
                    float(hq_cell(f"{s}: the prior001 head against", v, 5)[0])
                    for s in ("mqm-ted-zhen", "mushroom-en")
                    for v in ("paper", "paper_s1", "paper_s2")
                ),
                "0.8",
            ),
        ],
    ),
    Claim(
        HQ,
        "(0.071 below the prior head in word MCC",
        lambda: [abs(float(hq_cell("mlqe-roen-word: the prior001 head against", "smooth1", 1)[0]))],
    ),
    Claim(
        HQ,
        "SD 0.003 against a half-width of 0.018 (WMT word MCC), 0.017 against 0.135 (MQM Pearson, first 500 segments), 0.002 against 0.031 (Mu-SHROOM IoU)",
        lambda: [
            *hq_cell("mlqe-roen-word: seeds", "prior001", 4, 6),
            *hq_cell("mqm-ted-zhen: seeds", "prior001", 4, 6),
            *hq_cell("mushroom-en: seeds", "prior001", 4, 6),
        ],
    ),
    Claim(
        HQ,
        "(seed 0 against seed 1: +0.006, bootstrap p 0.046, analytic Holm p 0.19",
        lambda: hq_cell("mlqe-roen-word: the prior001 head against", "prior001_s1", 1, 3, 5),
    ),
    Claim(
        HQ,
        "the head is below the softmax in each talk (talk.2: 0.020 against 0.133, talk.6: 0.113 against 0.203, talk.9: 0.032 against 0.169",
        lambda: [
            NUMBER.findall(row(HQ, t("human-qe-talks:mqm-ted-zhen"), talk)[c])[0]
            for talk in ("talk.2", "talk.6", "talk.9")
            for c in (2, 3)
        ],
    ),
    Claim(
        HQ,
        'the head\'s IoU, 0.350, is that of the no-model "mark all" reference, 0.349, within a thousandth',
        lambda: [
            human_qe("mushroom-en", "shroom", "methods", "sigmoid", "iou")[0],
            at_most_apart(
                human_qe("mushroom-en", "shroom", "methods", "sigmoid", "iou")[0],
                human_qe("mushroom-en", "shroom", "reference", "mark all", "iou")[0],
                0.001,
            ),
        ],
    ),
    Claim(
        HQ,
        "BoostedProb reaches IoU 0.354 by flagging 97% of the test words, above the head's 0.349 (55%) and the softmax's 0.340 (43%)",
        lambda: [
            human_qe("mushroom-en", "shroom", "uncapped", m, "iou")
            for m in ("boostedprob", "sigmoid", "softmax")
        ],
    ),
    Claim(
        HQ,
        "it runs from 0.014 to 0.846",
        lambda: [min(threshold_ps()), max(threshold_ps())],
    ),
    Claim(
        HQ,
        "gives word MCC 0.217 against the head's 0.209. Among the words seen in training the head ranks BAD words about as well as the softmax (ROC-AUC 0.574 against 0.587); among the unseen words the softmax does much better (0.570 against 0.746)",
        lambda: [
            *vocab_cell(2, 3),
            vocab_cell(4)[0],
            vocab_cell(5)[0],
            vocab_cell(4)[1],
            vocab_cell(5)[1],
        ],
    ),
    # README.md
    Claim(
        "README.md",
        "(token_freq+avoid: +0.037 ROC-AUC)",
        lambda: combo("llm_suite_test", "token_freq+avoid", 3, slice(0, 1)),
    ),
    Claim(
        "README.md",
        "8 of 18 MT heads (token_freq+avoid: +0.012)",
        lambda: combo("mt_suite_test", "token_freq+avoid", 3, slice(0, 1)),
    ),
    Claim(
        "README.md",
        "gives the head a weight of 0.10 and stays within 0.02 of the softmax geo-mean",
        lambda: [*W("generate"), *bound(eval_self_gap(), "0.02")],
    ),
    Claim(
        "README.md",
        "MT token_freq+avoid +0.016, SmolLM2 token_freq_smooth1+avoid +0.031",
        lambda: [
            *words("mt", "sigmoid:token_freq+avoid", 5),
            *words("llm", "sigmoid:token_freq_smooth1+avoid", 5),
        ],
    ),
    Claim(
        "README.md",
        "on human WMT ro-en word tags the softmax's is better (word MCC 0.256 against the head's 0.209)",
        lambda: [
            human_qe("mlqe-roen-word", "word", "methods", "softmax", "mcc")[0],
            human_qe("mlqe-roen-word", "word", "methods", "sigmoid", "mcc")[0],
        ],
    ),
    Claim(
        "README.md",
        "`score` uses w = 0.70 with the softmax's weakest token, `rerank` w = 0.75 with the same, `generate` w = 0.10",
        lambda: [*W("score"), *W("rerank"), *W("generate")],
        "setting",
    ),
    Claim("README.md", "Python >= 3.10.", requires_python, "setting"),
    # docs/demo.md
    Claim(
        "docs/demo.md",
        "when `score`'s combined default was 0.75 x head + 0.25 x the softmax's weakest token; since then it is 0.70 / 0.30, which ties with 0.75",
        lambda: ["0.75", "0.25", *W("score"), 1 - W("score")[0], "0.75"],
        "setting",
    ),  # the former default, as its commit set it
    Claim("docs/demo.md", "It has the highest ROC-AUC here, 0.946.", lambda: [demo("combined")]),
    Claim(
        "docs/demo.md",
        "(BoostedProb's product; 0.921 on test) its gain is +0.024 [-0.001, +0.050], two-sided p = 0.058 (verses resampled, one comparison, uncorrected): not significant at the two-sided 0.05 level",
        lambda: [
            demo("boostedprob"),
            *cell(RES, DEMO_FULL, "combined", 4),
            *cell(RES, DEMO_FULL, "combined", 5, take=slice(0, 1)),
            0.05,
        ],
    ),
    Claim(
        "docs/demo.md",
        "+0.008 [-0.022, +0.035] over BoostedProb (two-sided p = 0.618, verses resampled, one comparison, uncorrected)",
        lambda: [
            *cell(RES, DEMO_FULL, "combined_dev", 4),
            *cell(RES, DEMO_FULL, "combined_dev", 5, take=slice(0, 1)),
        ],
    ),
    Claim(
        "docs/demo.md",
        "(0.793 product, 0.819 geo-mean)",
        lambda: [demo("sigmoid"), demo("sigmoid_geo")],
    ),
    Claim(
        "docs/demo.md",
        "(0.946 against 0.819 and 0.882)",
        lambda: [demo("combined"), demo("sigmoid_geo"), demo("softmax_min")],
    ),
    Claim(
        "docs/demo.md",
        "the head's BCE drops from 4.411 to 0.559 (Platt) or 0.589 (isotonic)",
        lambda: [demo(m, "bce") for m in ("sigmoid", "sigmoid_platt", "sigmoid_isotonic")],
    ),
    Claim(
        "docs/demo.md",
        "(0.816 ROC-AUC against 0.805 for token_freq+avoid",
        lambda: [
            *cell(RES, LLM_SUITE, "sigmoid:token_freq_smooth1+avoid@mean", 1),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid@mean", 1),
        ],
    ),
    Claim(
        "docs/demo.md",
        "(+0.031 word-level ROC-AUC",
        lambda: words("llm", "sigmoid:token_freq_smooth1+avoid", 5),
    ),
    # docs/explain.md
    Claim(
        "docs/explain.md",
        "| softmax | 0.334 | | | 5.391 | | |",
        lambda: [demo("softmax", "ece"), demo("softmax", "bce")],
    ),
    Claim(
        "docs/explain.md",
        "| boostedprob | 0.334 | | | 5.114 | | |",
        lambda: [demo("boostedprob", "ece"), demo("boostedprob", "bce")],
    ),
    Claim(
        "docs/explain.md",
        "| sigmoid | 0.330 | 0.127 | 0.140 | 4.411 | 0.559 | 0.589 |",
        lambda: [
            demo(m, k)
            for k in ("ece", "bce")
            for m in ("sigmoid", "sigmoid_platt", "sigmoid_isotonic")
        ],
    ),
    Claim(
        "docs/explain.md",
        "cuts the head's ECE by 2.4x to 2.6x and its BCE by 7.5x to 7.9x",
        lambda: [
            ratio(demo("sigmoid", k), demo(m, k))
            for k in ("ece", "bce")
            for m in sorted(("sigmoid_platt", "sigmoid_isotonic"), key=lambda m, k=k: -demo(m, k))
        ],
    ),
    Claim(
        "docs/explain.md",
        "(sigmoid: 0.753 against 0.793)",
        lambda: [demo("sigmoid_isotonic"), demo("sigmoid")],
    ),
    Claim(
        "docs/explain.md",
        "(`sigmoid_geo_mean`) ECE 0.051 and BCE 0.481",
        lambda: [demo("sigmoid_geo", "ece"), demo("sigmoid_geo", "bce")],
    ),
    Claim(
        "docs/explain.md",
        "BoostedProb's geometric mean has ECE 0.141 and BCE 0.421",
        lambda: [demo("boostedprob_geo", "ece"), demo("boostedprob_geo", "bce")],
    ),
    Claim(
        "docs/explain.md",
        "(ROC-AUC 0.793 against 0.884)",
        lambda: [demo("sigmoid"), demo("softmax")],
    ),
    Claim(
        "docs/explain.md",
        "fitted by `sigmoid-head calibrate --gold-spans`, else 0.5.",
        lambda: [0.5],
        "setting",
    ),
    Claim("docs/explain.md", "At the default cut of 0.5", lambda: [0.5], "setting"),
    Claim("docs/explain.md", "The cut of 0.05 was set before the run", lambda: [0.05], "setting"),
    Claim(
        "docs/explain.md",
        "| plain | 17.29 | 1.000 | | scored | 18.12 | 1.048 | | streamed | 17.37 | 1.005 |",
        lambda: [17.29, 1.0, 18.12, 18.12 / 17.29, 17.37, 17.37 / 17.29],
        "measured",
    ),
    Claim("docs/explain.md", "Median time to the first streamed token: 0.82 s.", None, "measured"),
    Claim("docs/explain.md", "(load average 5.8 to 6.2,", None, "measured"),
    # docs/scores.md
    Claim("docs/scores.md", "| `score` (Eval Other) | 0.70 |", lambda: W("score"), "setting"),
    Claim("docs/scores.md", "| `generate` (Eval Self) | 0.10 |", lambda: W("generate"), "setting"),
    Claim("docs/scores.md", "| `rerank` (best of N) | 0.75 |", lambda: W("rerank"), "setting"),
    Claim(
        "docs/scores.md",
        "(MT: mean entropy, 0.772 Pearson with chrF; SmolLM2: softmax geo-mean, 0.625; each head Holm p <= 0.016)",
        lambda: [
            *cell(RES, t("mt_eval_self_test"), "entropy@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "softmax@mean", 1),
            max(
                holm_max(RES, "mt_eval_self_test", "sigmoid:"),
                holm_max(RES, "llm_eval_self_test", "sigmoid:"),
            ),
        ],
    ),
    Claim(
        "docs/scores.md",
        "`generate`'s mix (0.10 on the head) stays within 0.02 of the softmax geo-mean alone",
        lambda: [*W("generate"), *bound(eval_self_gap(), "0.02")],
    ),
    Claim(
        "docs/scores.md",
        "on SmolLM2 it is not (0.485)",
        lambda: cell(RES, t("llm_eval_self_test"), "entropy@mean", 1),
    ),
    Claim(
        "docs/scores.md",
        "(token_freq+avoid 0.856 against 0.818, +0.037 [+0.029, +0.047], Holm p < 0.001)",
        lambda: [
            *combo("llm_suite_test", "token_freq+avoid", 2, slice(0, 1)),
            *_softmax_min_test(),
            *combo("llm_suite_test", "token_freq+avoid", 3),
            *combo("llm_suite_test", "token_freq+avoid", 4, slice(1, 2)),
        ],
    ),
    Claim(
        "docs/scores.md",
        "(token_freq+avoid 0.740 against 0.728, +0.012 [+0.006, +0.019], Holm p = 0.028; the rank-16 head, `--head-rank 16`, +0.020)",
        lambda: [
            *combo("mt_suite_test", "token_freq+avoid", 2, slice(0, 1)),
            *cell(RES, t("mt_suite_test"), "softmax@min", 1),
            *combo("mt_suite_test", "token_freq+avoid", 3),
            *combo("mt_suite_test", "token_freq+avoid", 4, slice(1, 2)),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 3, slice(0, 1)),
        ],
    ),
    Claim(
        "docs/scores.md",
        "(token_freq+avoid 0.784 against 0.769, +0.016 [+0.011, +0.020]; the rank-16 head +0.033)",
        lambda: [
            *words("mt", "sigmoid:token_freq+avoid", 3),
            *words("mt", "softmax", 3),
            *words("mt", "sigmoid:token_freq+avoid", 5, 3),
            *words("mt", "sigmoid:token_freq+avoid+low_rank16", 5),
        ],
    ),
    Claim(
        "docs/scores.md",
        "(softmax_t2+token_freq+avoid +0.022, token_freq_smooth1+avoid +0.031; token_freq+avoid in AP only, +0.034)",
        lambda: [
            *words("llm", "sigmoid:softmax_t2+token_freq+avoid", 5),
            *words("llm", "sigmoid:token_freq_smooth1+avoid", 5),
            *words("llm", "sigmoid:token_freq+avoid", 6),
        ],
    ),
    Claim("docs/scores.md", "(p below 0.01)", lambda: [2 / data("llm_words_test")["n_boot"]]),
    Claim(
        "docs/scores.md",
        "is below the softmax on MT (-0.009)",
        lambda: words("mt", "sigmoid:softmax_t2+token_freq+avoid", 5),
    ),
    # docs/training.md, docs/usage.md
    Claim(
        "docs/training.md",
        '"difference_jump" (p_jump 0.3, epsilon 0.005, last cut)',
        dominant_defaults,
        "setting",
    ),
    Claim(
        "docs/training.md", "8.5 bytes per example", lambda: in_performance("8.5 bytes"), "measured"
    ),
    Claim(
        "docs/usage.md",
        "(default 0.2, or 0.5 for an instruction-tuned model, as LM-Polygraph's)",
        rauq_alphas,
        "setting",
    ),
    Claim(
        "docs/usage.md",
        "computation measured 0.1-0.2% of the pass",
        lambda: in_performance("0.1-0.2%"),
        "measured",
    ),
    Claim(
        "docs/usage.md",
        "softmax minimum in log space, w = 0.75, or the head folder's",
        lambda: W("rerank"),
        "setting",
    ),
    *RESULTS_CLAIMS,
    *MORE_RESULTS_CLAIMS,
    *SELF_CLAIMS,
    *SETTING_CLAIMS,
    Claim(
        "docs/training.md",
        "get a constant head probability of 0.01 on a full head",
        lambda: [_default_prior()],
        "setting",
    ),
    Claim(
        "docs/usage.md",
        "0.01 on a full head; 0 is the paper's setting",
        lambda: [_default_prior()],
        "setting",
    ),
    *LABELLED_CLAIMS,
    *CURVE_CLAIMS,
    *ISSUE58_CLAIMS,
    *ISSUE60_CLAIMS,
]
