"""joulegym.datasets (docs/api/datasets.md): the registry, the sha256-checked fetch from a mirror, the derived Philly
slice, the offline and missing-file errors and the ``python -m joulegym data`` command. A loopback HTTP server
serves ``../shared/reference-data`` (the mirror layout), so no test needs the network."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import gymnasium as gym
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import datasets
from tests.reference_data import REF

pytestmark = pytest.mark.skipif(not (REF / "elasticflow" / "philly_103959.csv").is_file(),
                                reason="../shared/reference-data is absent (not shipped with the repo)")


class _Server:
    """A loopback HTTP server over ``folder`` in a thread; ``requests`` lists the paths asked for."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        log = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                log.append(self.path)
                super().do_GET()

            def log_message(self, *args):  # keep pytest's output clean
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv(datasets.DATA_URL_ENV, raising=False)
    monkeypatch.delenv(datasets.DATA_DIR_ENV, raising=False)


@pytest.fixture
def mirror():
    server = _Server(REF)
    yield server
    server.close()


def test_registry_matches_the_reference_files_and_pins_commits():
    for ds in datasets.DATASETS.values():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ds.source), ds.name
        assert ds.licence and ds.description
        for f in ds.files:
            data = (REF / ds.relpath(f)).read_bytes()
            assert (hashlib.sha256(data).hexdigest(), len(data)) == (f.sha256, f.size), ds.relpath(f)
            assert ds.origin_url(f).startswith(f"https://raw.githubusercontent.com/{ds.source.replace('@', '/')}/")
    gavel = datasets.dataset("gavel-103959")
    assert gavel.origin_url(gavel.files[0]).endswith("/scheduler/traces/msr/seed=0/103959.trace")
    with pytest.raises(ValueError, match=r"known datasets: .*philly-103959"):
        datasets.dataset("philly")


def test_fetch_downloads_checks_and_keeps(tmp_path, mirror):
    root = tmp_path / "cache"
    (path,) = datasets.fetch("philly-103959", root=root, base_url=mirror.url)
    assert path == root / "elasticflow" / "philly_103959.csv"
    assert path.read_bytes() == (REF / "elasticflow" / "philly_103959.csv").read_bytes()
    assert datasets.resolve("philly-103959", root) == path
    asked = len(mirror.requests)
    datasets.fetch("philly-103959", root=root, base_url=mirror.url)  # present with the right hash: no download
    assert len(mirror.requests) == asked == 1


def test_fetch_multi_file_dataset_from_env_url(tmp_path, mirror, monkeypatch):
    monkeypatch.setenv(datasets.DATA_URL_ENV, mirror.url)
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))
    got = datasets.fetch("gavel-103959")  # "seed=0" in the path
    assert got == [tmp_path / "gavel" / "traces" / "msr" / "seed=0" / "103959.trace"]
    assert datasets.is_present("gavel-103959")


def test_checksum_failure_leaves_nothing(tmp_path):
    served = tmp_path / "served" / "elasticflow"
    served.mkdir(parents=True)
    data = bytearray((REF / "elasticflow" / "philly_103959.csv").read_bytes())
    data[100] ^= 1  # one flipped bit
    (served / "philly_103959.csv").write_bytes(bytes(data))
    server = _Server(tmp_path / "served")
    root = tmp_path / "cache"
    try:
        with pytest.raises(datasets.DataError, match="does not match its registered sha256"):
            datasets.fetch("philly-103959", root=root, base_url=server.url)
    finally:
        server.close()
    assert not any(p.is_file() for p in root.rglob("*"))  # no target, no temporary file
    with pytest.raises(datasets.DataError, match="data fetch philly-103959"):
        datasets.resolve("philly-103959", root)


def test_a_copy_of_the_right_size_but_other_bytes_is_never_used(tmp_path, mirror):
    """The sha256 is checked before use, not only the size: ``resolve`` refuses, ``data list`` says corrupt."""
    target = tmp_path / "elasticflow" / "philly_103959.csv"
    target.parent.mkdir(parents=True)
    full = (REF / "elasticflow" / "philly_103959.csv").read_bytes()
    target.write_bytes(full[:-1] + (b"0" if full[-1:] != b"0" else b"1"))  # registered size, one byte changed
    assert datasets.status("philly-103959", tmp_path) == "corrupt" and not datasets.is_present("philly-103959",
                                                                                                 tmp_path)
    with pytest.raises(datasets.DataError, match=r"does not match its registered size and sha256.*not used"):
        datasets.resolve("philly-103959", tmp_path)
    row = next(r for r in datasets.listing(tmp_path) if r["name"] == "philly-103959")
    assert row["status"] == "corrupt" and row["present"] is False


def test_a_bad_copy_someone_else_put_is_reported_and_kept(tmp_path, mirror):
    """``$JOULEGYM_DATA`` may be the user's own folder: a file joulegym did not fetch is never deleted."""
    target = tmp_path / "elasticflow" / "philly_103959.csv"
    target.parent.mkdir(parents=True)
    full = (REF / "elasticflow" / "philly_103959.csv").read_bytes()
    target.write_bytes(full[: len(full) // 2])  # the user's partial copy
    with pytest.raises(datasets.DataError, match="was not written by joulegym, so it was left as it is"):
        datasets.fetch("philly-103959", root=tmp_path, base_url=mirror.url)
    assert target.read_bytes() == full[: len(full) // 2] and mirror.requests == []


def test_a_bad_copy_joulegym_fetched_is_replaced_and_never_kept(tmp_path, mirror):
    (target,) = datasets.fetch("philly-103959", root=tmp_path, base_url=mirror.url)
    full = target.read_bytes()
    target.write_bytes(full[: len(full) // 2])  # damaged after the fetch
    with socket.socket() as sock:  # a failed re-fetch: offline
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(datasets.DataError, match="could not download"):
        datasets.fetch("philly-103959", root=tmp_path, base_url=f"http://127.0.0.1:{port}")
    assert not target.exists()  # the bad copy joulegym wrote is not kept
    datasets.fetch("philly-103959", root=tmp_path, base_url=mirror.url)
    assert target.read_bytes() == full and datasets.status("philly-103959", tmp_path) == "present"


def test_offline_error_names_the_ways_out(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(datasets.DataError, match=r"could not download .*Offline\? .*JOULEGYM_DATA"):
        datasets.fetch("philly-103959", root=tmp_path, base_url=f"http://127.0.0.1:{port}")
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_derived_philly_24h_matches_its_sha256(tmp_path, mirror):
    (path,) = datasets.fetch("philly-24h", root=tmp_path, base_url=mirror.url)
    assert path.read_bytes() == (REF / "pollux-philly" / "philly_2017-10-13_24h.csv").read_bytes()
    assert mirror.requests == ["/pollux-philly/philly.csv"]  # derived locally, not downloaded


def test_real_trace_id_resolves_by_name(tmp_path, monkeypatch, mirror):
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(ValueError, match=re.escape("run `python -m joulegym data fetch philly-103959`")):
        gym.make("joulegym/PowerFlow-philly-103959-v0")
    datasets.fetch("philly-103959", base_url=mirror.url)
    env = gym.make("joulegym/PowerFlow-philly-103959-v0")
    assert env.unwrapped.config["trace_path"] == str(tmp_path / "elasticflow" / "philly_103959.csv")
    env.reset(seed=0)
    assert env.unwrapped.sim is not None
    env.close()


def test_data_cli_fetch_and_list(tmp_path, mirror):
    env = {**os.environ, datasets.DATA_DIR_ENV: str(tmp_path), datasets.DATA_URL_ENV: mirror.url,
           "NO_PROXY": "127.0.0.1,localhost"}
    script = ("import sys; from joulegym.__main__ import main\n"
              "for argv in (['data', 'fetch', 'tiresias-60-job'], ['data', 'list'], ['data', 'fetch', 'nope']):\n"
              "    print('rc', main(argv), flush=True)\n")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.count("rc 0") == 2 and "rc 2" in out.stdout, out.stderr
    assert f"tiresias-60-job: {tmp_path / 'tiresias' / '60_job.csv'}" in out.stdout
    assert re.search(r"tiresias-60-job\s+present", out.stdout)
    assert re.search(r"philly-103959\s+absent", out.stdout)
    assert "dataset='nope' is unknown; known datasets:" in out.stderr
