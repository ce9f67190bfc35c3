"""``raydap token`` and ``raydap login``: a head shared by a team, a token each.

raydap token add alice --role debug      # the operator: a token for alice, shown once
raydap token list                        # names and roles (never the secrets)
raydap token remove alice                # her sessions end; her paused workers stay paused
raydap login                             # alice: paste it once; raydap commands then use it

The token file is the bridge's ``--token-file`` (``RAYDAP_TOKEN_FILE``); the running bridge
reads it again when it changes. docs/deploy.md has the whole team set-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import os
import sys
from pathlib import Path
from typing import Any

from raydap.bridge.client.api_client import ApiClient, BridgeUnavailable
from raydap.bridge.client.connection import find_bridge, save_token
from raydap.bridge.server import token_file


def add_parsers(commands: Any) -> None:
    token = commands.add_parser(
        "token",
        help="add, list or remove the tokens of a head's bridge (a person each)",
        description="Edit the bridge's token file (--file, else RAYDAP_TOKEN_FILE), keeping its "
        "owner, group and mode. The running bridge reads it again within a second: a new token "
        "works at once, and a removed one's sessions end (its paused workers stay paused).",
    )
    token.add_argument("--file", type=Path, help="the token file (default: RAYDAP_TOKEN_FILE)")
    actions = token.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="make a token for NAME and print its secret once")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--role", choices=("debug", "view"), default="debug",
                     help="debug: everything; view: look only, never run code (debug)")  # fmt: skip
    actions.add_parser("list", help="the names and roles (never the secrets)")
    remove = actions.add_parser("remove", help="take NAME's token away")
    remove.add_argument("name", metavar="NAME")

    login = commands.add_parser(
        "login",
        help="save your token for the bridge, so raydap commands use it",
        description="Read a token (from the terminal, or standard input), check it with the "
        "bridge (RAYDAP_URL, else the one this machine runs), and keep it for that bridge in "
        "$XDG_CONFIG_HOME/raydap/tokens.json, readable by you only.",
    )
    login.add_argument("--url", help="the bridge's URL (default: the one found)")


def cmd_token(args: argparse.Namespace) -> int:
    path = args.file or (Path(os.environ["RAYDAP_TOKEN_FILE"])
                         if os.environ.get("RAYDAP_TOKEN_FILE") else None)  # fmt: skip
    if path is None:
        print("raydap: which token file? Give --file PATH or set RAYDAP_TOKEN_FILE (the "
              "bridge's --token-file)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        if args.action == "add":
            secret = token_file.add(path, args.name, args.role)
            print(f"{args.name} ({args.role}): {secret}")
            print(f"Give it to {args.name}, who runs `raydap login` on this machine and pastes "
                  "it. It is not shown again.", file=sys.stderr)  # fmt: skip
        elif args.action == "remove":
            token_file.remove(path, args.name)
            print(f"removed {args.name}'s token", file=sys.stderr)
        else:
            for token in token_file.listed(path):
                print(f"{token.name}\t{token.role}")
    except token_file.TokenFileError as exc:
        print(f"raydap: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"raydap: cannot edit {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def cmd_login(args: argparse.Namespace) -> int:
    if args.url:
        os.environ["RAYDAP_URL"] = args.url
    target = find_bridge()
    if sys.stdin.isatty():
        secret = getpass.getpass(f"token for {target.url}: ")
    else:
        secret = sys.stdin.readline()
    secret = secret.strip()
    if not secret or len(secret) > 512:
        print("raydap: no token given", file=sys.stderr)
        return 2
    api = ApiClient(target=dataclasses.replace(target, token=secret))
    try:
        api.get("/api/v1/workers")
    except BridgeUnavailable as exc:
        print(f"raydap: the bridge did not take that token: {exc}", file=sys.stderr)
        return 1
    path = save_token(target.url, secret)
    print(f"saved for {target.url} in {path}; raydap commands here now use it", file=sys.stderr)
    return 0
