"""Whether the Hugging Face Hub can be reached from here (no torch, nothing uploaded).

Loading a base model (:mod:`sigmoid_head.lm.backbone`), downloading a head and pushing one
(:mod:`sigmoid_head.head.hub`) all ask this first, so that a machine without network gets a
one-line answer from the cache at once instead of minutes of retried requests.
"""

from __future__ import annotations

import functools
import os
import socket
from urllib.parse import urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"


@functools.lru_cache(maxsize=4)
def reachable(endpoint: str, timeout: float) -> bool:
    """Whether ``endpoint`` accepts a TCP connection within ``timeout`` seconds (asked once
    per process, endpoint and timeout)."""
    url = urlparse(endpoint)
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((url.hostname or "", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def offline_env() -> bool:
    """Whether offline mode is asked for: ``HF_HUB_OFFLINE`` set (in the environment, or in
    ``huggingface_hub.constants`` as read when it was imported)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() \
        in {"1", "true", "yes", "on"}


def hub_offline(timeout: float = 3.0) -> bool:
    """Whether the Hub must be treated as offline: ``HF_HUB_OFFLINE`` is set, or its endpoint
    (``HF_ENDPOINT``, default huggingface.co) does not accept a connection within ``timeout``
    seconds. Checked once per process and endpoint."""
    return offline_env() or not reachable(os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT), timeout)
