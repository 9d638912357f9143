"""``python -m joulegym list [FAMILY]``: every registered env id with a one-line description, read from the
family descriptors (:mod:`joulegym.core.family`); ``python -m joulegym families`` lists the families."""

from __future__ import annotations

import argparse
import os
import sys

import joulegym  # noqa: F401  (registers the ids)
from joulegym.core.family import CATALOG, families


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m joulegym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="list the registered environment ids")
    listing.add_argument("family", nargs="?", help="only this family (etf, emrf, powerflow, ...)")
    sub.add_parser("families", help="list the families with their kinds, policies and docs page")
    args = parser.parse_args(argv)
    if args.command == "families":
        for descriptor in families():
            kinds = ", ".join(k.name for k in descriptor.kinds)
            print(f"{descriptor.name:<10} {descriptor.title}\n{'':<10} kinds: {kinds}; reference policy: "
                  f"{descriptor.reference_policy}; docs: {descriptor.docs}")
        return 0
    if args.command == "list":
        rows = [(i, d) for i, (fam, d) in CATALOG.items() if args.family in (None, fam)]
        if not rows:
            print(f"no environment of family {args.family!r}; families: {sorted(f.name for f in families())}",
                  file=sys.stderr)
            return 2
        width = max(len(i) for i, _ in rows)
        try:
            for env_id, description in rows:
                print(f"{env_id:<{width}}  {description}")
            sys.stdout.flush()
        except BrokenPipeError:  # `python -m joulegym list | head`: the reader left, which is fine
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
