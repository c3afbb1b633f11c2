"""``sigmoid-head push``: upload a trained head and its generated model card to the Hub.

The options are generated from :class:`sigmoid_head.head.push_config.PushConfig`."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = (
    "Upload a head directory (head_config.json + head.safetensors) and a README.md model "
    "card generated from its training record to a Hub repository (created if needed). Uses "
    "HF_TOKEN / the stored login unless --token is given, and HF_ENDPOINT when set."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..head.push_config import PushConfig
    from .options import add_settings

    # positional, as ever: the what and the where of every upload (not a --config key)
    p.add_argument("head", help="head directory written by train / save_pretrained")
    p.add_argument("repo_id", help="Hub repository, owner/name")
    add_settings(p, PushConfig)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..head.folder import HeadConfig
    from ..head.hub import hub_offline, push_folder
    from ..head.model_card import base_license, base_parameter_count, check_license, model_card

    config = HeadConfig.load(Path(args.head))
    license = check_license(args.license) if args.license else \
        base_license(config.base_model, config.base_revision, hub_offline)
    if args.card_only:
        params = base_parameter_count(config.base_model, config.base_revision)
        print(model_card(config, repo_id=args.repo_id, base_params=params,
                         evaluation=args.evaluation, license=license), end="")
    else:
        info = push_folder(args.head, args.repo_id, private=args.private, token=args.token,
                           revision=args.revision, commit_message=args.commit_message,
                           evaluation=args.evaluation, license=license)
        print(f"pushed {args.head} to {args.repo_id}: {info.commit_url}")
    if license is None:
        print("note: the base model's license is not known here, so the card states none "
              "(give --license)", file=sys.stderr)
    return 0
