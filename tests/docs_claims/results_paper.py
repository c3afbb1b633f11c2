"""The claims of docs/results.md: the first part of the paper's comparison."""

from __future__ import annotations

from .sources import (
    COMBO,
    LLM_SUITE,
    MT_SUITE,
    NUMBER,
    RES,
    SOFTMAX_HEADS,
    Claim,
    W,
    _page,
    _softmax_min_test,
    bound,
    cell,
    combo,
    holm_max,
    mt_model,
    paper,
    primary_seed_sd,
    sat,
    t,
    words,
)

PAPER_CLAIMS = [
    # the paper's comparison
    Claim(
        RES,
        "token freq + avoid +0.035 [+0.028, +0.042] on MT and +0.038 [+0.017, +0.058] on SmolLM2 (both Holm p < 0.001); token freq +0.030 (MT, Holm p < 0.001) and +0.026 (LLM, Holm p = 0.048). The heads trained with plain softmax negatives are below it in both (MT -0.057, LLM -0.059; with avoid -0.034 and -0.035; all Holm p <= 0.010)",
        lambda: [
            *paper("mt", "sigmoid:token_freq+avoid@prod", 4, 3),
            *paper("llm", "sigmoid:token_freq+avoid@prod", 4, 3),
            max(float(paper(s, "sigmoid:token_freq+avoid@prod", 5, 2)[1]) for s in ("mt", "llm")),
            *paper("mt", "sigmoid:token_freq@prod", 4),
            *paper("mt", "sigmoid:token_freq@prod", 5, 2)[1:],
            *paper("llm", "sigmoid:token_freq@prod", 4),
            *paper("llm", "sigmoid:token_freq@prod", 5, 2)[1:],
            *paper("mt", "sigmoid:softmax@prod", 4),
            *paper("llm", "sigmoid:softmax@prod", 4),
            *paper("mt", "sigmoid:softmax+avoid@prod", 4),
            *paper("llm", "sigmoid:softmax+avoid@prod", 4),
            max(
                float(paper(s, f"sigmoid:{h}@prod", 5, 2)[1])
                for s in ("mt", "llm")
                for h in ("softmax", "softmax+avoid")
            ),
        ],
    ),
    Claim(
        RES,
        "avoid +0.037 [-0.013, +0.089], Holm p = 1.000; random negatives below it, -0.101, Holm p = 0.032) or on SmolLM2 (token freq + avoid -0.040 [-0.167, +0.074], Holm p = 1.000; random -0.206, Holm p = 0.048)",
        lambda: (
            [
                x
                for s in ("mt", "llm")
                for x in (
                    *cell(RES, t(f"{s}_paper_self_test"), "sigmoid:token_freq+avoid@prod", 4),
                    *cell(
                        RES,
                        t(f"{s}_paper_self_test"),
                        "sigmoid:token_freq+avoid@prod",
                        5,
                        take=slice(1, 2),
                    ),
                    *cell(
                        RES, t(f"{s}_paper_self_test"), "sigmoid:random@prod", 4, take=slice(0, 1)
                    ),
                    *cell(
                        RES, t(f"{s}_paper_self_test"), "sigmoid:random@prod", 5, take=slice(1, 2)
                    ),
                )
            ]
        ),
    ),
    # why Eval Self is hard for the head (the saturation tables)
    Claim(
        RES,
        "On MT, 97.0% of the greedy tokens are in their position's dominant set, against 66.9%",
        lambda: [
            100 * float(x)
            for c in (2, 3)
            for x in sat(
                "mt_saturation_dev",
                "(model)",
                "share of tokens in their position's dominant set",
                c,
            )
        ],
    ),
    Claim(
        RES,
        "(0.867 and 0.864 for the paper's LLM setting, token freq + avoid)",
        lambda: [
            *sat(
                "mt_saturation_dev",
                "token_freq+avoid",
                "head probability on dominant tokens, mean",
                2,
            ),
            *sat(
                "mt_saturation_dev",
                "token_freq+avoid",
                "head probability on dominant tokens, mean",
                3,
            ),
        ],
    ),
    Claim(
        RES,
        "99.0% of the greedy tokens are dominant (86.9% of the reference tokens), and the paper head's probability is above 0.9 for 76.0% of the greedy tokens.",
        lambda: [
            *(
                100 * float(x)
                for c in (2, 3)
                for x in sat(
                    "llm_saturation_dev",
                    "(model)",
                    "share of tokens in their position's dominant set",
                    c,
                )
            ),
            0.9,
            100
            * float(
                sat(
                    "llm_saturation_dev",
                    "token_freq+avoid",
                    "share of tokens with head probability > 0.9",
                    2,
                )[0]
            ),
        ],
    ),
    Claim(
        RES,
        "falls from 0.626 to 0.204 at margin 0 (0.287 at margin 1) on MT greedy output, and from 0.760 to 0.594 (0.607) on",
        lambda: (
            [
                x
                for s in ("mt", "llm")
                for h in (
                    "token_freq+avoid",
                    "token_freq+avoid+rank_loss_m0",
                    "token_freq+avoid+rank_loss",
                )
                for x in sat(
                    f"{s}_saturation_dev", h, "share of tokens with head probability > 0.9", 2
                )
            ]
        ),
    ),
    # the combined score
    Claim(
        RES,
        "on SmolLM2 (0.818) for **all 11 heads**: the paper's setting 0.856, +0.037 [+0.029, +0.047]; the others +0.015 to +0.038; each Holm p < 0.001;",
        lambda: [
            *_softmax_min_test(),
            *combo("llm_suite_test", "token_freq+avoid", 2, slice(0, 1)),
            *combo("llm_suite_test", "token_freq+avoid", 3),
            *combo("llm_suite_test", "random", 3, slice(0, 1)),
            *combo("llm_suite_test", "token_freq", 3, slice(0, 1)),
            0.001,
        ],
    ),
    Claim(
        RES,
        "on MT (0.728) for 8 of 18 heads: the paper's setting 0.740, +0.012 [+0.006, +0.019], Holm p = 0.028; the rank-16 head +0.020 [+0.014, +0.027], Holm p < 0.001; the heads trained with softmax negatives at or below the baseline (-0.017 to +0.003).",
        lambda: [
            *cell(RES, MT_SUITE, "softmax@min", 1),
            *combo("mt_suite_test", "token_freq+avoid", 2, slice(0, 1)),
            *combo("mt_suite_test", "token_freq+avoid", 3),
            *combo("mt_suite_test", "token_freq+avoid", 4, slice(1, 2)),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 3),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 4, slice(1, 2)),
            min(float(combo("mt_suite_test", h, 3)[0]) for h in SOFTMAX_HEADS),
            max(float(combo("mt_suite_test", h, 3)[0]) for h in SOFTMAX_HEADS),
        ],
    ),
    Claim(
        RES,
        "with w = 0.10 on the head (dev 0.651 against 0.647 for the geo-mean alone)",
        lambda: [
            *W("generate"),
            *NUMBER.findall(_page(COMBO).split("## Eval Self", 1)[1].split("dev ", 1)[1])[:1],
            *NUMBER.findall(
                _page(COMBO)
                .split("## Eval Self", 1)[1]
                .split("on dev is `softmax_mean_log` (", 1)[1]
            )[:1],
        ],
    ),
    Claim(
        RES,
        "On MT the mean entropy alone (0.772) stays the better choice for a model's own output; on SmolLM2 it is not (0.485).",
        lambda: [
            *cell(RES, t("mt_eval_self_test"), "entropy@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "entropy@mean", 1),
        ],
    ),
    # "What survives the corrected tests on this model" (MT)
    Claim(
        RES,
        "every head, all 18 variants, is below the mean entropy (Holm p < 0.001)",
        lambda: bound(holm_max(RES, "mt_eval_self_test", "sigmoid:"), "0.001"),
    ),
    Claim(
        RES,
        "(softmax minimum 0.728; the paper's setting -0.050 [-0.064, -0.033], Holm p < 0.001; the closest, the rank-16 head, -0.022 [-0.037, -0.006], Holm p = 0.012)",
        lambda: [
            *cell(RES, MT_SUITE, "softmax@min", 1),
            *cell(RES, MT_SUITE, "sigmoid:token_freq+avoid@mean", 4),
            *cell(RES, MT_SUITE, "sigmoid:token_freq+avoid@mean", 5, take=slice(1, 2)),
            *cell(RES, MT_SUITE, "sigmoid:token_freq+avoid+low_rank16@mean", 4),
            *cell(RES, MT_SUITE, "sigmoid:token_freq+avoid+low_rank16@mean", 5, take=slice(1, 2)),
        ],
    ),
    Claim(RES, "dev suite (w = 0.70 on the head", lambda: W("score"), "setting"),
    Claim(
        RES,
        "they reproduce seed 0 (the SD across seeds is at most 0.001)",
        lambda: [primary_seed_sd()],
    ),
    Claim(
        RES,
        "(greedy test BLEU 24.35, chrF 44.29, against both references",
        lambda: [mt_model("test_greedy", "bleu"), mt_model("test_greedy", "chrf")],
    ),
    Claim(
        RES,
        "recorded test BLEU 24.35 and chrF 44.29, dev 24.17 and 44.74",
        lambda: [mt_model(f"{s}_greedy", m) for s in ("test", "dev") for m in ("bleu", "chrf")],
    ),
    Claim(
        RES,
        "the paper's setting 0.740, +0.012 [+0.006, +0.019], Holm p = 0.028; the rank-16 head 0.748, +0.020 [+0.014, +0.027], Holm p < 0.001; the ranking loss +0.007 at either margin (Holm p 0.064-0.084, not",
        lambda: [
            *combo("mt_suite_test", "token_freq+avoid", 2, slice(0, 1)),
            *combo("mt_suite_test", "token_freq+avoid", 3),
            *combo("mt_suite_test", "token_freq+avoid", 4, slice(1, 2)),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 2, slice(0, 1)),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 3),
            *combo("mt_suite_test", "token_freq+avoid+low_rank16", 4, slice(1, 2)),
            *combo("mt_suite_test", "token_freq+avoid+rank_loss", 3, slice(0, 1)),
            *combo("mt_suite_test", "token_freq+avoid+rank_loss_m0", 4, slice(1, 2)),
            *combo("mt_suite_test", "token_freq+avoid+rank_loss", 4, slice(1, 2)),
        ],
    ),
    Claim(
        RES,
        "Token freq + avoid (the paper's LLM setting): ROC-AUC 0.784 against 0.769, +0.016 [+0.011, +0.020], AP +0.041 [+0.032, +0.050]; the rank-16 head +0.033 [+0.029, +0.037] and +0.080 [+0.069, +0.089]; the untrained-prior head +0.013 and +0.026",
        lambda: [
            *words("mt", "sigmoid:token_freq+avoid", 3),
            *words("mt", "softmax", 3),
            *words("mt", "sigmoid:token_freq+avoid", 5, 3),
            *words("mt", "sigmoid:token_freq+avoid", 6, 3),
            *words("mt", "sigmoid:token_freq+avoid+low_rank16", 5, 3),
            *words("mt", "sigmoid:token_freq+avoid+low_rank16", 6, 3),
            *words("mt", "sigmoid:token_freq+avoid+untrained_prior", 5),
            *words("mt", "sigmoid:token_freq+avoid+untrained_prior", 6),
        ],
    ),
    # "What survives the corrected tests on SmolLM2"
    Claim(
        RES,
        "(dev 0.717; the mean entropy, MT's choice, is 0.613 here). On test every head is below it (0.625): the paper's setting 0.413, -0.212 [-0.325, -0.091]; the best head, softmax + avoid, 0.446, -0.179 [-0.303, -0.052], Holm p = 0.016;",
        lambda: [
            *cell(RES, t("llm_eval_self_dev"), "softmax@mean", 1),
            *cell(RES, t("llm_eval_self_dev"), "entropy@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "softmax@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:token_freq+avoid@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:token_freq+avoid@mean", 4),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:softmax+avoid@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:softmax+avoid@mean", 4),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:softmax+avoid@mean", 5, take=slice(1, 2)),
        ],
    ),
    Claim(
        RES,
        "BoostedProb's geo-mean (0.653) is not distinguishable from it (+0.028 [-0.042, +0.100]); the mean entropy is below it (0.485, Holm p < 0.001). The authors' ranking loss gives 0.337 at margin 0 and 0.338 at",
        lambda: [
            *cell(RES, t("llm_eval_self_test"), "boostedprob@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "boostedprob@mean", 4),
            *cell(RES, t("llm_eval_self_test"), "entropy@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "entropy@mean", 5, take=slice(1, 2)),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:token_freq+avoid+rank_loss_m0@mean", 1),
            *cell(RES, t("llm_eval_self_test"), "sigmoid:token_freq+avoid+rank_loss@mean", 1),
        ],
    ),
    Claim(
        RES, "(dev 0.868; BoostedProb's", lambda: cell(RES, t("llm_suite_dev"), "softmax@min", 1)
    ),
    Claim(
        RES,
        "on test (0.818): the paper's setting 0.805, -0.014 [-0.041, +0.013], Holm p = 1.000; smoothing 1 0.816, -0.003. The heads trained with softmax negatives (-0.048 to -0.088), random negatives (-0.057) and the ranking loss at either margin (margin 0 0.740, -0.078; margin 1 0.732, -0.086) are below it (Holm p <= 0.036)",
        lambda: [
            *cell(RES, LLM_SUITE, "softmax@min", 1),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid@mean", 1),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid@mean", 4),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid@mean", 5, take=slice(1, 2)),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq_smooth1+avoid@mean", 1),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq_smooth1+avoid@mean", 4, take=slice(0, 1)),
            max(
                float(cell(RES, LLM_SUITE, f"sigmoid:{h}@mean", 4)[0])
                for h in ("softmax", "softmax+avoid", "softmax_t2+avoid")
            ),
            min(
                float(cell(RES, LLM_SUITE, f"sigmoid:{h}@mean", 4)[0])
                for h in ("softmax", "softmax+avoid", "softmax_t2+avoid")
            ),
            *cell(RES, LLM_SUITE, "sigmoid:random@mean", 4, take=slice(0, 1)),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid+rank_loss_m0@mean", 1),
            *cell(
                RES, LLM_SUITE, "sigmoid:token_freq+avoid+rank_loss_m0@mean", 4, take=slice(0, 1)
            ),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid+rank_loss@mean", 1),
            *cell(RES, LLM_SUITE, "sigmoid:token_freq+avoid+rank_loss@mean", 4, take=slice(0, 1)),
            max(
                float(cell(RES, LLM_SUITE, f"sigmoid:{h}@mean", 5)[1])
                for h in (
                    "softmax",
                    "softmax+avoid",
                    "softmax_t2+avoid",
                    "random",
                    "token_freq+avoid+rank_loss",
                    "token_freq+avoid+rank_loss_m0",
                )
            ),
        ],
    ),
]
