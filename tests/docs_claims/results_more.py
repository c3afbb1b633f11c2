"""The claims of docs/results.md: the sections after the rebuilt tables."""

from __future__ import annotations

from .sources import (
    COMBO,
    ES,
    HEAD_ONLY,
    NUMBER,
    PRIOR_ONLY,
    RES,
    RR_LLM,
    RR_MT,
    Claim,
    W,
    _page,
    _rows,
    bound,
    cell,
    combination_dev_curve,
    combo,
    data,
    eval_self_gap,
    grid_step,
    holm,
    holm_max,
    holm_of,
    remedy,
    rerank,
    rr,
    same,
    sample_temperature,
    says,
    t,
    tab,
)

MORE_RESULTS_CLAIMS = [
    # MT Eval Self
    Claim(
        RES,
        "is below the mean token entropy (0.772; Holm p < 0.001 for each of the 22 comparisons). The closest is the head trained with negatives from the softmax (0.667, -0.104 [-0.161, -0.051]); the paper's main setting (token freq + avoid) is at 0.534 (-0.237 [-0.321, -0.156]). The authors' ranking loss at their margin 0 gives 0.583 (-0.189 [-0.264, -0.112]) and at margin 1 0.599 (-0.173 [-0.243, -0.104]); the two are not tested against each other. The untrained prior is at 0.496 against 0.534 for the same head",
        lambda: [
            *tab(ES, "entropy@mean", 1),
            *bound(holm_max(RES, ES, ""), "0.001"),
            max(float(c[1]) for k, c in _rows(ES).items() if k.startswith("sigmoid:")),
            *tab(ES, "sigmoid:softmax@mean", 4, 3),
            *tab(ES, "sigmoid:token_freq+avoid@mean", 1),
            *tab(ES, "sigmoid:token_freq+avoid@mean", 4, 3),
            *tab(ES, "sigmoid:token_freq+avoid+rank_loss_m0@mean", 1),
            *tab(ES, "sigmoid:token_freq+avoid+rank_loss_m0@mean", 4, 3),
            *tab(ES, "sigmoid:token_freq+avoid+rank_loss@mean", 1),
            *tab(ES, "sigmoid:token_freq+avoid+rank_loss@mean", 4, 3),
            *tab(ES, "sigmoid:token_freq+avoid+untrained_prior@mean", 1),
            *tab(ES, "sigmoid:token_freq+avoid@mean", 1),
        ],
    ),
    Claim(
        RES,
        "MCC and F1-BAD at word probability < 0.5, ROC-AUC",
        lambda: same(data("mt_words_test")["threshold"], data("llm_words_test")["threshold"]),
        "setting",
    ),
    Claim(
        RES,
        "its error-kind suite on 150 test verses took 13.5 min",
        lambda: says("llm_paper_suite_test", "(13.5 min"),
        "measured",
    ),
    Claim(
        RES,
        "-0.052], Holm p = 0.016; the others Holm p < 0.001.",
        lambda: [
            *tab("llm_eval_self_test", "sigmoid:softmax+avoid@mean", 4, 1, 2),
            *holm("llm_eval_self_test", "sigmoid:softmax+avoid@mean"),
            *bound(
                max(
                    float(holm("llm_eval_self_test", k)[0])
                    for k in _rows("llm_eval_self_test")
                    if k.startswith("sigmoid:") and k != "sigmoid:softmax+avoid@mean"
                ),
                "0.001",
            ),
        ],
    ),
    Claim(
        RES,
        "the paper head's share of tokens with probability above 0.9 falls from",
        lambda: says("mt_saturation_dev", "share of tokens with head probability > 0.9")[-1:],
    ),
    # the combined score
    Claim(RES, "each run counting once; grid of 0.05)", grid_step, "setting"),
    Claim(
        RES,
        "the softmax minimum as the baseline and w = 0.70 on the head (dev 0.815, averaged over the two settings; 0.75, the default before this rebuild, gives 0.8149 against 0.8150).",
        lambda: [
            *W("score"),
            *NUMBER.findall(_page(COMBO).split("## Eval Other", 1)[1].split("dev ", 1)[1])[:1],
            0.75,
            combination_dev_curve(0.75),
            combination_dev_curve(W("score")[0]),
        ],
    ),
    Claim(
        RES,
        "On the test books the mix is within 0.02 of the geo-mean alone for every head: on SmolLM2 no difference survives Holm (the paper's setting +0.001 [-0.007, +0.011]); on MT three heads are above it (the head trained with plain softmax negatives, +0.014, and the ranking-loss heads at either margin, +0.009; Holm p < 0.001), the paper's setting is not (+0.001, Holm p = 1.000), and the authors' settings are below it by 0.001 (Holm p < 0.001).",
        lambda: [
            *bound(eval_self_gap(), "0.02"),
            *combo("llm:llm_eval_self", "token_freq+avoid", 3),
            *combo("mt:mt_eval_self", "softmax", 3, slice(0, 1)),
            *same(
                *combo("mt:mt_eval_self", "token_freq+avoid+rank_loss", 3, slice(0, 1)),
                *combo("mt:mt_eval_self", "token_freq+avoid+rank_loss_m0", 3, slice(0, 1)),
            ),
            *bound(
                max(
                    float(combo("mt:mt_eval_self", h, 4, slice(1, 2))[0])
                    for h in (
                        "softmax",
                        "token_freq+avoid+rank_loss",
                        "token_freq+avoid+rank_loss_m0",
                    )
                ),
                "0.001",
            ),
            *combo("mt:mt_eval_self", "token_freq+avoid", 3, slice(0, 1)),
            *combo("mt:mt_eval_self", "token_freq+avoid", 4, slice(1, 2)),
            -float(combo("mt:mt_eval_self", "authors_settings", 3, slice(0, 1))[0]),
            *bound(float(combo("mt:mt_eval_self", "authors_settings", 4, slice(1, 2))[0]), "0.001"),
        ],
    ),
    # text made of tokens the head never trained on
    Claim(
        RES,
        "with p = 0.01 the head ranks every test reference above its own gibberish (pairwise accuracy 1.000, from 0.237), with no detectable change on the demo's negatives (+0.002 [-0.022, +0.025], Holm p = 0.930).",
        lambda: [
            *says("untrained_rows", "prior 0.01 **(dev choice)**"),
            *cell(RES, t("untrained_rows"), "head, prior 0.01 **(dev choice)**", 6),
            *cell(RES, t("untrained_rows"), "head, paper", 6),
            *remedy("prior 0.01, references vs next verse + word swap"),
        ],
    ),
    # best-of-N reranking and guided decoding
    Claim(
        RES,
        "the greedy output and 6 samples at temperature 0.8 (seed 0)",
        sample_temperature,
        "setting",
    ),
    Claim(
        RES,
        "among w in {0.5, 1, 2} and the two heads",
        lambda: same(*(says(n, "among weights 0.5,1,2")[0] for n in (RR_MT, RR_LLM))),
        "setting",
    ),
    Claim(
        RES,
        "the paper's setting and the prior 0.01; 50 dev and 50 test verses",
        lambda: says(RR_LLM, "heads paper, prior 0.01"),
        "setting",
    ),
    Claim(
        RES,
        "BoostedProb geo-mean (-0.005 to -0.013 chrF), significantly after Holm for the minima of both heads and the prior head's product (Holm p <= 0.026), not for the others (Holm p 0.066-0.384); the combined score (`rerank`'s default mix, 0.75 head + 0.25 softmax minimum) is +0.002 [-0.004, +0.008], Holm p = 1.000. The dev choice was not the test's best softmax-side score: the softmax geo-mean is +0.005 [+0.001, +0.010] above it (Holm p = 0.048). In the LLM setting the paper's head picks at the level of a random candidate (0.289-0.342 against random 0.297; Holm p < 0.001 below the baseline)",
        lambda: [
            max(float(rr(RR_MT, h, 4)[0]) for h in HEAD_ONLY + PRIOR_ONLY),
            min(float(rr(RR_MT, h, 4)[0]) for h in HEAD_ONLY + PRIOR_ONLY),
            holm_of(RR_MT, ("sigmoid_min", "prior 0.01: sigmoid_min", "prior 0.01: sigmoid")),
            holm_of(RR_MT, ("sigmoid", "sigmoid_mean_log", "prior 0.01: sigmoid_mean_log"), min),
            holm_of(RR_MT, ("sigmoid", "sigmoid_mean_log", "prior 0.01: sigmoid_mean_log")),
            *W("rerank"),
            1 - W("rerank")[0],
            *rr(RR_MT, "combined", 4, 3),
            *holm(RR_MT, "combined"),
            *rr(RR_MT, "softmax_mean_log", 4, 3),
            *holm(RR_MT, "softmax_mean_log"),
            min(float(rr(RR_LLM, h, 1)[0]) for h in HEAD_ONLY),
            max(float(rr(RR_LLM, h, 1)[0]) for h in HEAD_ONLY),
            *rr(RR_LLM, "random", 1),
            *bound(holm_of(RR_LLM, HEAD_ONLY), "0.001"),
        ],
    ),
    Claim(
        RES,
        "(geo-mean 0.409 against 0.289 on the same candidates; not tested against each other) but they stay below the baseline (-0.051 [-0.095, -0.010], Holm p = 0.154). The combined score is the best row in the LLM table (+0.010 [-0.003, +0.029] with the paper's head, +0.010 [-0.014, +0.031] with the prior's; Holm p = 1.000)",
        lambda: [
            *rr(RR_LLM, "prior 0.01: sigmoid_mean_log", 1),
            *rr(RR_LLM, "sigmoid_mean_log", 1),
            *rr(RR_LLM, "prior 0.01: sigmoid_mean_log", 4, 3),
            *holm(RR_LLM, "prior 0.01: sigmoid_mean_log"),
            *rr(RR_LLM, "combined", 4, 3),
            *rr(RR_LLM, "prior 0.01: combined", 4, 3),
            holm_of(RR_LLM, ("combined", "prior 0.01: combined")),
        ],
    ),
    Claim(
        RES,
        "(MT 0.30 against 0.37; LLM 0.08, prior 0.33, against 0.39)",
        lambda: [
            rerank(RR_MT)["sigmoid_mean_log"]["tau"],
            rerank(RR_MT)["softmax_mean_log"]["tau"],
            rerank(RR_LLM)["sigmoid_mean_log"]["tau"],
            rerank(RR_LLM)["prior 0.01:sigmoid_mean_log"]["tau"],
            rerank(RR_LLM)["softmax_mean_log"]["tau"],
        ],
    ),
    Claim(
        RES,
        "Dev chose the paper's head, at w = 0.5 for the LLM (dev 0.416 against plain greedy 0.382) and w = 1 for MT (dev 0.429 against greedy 0.432: no weight beat plain greedy on MT dev); on test it is 0.423 against greedy 0.451 (LLM, -0.037 against the baseline, Holm p = 0.740) and 0.459 against 0.461 (MT, Holm p = 1.000). Its cost per generated token: 0.99x plain greedy on SmolLM2 (the head's product is small beside a 135M model's step) and 1.30x on the",
        lambda: [
            *says(RR_LLM, "(paper head, weight 0.5)"),
            *says(RR_LLM, "(dev mean chrF 0.416; plain greedy 0.382)"),
            *says(RR_MT, "(dev mean chrF 0.429; plain greedy 0.432)"),
            *rr(RR_LLM, "guided (paper, w=0.5)", 1),
            *rr(RR_LLM, "greedy", 1),
            *rr(RR_LLM, "guided (paper, w=0.5)", 4),
            *holm(RR_LLM, "guided (paper, w=0.5)"),
            *rr(RR_MT, "guided (paper, w=1)", 1),
            *rr(RR_MT, "greedy", 1),
            *holm(RR_MT, "guided (paper, w=1)"),
            *says(RR_LLM, "took 0.99x"),
            *says(RR_MT, "took 1.30x"),
        ],
    ),
    Claim(
        RES,
        "greedy output in both settings (0.02 or less), far from the oracle pick (0.492 MT, 0.495 LLM).",
        lambda: [
            *bound(
                max(
                    max(v["pick"] for k, v in rerank(n).items() if k not in ("oracle", "greedy"))
                    - rerank(n)["greedy"]["pick"]
                    for n in (RR_MT, RR_LLM)
                ),
                "0.02",
            ),
            rerank(RR_MT)["oracle"]["pick"],
            rerank(RR_LLM)["oracle"]["pick"],
        ],
    ),
    Claim(
        RES,
        "greedy 92.9% (MT) and 97.5% (LLM), sampled at temperature 0.8 78.2% and 78.1%",
        lambda: [
            100 * data(RR_MT)["dominant_share"]["greedy"],
            100 * data(RR_LLM)["dominant_share"]["greedy"],
            *sample_temperature(),
            100 * data(RR_MT)["dominant_share"]["sample@0.8"],
            100 * data(RR_LLM)["dominant_share"]["sample@0.8"],
        ],
    ),
]
