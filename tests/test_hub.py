"""Hub integration with the real huggingface_hub client, offline.

Uploads go through ``sigmoid-head push`` (the installed entry point) to a local stand-in
for the Hub's HTTP API (``HF_ENDPOINT``); the stand-in keeps the committed files and
serves them back, so huggingface_hub's own downloader fills a Hub cache from it; the
head is then loaded from that cache in a fresh process with ``HF_HUB_OFFLINE=1``.
What the stand-in cannot show: authentication, LFS/Xet uploads of large files (it asks
for regular uploads), and the real Hub's rendering of the card's metadata.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

from sigmoid_head.head.hub import HeadNotFoundError
from sigmoid_head.head.model import SigmoidHeadModel

REPO = "tester/tiny-sigmoid-head"


class StandInHub(BaseHTTPRequestHandler):
    """The few Hub endpoints create_repo, create_commit and snapshot_download use."""

    repos: dict[str, dict] = {}
    requests: list[tuple[str, str, dict]] = []

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def do_POST(self):
        path, body = self.path.split("?")[0], self._body()
        auth = self.headers.get("Authorization", "")
        if path == "/api/repos/create":
            payload = json.loads(body)
            repo = f"{payload['organization']}/{payload['name']}"
            self.requests.append(("create", repo, {**payload, "auth": auth}))
            self.repos.setdefault(repo, {"files": {}, "sha": None, "private": payload.get("visibility")})
            return self._json({"url": f"{self.server.url}/{repo}", "name": repo})
        if path == "/api/validate-yaml":  # the client checks the card's metadata first
            self.requests.append(("validate-yaml", "", json.loads(body)))
            return self._json({"errors": [], "warnings": []})
        parts = path.strip("/").split("/")  # api models owner name (preupload|commit) rev
        if len(parts) < 6:
            raise AssertionError(f"unexpected POST {path}")
        repo, action = f"{parts[2]}/{parts[3]}", parts[4]
        if repo not in self.repos:
            return self._json({"error": "Repository not found"}, 404)
        if action == "preupload":
            files = json.loads(body)["files"]
            return self._json({"files": [{"path": f["path"], "uploadMode": "regular",
                                          "shouldIgnore": False} for f in files]})
        if action == "commit":
            lines = [json.loads(x) for x in body.splitlines() if x.strip()]
            header = next(x["value"] for x in lines if x["key"] == "header")
            files = {x["value"]["path"]: base64.b64decode(x["value"]["content"])
                     for x in lines if x["key"] == "file"}
            sha = hashlib.sha1(body).hexdigest()
            self.repos[repo]["files"].update(files)
            for x in lines:
                if x["key"] == "deletedFile":
                    self.repos[repo]["files"].pop(x["value"]["path"], None)
            self.repos[repo]["sha"] = sha
            self.requests.append(("commit", repo, {"summary": header["summary"], "auth": auth}))
            return self._json({"commitUrl": f"{self.server.url}/{repo}/commit/{sha}",
                               "commitOid": sha, "success": True})
        return self._json({"error": "unknown"}, 404)

    def _resolve(self, send_body: bool):
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) >= 5 and parts[2] == "resolve":  # owner name resolve rev file
            repo, name = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
            data = self.repos.get(repo, {}).get("files", {}).get(name)
            if data is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("X-Repo-Commit", self.repos[repo]["sha"])
            self.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if send_body:
                self.wfile.write(data)
            return
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            repo = f"{parts[2]}/{parts[3]}"
            if repo not in self.repos:
                return self._json({"error": "Repository not found"}, 404)
            info = self.repos[repo]
            return self._json({"id": repo, "modelId": repo, "sha": info["sha"], "private": False,
                               "siblings": [{"rfilename": f} for f in sorted(info["files"])]})
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
            files = self.repos.get(f"{parts[2]}/{parts[3]}", {}).get("files", {})
            return self._json([{"type": "file", "path": f, "size": len(d),
                                "oid": hashlib.sha1(d).hexdigest()} for f, d in sorted(files.items())])
        return self._json({"error": "unknown"}, 404)

    def do_GET(self):
        self._resolve(True)

    def do_HEAD(self):
        self._resolve(False)


@pytest.fixture
def hub():
    StandInHub.repos, StandInHub.requests = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInHub)
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf-home"), PYTHONPATH=src + os.pathsep + env.get("PYTHONPATH", ""),
               OMP_WAIT_POLICY="PASSIVE", **extra)
    return env


@pytest.fixture
def trained_head(tiny_causal_path, tmp_path):
    """A saved head with a training record (perturbed so that it differs from the LM head)."""
    shm = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    torch.manual_seed(0)
    with torch.no_grad():
        shm.head.weight.add_(0.1 * torch.randn_like(shm.head.weight))
    record = {"train_file": "pairs.jsonl", "negatives": "token_freq", "lr": 1e-3, "steps": 40,
              "history": [{"step": 0, "val_loss": 0.9}, {"step": 20, "val_loss": 0.5,
                                                         "train_loss": 0.6},
                          {"step": 40, "val_loss": 0.45, "train_loss": 0.5}]}
    shm.save_pretrained(tmp_path / "head", training=record)
    return shm, tmp_path / "head"


def _sigmoid_logits(shm: SigmoidHeadModel) -> torch.Tensor:
    h = torch.linspace(-1, 1, shm.config.hidden_size).repeat(3, 1)
    return shm.head.logits(h, torch.tensor([[1, 5, 7]] * 3))


def test_push_then_download_then_load_offline_from_the_hub_cache(hub, trained_head, tmp_path):
    shm, head_dir = trained_head
    env = _env(tmp_path, HF_ENDPOINT=hub.url, HF_TOKEN="hf_test_token")
    cli = shutil.which("sigmoid-head", path=str(Path(sys.executable).parent))
    run = subprocess.run([cli, "push", str(head_dir), REPO, "--private"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"{hub.url}/{REPO}/commit/" in run.stdout
    kinds = [r[0] for r in StandInHub.requests]
    assert kinds == ["create", "validate-yaml", "commit"]
    assert StandInHub.requests[0][2]["visibility"] == "private"
    assert StandInHub.requests[2][2]["auth"] == "Bearer hf_test_token"
    files = StandInHub.repos[REPO]["files"]
    assert set(files) == {"head_config.json", "head.safetensors", "README.md"}
    assert files["head.safetensors"] == (head_dir / "head.safetensors").read_bytes()
    assert files["head_config.json"] == (head_dir / "head_config.json").read_bytes()
    assert files["README.md"].startswith(b"---\nlibrary_name: sigmoid-head\n")

    # huggingface_hub's own downloader fills a Hub cache from the stand-in ...
    cache = tmp_path / "hf-home" / "hub"
    from huggingface_hub import snapshot_download

    local = Path(snapshot_download(REPO, endpoint=hub.url, cache_dir=cache, token="hf_test_token"))
    assert (local / "head.safetensors").read_bytes() == files["head.safetensors"]
    assert cache.joinpath(f"models--{REPO.replace('/', '--')}", "refs", "main").is_file()

    # ... and a fresh process loads the head from that cache with HF_HUB_OFFLINE=1.
    code = ("import sys, torch; from sigmoid_head.head.model import SigmoidHeadModel;"
            f"m = SigmoidHeadModel.from_pretrained({REPO!r}, sys.argv[1], device='cpu');"
            "torch.save(m.head.weight.detach(), sys.argv[2])")
    offline = _env(tmp_path, HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")
    out = tmp_path / "w.pt"
    run = subprocess.run([sys.executable, "-c", code, shm.backbone.name_or_path, str(out)],
                         env=offline, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert torch.equal(torch.load(out), shm.head.weight.detach())


def test_from_pretrained_takes_a_hub_revision_from_the_cache(trained_head, tmp_path, monkeypatch):
    """Two revisions in a hub cache (written with huggingface_hub's layout); offline,
    ``revision=`` picks the commit and the default is refs/main."""
    import huggingface_hub.constants as hc

    shm, head_dir = trained_head
    cache = tmp_path / "cache"
    repo_dir = cache / f"models--{REPO.replace('/', '--')}"
    old, new = "a" * 40, "b" * 40
    w0 = shm.head.weight.detach().clone()
    for sha, scale in ((old, 0.0), (new, 1.0)):  # each revision a complete save
        with torch.no_grad():
            shm.head.weight.copy_(w0 + scale)
        shm.save_pretrained(repo_dir / "snapshots" / sha)
    with torch.no_grad():
        shm.head.weight.copy_(w0)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(new)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(cache))
    base = shm.backbone
    latest = SigmoidHeadModel.from_pretrained(REPO, base)
    pinned = SigmoidHeadModel.from_pretrained(REPO, base, revision=old)
    assert torch.equal(latest.head.weight, w0 + 1.0)
    assert torch.equal(pinned.head.weight, w0)
    assert torch.equal(_sigmoid_logits(pinned), _sigmoid_logits(shm))
    with pytest.raises(HeadNotFoundError, match="HF_HUB_OFFLINE"):
        SigmoidHeadModel.from_pretrained("tester/not-cached", base)


def test_an_unreachable_hub_gives_one_line_at_once(tmp_path):
    """No HF_HUB_OFFLINE, but the endpoint refuses connections: the model id is looked up in the
    cache only, so the CLI answers with one line and exit 2 instead of retrying for half a minute."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"source": "a", "candidate": "b"}\n')
    env = {k: v for k, v in _env(tmp_path, HF_ENDPOINT="http://127.0.0.1:9").items() if k != "HF_HUB_OFFLINE"}
    exe = Path(sys.executable).with_name("sigmoid-head")
    run = subprocess.run([str(exe), "score", "--model", "someorg/not-cached", "--input", str(data)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "Retry" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cannot be reached" in lines[0] and "someorg/not-cached" in lines[0]
    assert not (tmp_path / "in.scores.jsonl").exists()


def test_a_missing_local_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a local head directory"):
        SigmoidHeadModel.from_pretrained(str(tmp_path / "no" / "such" / "head"))


# Issue 26, item 8: push ends in one line when the Hub cannot take it.

@pytest.mark.parametrize("how", ["endpoint_env", "offline_env"])
def test_push_to_an_unreachable_or_offline_hub_is_one_line_exit_2(trained_head, how, monkeypatch,
                                                                 capsys):
    from sigmoid_head.cli import main as cli_main

    _, head_dir = trained_head
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    if how == "endpoint_env":
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cli_main(["push", str(head_dir), REPO, "--license", "mit"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert ("127.0.0.1:9 does not accept" if how == "endpoint_env" else "HF_HUB_OFFLINE") in err


def test_push_folder_takes_the_endpoint_as_a_parameter(trained_head):
    from sigmoid_head.head.hub import HubUnavailableError, push_folder

    _, head_dir = trained_head
    with pytest.raises(HubUnavailableError, match=r"^cannot push: http://127.0.0.1:9 does not"):
        push_folder(head_dir, REPO, endpoint="http://127.0.0.1:9", token="x")


def test_the_same_head_saved_twice_has_the_same_bytes(trained_head, tmp_path):
    """safetensors writes its metadata in a random order: the saved bytes (and so
    weights_sha256) used to change between saves of one head, and a re-push uploaded again."""
    shm, _ = trained_head
    digests = set()
    for i in range(12):
        shm.save_pretrained(tmp_path / f"s{i}")
        digests.add(hashlib.sha256((tmp_path / f"s{i}" / "head.safetensors").read_bytes()).hexdigest())
    assert len(digests) == 1
    loaded = SigmoidHeadModel.from_pretrained(tmp_path / "s0", shm.backbone)
    assert torch.equal(loaded.head.weight, shm.head.weight)
