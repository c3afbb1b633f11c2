"""Data parallel: two processes (gloo on CPU) train the same head as one.

Note: ``accelerate launch --cpu --num_processes 2`` starts a single process on one machine
(accelerate 1.x reserves multi-process CPU runs for MPI); ``accelerate launch --multi_gpu``
and ``torchrun`` start real gloo process groups on a CPU-only machine.
"""

import subprocess
import sys
import textwrap

import pytest
import torch
from safetensors.torch import load_file

from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train

SCRIPT = textwrap.dedent("""
    import sys
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train
    from accelerate import PartialState
    model, data, out, accum, opts = sys.argv[1:6]
    for opt in opts.split(","):  # one launch trains a head per optimizer, one after the other
        train(TrainConfig(train_file=data, output_dir=f"{out}/{opt}", model=model, lr=3e-2, batch_size=8,
                          grad_accum=int(accum), max_steps=12, eval_every=6, patience=0,
                          progress=False, validation_fraction=0.1, seed=0, device="cpu",
                          negatives="token_freq+softmax", optimizer=opt))
    state = PartialState()  # set up by train's Accelerator
    if state.is_main_process:
        print("world", state.num_processes, flush=True)
""")


LAUNCHERS = {  # run through this interpreter, so no PATH lookup is needed
    "accelerate": [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch",
                   "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                   "--mixed_precision", "no", "--dynamo_backend", "no"],
    "torchrun": [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"],
}


@pytest.mark.parametrize(("launcher", "optimizers"), [("accelerate", "adamw"),
                                                    ("torchrun", "adamw,sparse_adamw,deferred_adamw")])
def test_two_processes_train_the_same_head_as_one(launcher, optimizers, tiny_causal_path,
                                                  tiny_pairs_jsonl, tmp_path):
    """The optimizers of one launcher share one launch (each process start costs seconds):
    with two processes the row optimizers read the all-reduced dense gradient, in one the
    sparse row gradients."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    cmd = [*LAUNCHERS[launcher], str(script), str(tiny_causal_path),
           str(tiny_pairs_jsonl), str(tmp_path / "two"), "1", optimizers]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "world 2" in run.stdout, run.stdout[-2000:]
    for optimizer in optimizers.split(","):
        single = train(TrainConfig(train_file=str(tiny_pairs_jsonl), output_dir=str(tmp_path / "one" / optimizer),
                                   model=str(tiny_causal_path), lr=3e-2, batch_size=8, grad_accum=2,
                                   max_steps=12, eval_every=6, patience=0, progress=False,
                                   validation_fraction=0.1, seed=0, device="cpu",
                                   negatives="token_freq+softmax", optimizer=optimizer))
        two = load_file(str(tmp_path / "two" / optimizer / "head.safetensors"))["weight"]
        initial = single.backbone.output_weight().float()
        assert bool((two != initial).any()), f"the two-process run did not train ({optimizer})"
        torch.testing.assert_close(two, single.head.weight.detach(), rtol=1e-4, atol=1e-5)
