"""The accelerator path (fixed shapes, budget-sized slices) equals the CPU path.

The fixed-shape path is forced on a CPU with ``device_profile("cuda")``, so these run
everywhere; with a CUDA device present the ``device`` fixture also runs them there.
"""

import ast
import importlib
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
from test_dominant import KINDS, _distribution
from test_negatives import _chi2_ok
from test_scoring_generate import DECODINGS, _assert_same_as_force_decoding, _prompts

from sigmoid_head.lm import profiles
from sigmoid_head.lm.dominant import (
    DominantConfig,
    dominant_from_hidden,
    find_dominant,
    log_softmax_and_dominant,
)
from sigmoid_head.lm.profiles import device_profile, logit_rows, slice_rows
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig

STRATEGIES = ["random", "token_freq", "softmax", "token_freq+softmax", "random+softmax+token_freq"]
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _sets(dom) -> list[set[int]]:
    return [set(dom.top_ids[n, : dom.n_dominant[n]].tolist()) for n in range(dom.n_dominant.numel())]


def _peaked_counts(v: int) -> torch.Tensor:
    """Token counts where a dozen tokens dominate: k distinct draws need several rounds."""
    counts = torch.zeros(v, dtype=torch.float64)
    counts[:12] = 1e4
    counts[12:500] = 1.0
    return counts


@pytest.mark.parametrize("cut", ["last", "first"])
def test_fixed_shape_sets_equal_the_cpu_path(device, cut):
    gen = torch.Generator().manual_seed(3)
    cfg = DominantConfig(cut=cut)
    for kind in KINDS:
        lp = _distribution(kind, 32, 5000, gen)
        want = _sets(find_dominant(lp, cfg, fixed_shape=False))
        got = find_dominant(lp.to(device), cfg, fixed_shape=True)
        assert got.top_ids.shape == (32, cfg.topk(5000))  # the fixed cap, no host read
        assert _sets(got) == want, kind


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_profiles_draw_identical_negatives(strategy):
    v, n = 3000, 400
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(n, v, generator=gen) * 3
    z[:, :3] += 10
    targets = torch.randint(0, v, (n,), generator=gen)
    out = {}
    for profile in ("cpu", "cuda"):
        with device_profile(profile):
            logp, dom = log_softmax_and_dominant(z.clone())
            sampler = NegativeSampler(SamplerConfig(strategy), v, _peaked_counts(v))
            out[profile] = dom, sampler(targets, torch.Generator().manual_seed(1), dom, logp)
    (dom_c, neg_c), (dom_f, neg_f) = out["cpu"], out["cuda"]
    assert dom_f.shape[1] == DominantConfig().topk(v) and dom_c.shape[1] < dom_f.shape[1]
    assert torch.equal(dom_f[:, : dom_c.shape[1]], dom_c)
    assert bool((dom_f[:, dom_c.shape[1] :] == -1).all())
    assert torch.equal(neg_c, neg_f)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sampler_guarantees_on_device(device, strategy):
    v, n = 3000, 300
    gen = torch.Generator().manual_seed(5)
    z = (torch.randn(n, v, generator=gen) * 3).to(device)
    z[:, :2] += 9
    targets = torch.randint(0, v, (n,), generator=gen).to(device)
    with device_profile("cuda"):
        logp, dom = log_softmax_and_dominant(z)
        sampler = NegativeSampler(SamplerConfig(strategy), v, _peaked_counts(v).to(device))
        neg = sampler(targets, torch.Generator(device=device).manual_seed(2), dom, logp)
    assert neg.shape == (n, 10) and neg.device.type == torch.device(device).type
    neg, dom, targets = neg.cpu(), dom.cpu(), targets.cpu()
    assert bool(((neg >= 0) & (neg < v)).all())
    assert not bool((neg == targets[:, None]).any())
    assert not bool((neg.unsqueeze(-1) == dom.unsqueeze(1)).any())
    assert all(len(set(row.tolist())) == 10 for row in neg)


def test_fixed_shape_softmax_sampler_follows_the_tempered_distribution(device):
    # 700 ids: two full 256-wide blocks and a padded tail block (the binary search path)
    n, v = 30000, 700
    logits = torch.randn(1, v, generator=torch.Generator().manual_seed(5)).repeat(n, 1)
    targets = torch.full((n,), 300)
    dom = torch.tensor([[10, 600, -1]]).repeat(n, 1)
    cfg = SamplerConfig("softmax", num_negatives=1, softmax_temperature=2.0)
    with device_profile("cuda"):
        neg = NegativeSampler(cfg, v)(targets.to(device), torch.Generator(device=device).manual_seed(0),
                                      dom.to(device), logits.to(device))
    expected = torch.softmax(logits[0] / 2.0, -1).double()
    expected[[300, 10, 600]] = 0.0
    assert _chi2_ok(torch.bincount(neg[:, 0].cpu(), minlength=v).double(), expected)


def test_fixed_shape_token_freq_follows_counts(device):
    counts = torch.tensor([0.0, 1.0, 4.0, 16.0, 2.0] + [0.0] * 5, dtype=torch.float64)
    cfg = SamplerConfig("token_freq", num_negatives=1, avoid_dominant=False)
    with device_profile("cuda"):
        neg = NegativeSampler(cfg, 10, counts.to(device))(
            torch.full((20000,), 9, device=device), torch.Generator(device=device).manual_seed(0))
    assert _chi2_ok(torch.bincount(neg[:, 0].cpu(), minlength=10).double(), counts)


def _crowded(n: int, v: int, over: int, gen: torch.Generator) -> torch.Tensor:
    """(n, v) log-probs: ``over`` near-equal tokens share all but ~1e-4 of the mass."""
    p = torch.rand(n, v, generator=gen, dtype=torch.float64)
    top = (1 - 1e-4) / over * (1 - 1e-4 * p[:, :over])  # each > epsilon = 0.005 for over <= 199
    p[:, over:] *= (1 - top.sum(1, keepdim=True)) / p[:, over:].sum(1, keepdim=True)
    p[:, :over] = top
    return p.log().float()[:, torch.randperm(v, generator=gen)]


def _uncapped_sets(lp: torch.Tensor, cfg: DominantConfig) -> list[set[int]]:
    """The rule on a full descending sort of the whole vocabulary (no top-k at all)."""
    p, ids = lp.exp().sort(-1, descending=True)
    diff = p[:, :-1] - p[:, 1:]
    drop = (diff > cfg.p_jump * p[:, :-1]) & (diff > cfg.epsilon)
    last = torch.where(drop, torch.arange(drop.shape[1]), -1).amax(-1)
    return [set(ids[n, : last[n] + 1].tolist()) for n in range(lp.shape[0])]


def test_the_fixed_cap_is_never_exceeded_silently():
    gen = torch.Generator().manual_seed(9)
    cfg = DominantConfig()
    for over in (150, 198, 199):  # 199 tokens above 0.005 is the most a distribution allows
        lp = _crowded(8, 6000, over, gen)
        dom = find_dominant(lp, cfg, fixed_shape=True)
        assert not bool(dom.capped().any())
        assert _sets(dom) == _uncapped_sets(lp, cfg)
        assert int(dom.n_dominant.max()) == over  # the crowded tokens are the dominant set
    # an input that is not a distribution (300 tokens at 0.006) overflows the cap: flagged
    p = torch.full((2, 1000), 1e-6)
    p[:, :300] = 0.006
    assert bool(find_dominant(p, cfg, probs=True, fixed_shape=True).capped().all())


def test_slices_are_cache_sized_on_cpu_and_budget_sized_otherwise(monkeypatch):
    assert slice_rows(49152, "cpu") == profiles.SLICE_ROWS
    with device_profile("cuda"):
        assert slice_rows(100352, "cpu") == profiles.SLICE_BYTES // (4 * 100352)
        assert slice_rows(100352, "cpu") > 4096  # a large micro-batch is one slice
    # several slices give the same result as one
    z = torch.randn(50, 700, generator=torch.Generator().manual_seed(1)) * 4
    with device_profile("cuda"):
        one = log_softmax_and_dominant(z.clone())
        monkeypatch.setattr(profiles, "SLICE_BYTES", 4 * 700 * 7)  # 7 rows per slice
        assert slice_rows(700, "cpu") == 7
        many = log_softmax_and_dominant(z.clone())
    assert torch.equal(one[0], many[0]) and torch.equal(one[1], many[1])


@pytest.mark.parametrize("profile", ["cpu", "cuda"])
def test_dominant_sets_from_hidden_blocks_equal_the_logits_at_once(monkeypatch, profile):
    # the hidden "states" index a table of logits, so a block's logits are exactly its rows'
    gen = torch.Generator().manual_seed(5)
    v = 700
    table = torch.cat([_distribution(kind, 23, v, gen) * 1.7 for kind in KINDS])  # (138, V)
    hidden = torch.arange(table.shape[0], dtype=torch.float32).unsqueeze(1)  # (N, 1)
    sizes = []

    def logits_of(h):
        sizes.append(h.shape[0])
        return table[h[:, 0].long()].clone()

    for cut in ("last", "first"):
        cfg = DominantConfig(cut=cut)
        with device_profile(profile):
            want = log_softmax_and_dominant(table.clone(), cfg)[1]
            monkeypatch.setattr(profiles, "LOGIT_ROWS", 16)
            monkeypatch.setattr(profiles, "LOGIT_BYTES", 4 * v * 16)  # 16 rows per block
            assert logit_rows(v, "cpu") == 16
            sizes.clear()
            got = dominant_from_hidden(logits_of, hidden, v, cfg)
        assert max(sizes) == 16 and sum(sizes) == table.shape[0]  # never the whole (N, V)
        assert torch.equal(got, want), cut
    with device_profile(profile):  # no positions: the same empty shape as the one-shot path
        empty = dominant_from_hidden(logits_of, hidden[:0], v)
        assert empty.shape == log_softmax_and_dominant(table[:0].clone())[1].shape


def test_position_scores_do_not_depend_on_the_profile(tiny_causal_path):
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.scoring.token_scores import position_scores

    model = SigmoidHeadModel.from_base(load_backbone(str(tiny_causal_path), device="cpu"))
    hidden = torch.randn(40, model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    targets = torch.randint(0, model.config.vocab_size, (40,))
    cpu = position_scores(model.backbone, model.head, hidden, targets)
    with device_profile("cuda"):
        fixed = position_scores(model.backbone, model.head, hidden, targets)
    assert cpu.keys() == fixed.keys()
    for k in cpu:
        torch.testing.assert_close(cpu[k], fixed[k], rtol=1e-6, atol=1e-7, msg=k)


@cuda_only
def test_a_training_step_makes_no_host_sync(tiny_causal_path):
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.optim import make_optimizer
    from sigmoid_head.training.step import StepContext, head_loss

    model = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cuda")
    v = model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(6, v, (4, 40), generator=gen)
    labels = ids.clone()
    labels[:, :8] = -100
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels,
             "trained_index": model.backbone.trained_index(labels)}
    batch = {k: t.to("cuda") for k, t in batch.items()}
    counts = torch.ones(v, dtype=torch.float64)
    sampler = NegativeSampler(SamplerConfig("token_freq+softmax"), v, counts)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    opt = make_optimizer(TrainConfig(train_file="-", output_dir="-"), list(model.head.parameters()))

    def step(check: bool) -> None:
        pos = model.backbone.positions(batch)  # transformers' own mask check may sync here
        torch.cuda.set_sync_debug_mode("error" if check else 0)
        try:
            pos.logits, dom = log_softmax_and_dominant(pos.logits, ctx.dominant)
            loss, _ = head_loss(ctx, pos, dom, torch.Generator(device="cuda").manual_seed(1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        finally:
            torch.cuda.set_sync_debug_mode(0)

    step(check=False)  # lazy state: optimizer moments, the sampler's CDF on the device
    before = model.head.weight.detach().clone()
    step(check=True)
    assert not torch.equal(before, model.head.weight.detach())


@cuda_only
def test_generation_on_cuda_equals_force_decoding(tiny_causal_path):
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.scoring.generate import generate_outputs

    model = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cuda")
    with torch.no_grad():
        model.head.weight.add_(0.2 * torch.randn_like(model.head.weight))
    outs = generate_outputs(model, _prompts(model), DECODINGS["greedy"], batch_size=2,
                            progress=False)
    _assert_same_as_force_decoding(model, outs)


@cuda_only
def test_save_load_on_cuda_gives_identical_scores(tiny_causal_path, tmp_path):
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.scoring.token_scores import position_scores

    model = SigmoidHeadModel.from_base(str(tiny_causal_path), bias=True, device="cuda")
    with torch.no_grad():
        model.head.weight.add_(0.1 * torch.randn_like(model.head.weight))
    model.save_pretrained(tmp_path / "head")
    loaded = SigmoidHeadModel.from_pretrained(tmp_path / "head", str(tiny_causal_path), device="cpu")
    assert torch.equal(loaded.head.weight, model.head.weight.cpu())
    hidden = torch.randn(20, model.config.hidden_size)
    targets = torch.randint(0, model.config.vocab_size, (20,))
    on_cuda = position_scores(model.backbone, model.head, hidden.cuda(), targets.cuda())
    on_cpu = position_scores(loaded.backbone, loaded.head, hidden, targets)
    for k in on_cpu:
        torch.testing.assert_close(on_cuda[k].cpu(), on_cpu[k], rtol=1e-4, atol=1e-5, msg=k)


def test_every_import_inside_a_cuda_only_test_resolves_on_cpu():
    """The CUDA-only tests' bodies never run on a machine without a GPU, so a name they import
    there can break unseen (a lent H100 found ``test_generate``, renamed long before). Every
    ``from M import N`` inside them must resolve here."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    checked = 0
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        if not any(isinstance(d, ast.Name) and d.id == "cuda_only" for d in fn.decorator_list):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{fn.name}: {node.module}.{alias.name}"
                    checked += 1
    assert checked >= 8  # the GPU tests import the model, scoring and training modules
