"""``python -m joulegym list [FAMILY]``: every registered env id with a one-line description, read from the
family descriptors (:mod:`joulegym.core.family`); ``python -m joulegym families`` lists the families;
``python -m joulegym data list`` / ``data fetch NAME...`` the public traces and profiles (:mod:`joulegym.datasets`:
``$JOULEGYM_DATA`` sets where they are stored, ``$JOULEGYM_DATA_URL`` a mirror)."""

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
    data = sub.add_parser("data", help="list or fetch the public traces and profiles (joulegym.datasets)")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    data_sub.add_parser("list", help="every dataset: size, licence, origin, whether it is present")
    fetch = data_sub.add_parser("fetch", help="download datasets (sha256-checked) into $JOULEGYM_DATA or the cache")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="dataset names (see `data list`), or all")
    args = parser.parse_args(argv)
    if args.command == "data":
        return _data(args)
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


def _data(args: argparse.Namespace) -> int:
    from joulegym import datasets

    if args.data_command == "list":
        rows = datasets.listing()
        width = max(len(str(r["name"])) for r in rows)
        print(f"data folder: {datasets.data_dir()} (set {datasets.DATA_DIR_ENV} to change it)")
        for r in rows:
            mark = {"present": "present", "corrupt": "CORRUPT", "absent": "absent "}[str(r["status"])]
            print(f"{r['name']:<{width}}  {mark}  {int(r['size']) / 1e3:>8.1f} kB  {r['description']}\n"
                  f"{'':<{width}}  licence: {r['licence']}; from {r['source']}")
        return 0
    names = list(datasets.DATASETS) if args.names == ["all"] else args.names
    try:
        for name in names:
            datasets.dataset(name)  # every name is checked before any download
        for name in names:
            for path in datasets.fetch(name, progress=sys.stderr.isatty()):
                print(f"{name}: {path}")
    except datasets.DataError as err:
        print(f"python -m joulegym data: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
