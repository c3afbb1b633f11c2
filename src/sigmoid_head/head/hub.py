"""Heads on the Hugging Face Hub, the way PEFT adapters live there.

A head repository holds exactly what :meth:`SigmoidHeadModel.save_pretrained` writes
(``head_config.json`` + ``head.safetensors``, and the extras ``sigmoid-head calibrate``
fitted: ``calibration.json``, ``error_spans.json``, ``combination.json``) plus a generated
``README.md`` model card (:mod:`.model_card`); :mod:`.head_files` names them all and lists
what an upload sends (:func:`~.head_files.push_files`). The
base model stays in its own repository and is named in the config. Everything goes
through ``huggingface_hub``: downloads through ``snapshot_download`` (its cache,
``revision``, ``token``, ``HF_HUB_OFFLINE``, ``HF_ENDPOINT`` work as usual; only data
files are fetched, never code or pickles), uploads through ``HfApi.create_repo`` and one
``create_commit``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ..lm.hub_access import hub_offline, offline_env, reachable
from . import files as head_files
from .files import CARD_NAME, CONFIG_NAME, EXTRA_FILES, HEAD_FILES, WEIGHTS_NAME
from .folder import HeadConfig

RELEASED_FILES = ("config.json", "model.safetensors")
"""The files of a head in the paper authors' released format (:mod:`sigmoid_head.head.released`)."""


class HeadNotFoundError(FileNotFoundError):
    """Neither a local head directory nor a Hub repository that holds a head."""


def is_local(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` names an existing local directory."""
    return Path(name_or_path).expanduser().is_dir()


def download_head(repo_id: str, *, revision: str | None = None, token: str | bool | None = None,
                  cache_dir: str | Path | None = None) -> Path:
    """Fetch a head repository (or the cached copy of it) and return its local snapshot.

    Args:
        repo_id: ``owner/name`` on the Hub (or on ``HF_ENDPOINT``).
        revision: branch, tag or commit (default: the main branch).
        token: a Hub token, True for the stored one, None for the default lookup.
        cache_dir: the Hub cache (default: ``HF_HUB_CACHE``).

    Returns:
        The snapshot directory. With ``HF_HUB_OFFLINE=1`` this is the cached snapshot.

    Raises:
        HeadNotFoundError: when the repository (or the cached copy offline) does not exist
            or holds no head files.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    try:
        path = Path(snapshot_download(
            repo_id, revision=revision, token=token, cache_dir=cache_dir,
            allow_patterns=[*HEAD_FILES, *RELEASED_FILES], local_files_only=hub_offline(),
        ))
    except HFValidationError as err:
        raise HeadNotFoundError(
            f"{repo_id!r} is neither a local head directory nor a valid Hub repository id") from err
    except (RepositoryNotFoundError, LocalEntryNotFoundError) as err:
        raise HeadNotFoundError(
            f"no head found at {repo_id!r} (revision {revision or 'main'}): not a local directory, "
            f"and the Hub could not provide it ({type(err).__name__}"
            f"{'; the Hub cannot be reached from here' if hub_offline() else ''}). Offline "
            "(HF_HUB_OFFLINE=1 or no connection), a Hub head loads only from the cache (the "
            "repository downloaded before)."
        ) from err
    if not any((path / f).is_file() for f in (CONFIG_NAME, *RELEASED_FILES)):
        raise HeadNotFoundError(f"the Hub repository {repo_id!r} holds no sigmoid head files")
    return path


def resolve_head_dir(name_or_path: str | Path, *, revision: str | None = None,
                 token: str | bool | None = None) -> Path:
    """A local directory unchanged, anything else downloaded as a Hub repository id."""
    if is_local(name_or_path):
        return Path(name_or_path).expanduser()
    return download_head(str(name_or_path), revision=revision, token=token)


class HubUnavailableError(ValueError):
    """The Hub cannot take an upload: offline mode, an endpoint that does not answer, or a
    request it refused (reported in one line)."""


def _network_error(err: BaseException) -> bool:
    """Whether ``err`` is a transport error of the Hub client (connection refused, timeout,
    DNS, TLS: httpx's, requests' or urllib3's exceptions)."""
    return any(c.__module__.split(".")[0] in {"httpx", "httpx2", "httpcore", "requests", "urllib3"}
               for c in type(err).__mro__)


def _hub_call(what: str, endpoint: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` with the Hub's refusals and network failures as one-line
    :class:`HubUnavailableError` (``what``: the step, for the message)."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return call(*args, **kwargs)
    except HfHubHTTPError as err:
        first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        raise HubUnavailableError(f"{what} on {endpoint} was refused: {first}") from None
    except Exception as err:
        if not (isinstance(err, OSError) or _network_error(err)):
            raise
        first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        raise HubUnavailableError(f"{what}: cannot reach {endpoint} ({first})") from None


def push_folder(head_dir: str | Path, repo_id: str, *, private: bool | None = None,
                token: str | bool | None = None, commit_message: str | None = None,
                evaluation: Any = None, revision: str | None = None,
                base_params: int | None = None, endpoint: str | None = None,
                license: str | None = None) -> Any:
    """Upload a saved head directory with a generated model card (one commit).

    The head's own files (config, weights and whichever extras the folder holds) are sent
    as they are (nothing is copied or rewritten); the card is generated from its
    ``head_config.json``, lists the extras, and replaces any README.md in the repository.
    Extras files left in the repository by an earlier push that this folder lacks are
    deleted in the same commit, so a pulled head never pairs with another head's extras.

    Args:
        head_dir: a directory written by ``save_pretrained``.
        repo_id: ``owner/name``; the repository is created if needed.
        private: create the repository as private (an existing one keeps its visibility).
        token: a Hub token (None: the stored one).
        commit_message: default ``"Upload sigmoid head"``.
        evaluation: an evaluation table for the card (see :func:`.model_card.model_card`).
        revision: the branch to commit to (default: main).
        base_params: the base model's parameter count for the card (default: read from
            the base model's safetensors headers when they are at hand, else left out).
        endpoint: the Hub's address (default: ``HF_ENDPOINT``, else huggingface.co).
        license: the card's license id (default: the base model's where known,
            :func:`.model_card.base_license`; else the card has none).

    Returns:
        huggingface_hub's ``CommitInfo`` (``.commit_url``, ``.oid``).

    Raises:
        HubUnavailableError: ``HF_HUB_OFFLINE`` is set, the endpoint does not accept a
            connection, or the Hub refused a request (checked before anything is sent).
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, constants

    from .model_card import base_license, base_parameter_count, check_license, model_card

    head_dir = Path(head_dir)
    config = HeadConfig.load(head_dir)  # refuses a folder that is not a head
    if not (head_dir / WEIGHTS_NAME).is_file():
        raise FileNotFoundError(f"{head_dir} holds {CONFIG_NAME} but no {WEIGHTS_NAME}")
    license = check_license(license) if license else base_license(config.base_model,
                                                                  config.base_revision, hub_offline)
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    if offline_env():
        raise HubUnavailableError("cannot push: HF_HUB_OFFLINE is set (offline mode); unset it "
                                  "to upload")
    if not reachable(endpoint, 5.0):
        raise HubUnavailableError(f"cannot push: {endpoint} does not accept a connection (no "
                                  "network, or a wrong HF_ENDPOINT)")
    if base_params is None:
        base_params = base_parameter_count(config.base_model, config.base_revision)
    files = head_files.push_files(head_dir)  # config, weights, the extras it holds
    extras = [name for name in files if name in EXTRA_FILES]
    card = model_card(config, repo_id=repo_id, base_params=base_params, evaluation=evaluation,
                      extras=extras, license=license)
    api = HfApi(token=token, endpoint=endpoint)
    _hub_call(f"creating {repo_id}", endpoint, api.create_repo, repo_id, private=private,
              exist_ok=True, repo_type="model")
    ops: list[Any] = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(head_dir / name))
                      for name in files]
    ops.append(CommitOperationAdd(path_in_repo=CARD_NAME, path_or_fileobj=card.encode("utf-8")))
    ops += [CommitOperationDelete(path_in_repo=name)
            for name in head_files.stale_extras(head_dir, _hub_call(
                f"listing {repo_id}", endpoint, _repo_files, api, repo_id, revision))]
    return _hub_call(f"committing to {repo_id}", endpoint, api.create_commit, repo_id=repo_id,
                     operations=ops, repo_type="model", revision=revision,
                     commit_message=commit_message or "Upload sigmoid head")


def _repo_files(api: Any, repo_id: str, revision: str | None) -> list[str]:
    """The files the repository holds at ``revision`` (none on a new branch)."""
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError

    try:
        return list(api.list_repo_files(repo_id, revision=revision, repo_type="model"))
    except (EntryNotFoundError, RevisionNotFoundError):  # a new branch: nothing to delete
        return []


def push_to_hub(model: Any, repo_id: str, **kwargs: Any) -> Any:
    """Save a :class:`~sigmoid_head.head.model.SigmoidHeadModel` and upload it (see :func:`push_folder`).

    The base model's parameter count for the card is taken from the loaded backbone.
    """
    from .model_card import parameter_count

    with tempfile.TemporaryDirectory(prefix="sigmoid-head-push-") as tmp:
        model.save_pretrained(tmp)
        kwargs.setdefault("base_params", parameter_count(model.backbone.model))
        return push_folder(tmp, repo_id, **kwargs)
