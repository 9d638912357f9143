"""Agents load weights-only (docs/robustness.md, "Model files"): no path through evaluate.py, the suite or the
zoo unpickles a ``model.zip`` unless the user passes ``--unsafe-unpickle-model-zip`` / ``allow_pickle=True``, and
a malformed weights-only agent gives a one-line error naming the file, never a traceback."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import gymnasium as gym
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.agents import SB3Policy
from joulegym.agents.algos import saved_algo
from joulegym.evaluation import suite
from joulegym.evaluation.cli import main

torch = pytest.importorskip("torch")  # the train extra (torch, Stable-Baselines3): skipped without it
pytest.importorskip("stable_baselines3")

ZOO = Path(suite.default_zoo())
SAC = ZOO / "etf" / "tx2-fig6-random" / "sac" / "seed0"  # a Box agent (one training seed of the shipped SAC)
QIN = ZOO / "qin" / "paper-rw" / "maskable_ppo"  # a Discrete agent, one seed<k>/ run per training seed
SAC_ENV = json.loads((SAC / "provenance.json").read_text())["env_id"]


class _Payload:
    """Unpickling it creates ``flag``: proof that code from the file ran."""

    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def __reduce__(self):
        return (open, (str(self.flag), "w"))


def crafted_zip(path: Path, flag: Path) -> Path:
    """An SB3-looking model.zip whose ``data`` holds a cloudpickled payload (SB3's ``:serialized:`` fields)."""
    blob = base64.b64encode(pickle.dumps(_Payload(flag))).decode()
    data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": blob,
                             "__module__": "stable_baselines3.sac.policies"},
            "observation_space": {":type:": "x", ":serialized:": blob}, "action_space": {":serialized:": blob}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", pickle.dumps(_Payload(flag)))
    return path


def test_a_run_dir_without_agent_is_not_unpickled(tmp_path, capsys):
    flag = tmp_path / "ran"
    run = tmp_path / "run"
    crafted_zip(run / "model.zip", flag)
    (run / "agent").mkdir()  # agent/ without weights.pt
    (run / "agent" / "agent.json").write_text((SAC / "agent.json").read_text())
    for spec in (f"sac:{run}", f"sac:{run / 'model.zip'}", f"{run / 'model.zip'}"):
        assert main(["--env", SAC_ENV, "--policies", spec, "--seeds", "1", "--no-plots", "--out",
                     str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("without weights.pt" in err or "--unsafe-unpickle-model-zip" in err), err
        assert not flag.exists() and not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="allow_pickle=True"):
        SB3Policy.load(run / "model.zip")
    assert not flag.exists()


def test_the_zoo_never_loads_a_model_zip(tmp_path, capsys):
    flag = tmp_path / "ran"
    zoo = tmp_path / "zoo"
    agent = zoo / "etf" / "tx2-fig6-random" / "sac"
    crafted_zip(agent / "model.zip", flag)
    shutil.copy(SAC / "provenance.json", agent / "provenance.json")
    assert main(["--suite", "etf", "--quick", "--zoo", str(zoo), "--no-plots", "--out", str(tmp_path / "lb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the zoo is weights-only" in err and not flag.exists(), err


def test_the_unsafe_flag_is_needed_and_warns(tmp_path):
    flag = tmp_path / "ran"
    crafted_zip(tmp_path / "model.zip", flag)
    with pytest.warns(UserWarning, match="unsafe-unpickle-model-zip: unpickling"), pytest.raises(ValueError):
        SB3Policy.load(tmp_path / "model.zip", algo="sac", allow_pickle=True)  # the user asked: SB3 unpickles


def _agent(tmp_path, source: Path = SAC) -> Path:
    target = tmp_path / "agent"
    shutil.copytree(source, target)
    return target


def _load(agent: Path, env_id: str = SAC_ENV):
    return SB3Policy.load(agent).reset(gym.make(env_id))


def _state_with_wrong_shape(agent: Path) -> None:
    state = torch.load(agent / "weights.pt", weights_only=True)
    key = next(k for k in state if k.endswith("weight"))
    state[key] = torch.zeros(state[key].shape[0] + 1, *state[key].shape[1:])
    torch.save(state, agent / "weights.pt")


@pytest.mark.parametrize(("damage", "match"), [
    (lambda a: torch.save({"x": _Payload(a / "ran")}, a / "weights.pt"), "pickled objects other than tensors"),
    (lambda a: (a / "weights.pt").write_bytes(b""), "empty, truncated or damaged"),
    (lambda a: (a / "weights.pt").write_bytes((a / "weights.pt").read_bytes()[:200]), "empty, truncated or damaged"),
    (lambda a: torch.save([torch.zeros(2)], a / "weights.pt"), "must hold a state dict"),
    (_state_with_wrong_shape, "size mismatch"),
    (lambda a: (a / "agent.json").write_text("[1, 2]"), "agent.json: must hold a JSON object"),
    (lambda a: (a / "agent.json").write_text("{"), "agent.json: not valid JSON"),
    (lambda a: (a / "agent.json").write_bytes(b"\xff\xfe"), "agent.json: not UTF-8"),
    (lambda a: _edit(a, algo="dqn"), "agent.json: algo='dqn' does not support Box"),
    (lambda a: _edit(a, algo="nope"), "agent.json: algo"),
    (lambda a: _edit(a, policy_kwargs={"net_arch": ["a"]}), "net_arch must be a list of layer sizes"),
    (lambda a: _edit(a, policy_kwargs={"net_arch": [64, 64], "activation_fn": 5}), "activation_fn"),
    (lambda a: _edit(a, policy_kwargs={"log_std_init": "x"}), "log_std_init"),
    (lambda a: _edit(a, observation_shape="x"), "observation_shape"),
    (lambda a: _edit(a, policy="NoSuchPolicy"), "cannot be built"),
])
def test_malformed_agents_give_one_line_errors_naming_the_file(tmp_path, damage, match):
    agent = _agent(tmp_path)
    damage(agent)
    with pytest.raises(ValueError, match=match) as caught:
        _load(agent)
    message = str(caught.value)
    assert "\n" not in message and "weights_only=False" not in message and str(agent) in message, message
    assert not (agent / "ran").exists()


def test_the_cli_reports_a_malformed_agent_in_one_line(tmp_path, capsys):
    agent = _agent(tmp_path)
    torch.save({"x": _Payload(agent / "ran")}, agent / "weights.pt")
    assert main(["--env", SAC_ENV, "--policies", f"sac:{agent}", "--seeds", "1", "--no-plots", "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weights.pt" in err and "weights_only=False" not in err, err
    assert not (agent / "ran").exists()


def _edit(agent: Path, **changes) -> None:
    meta = json.loads((agent / "agent.json").read_text())
    (agent / "agent.json").write_text(json.dumps({**meta, **changes}))


def test_a_zip_whose_data_is_not_an_object_has_no_algorithm(tmp_path):
    for data in ("[1, 2]", '{"policy_class": [1]}', '"x"'):
        with zipfile.ZipFile(tmp_path / "m.zip", "w") as archive:
            archive.writestr("data", data)
        assert saved_algo(tmp_path / "m.zip") is None


def test_zoo_agent_json_errors_name_the_file(tmp_path):
    zoo = tmp_path / "zoo"
    agent = zoo / "qin" / "paper-rw" / "maskable_ppo"
    shutil.copytree(QIN, agent)
    (agent / "seed0" / "agent.json").write_text("[1, 2]")
    expected = json.loads((QIN / "seed0" / "provenance.json").read_text())["env_id"]
    with pytest.raises(ValueError, match=r"maskable_ppo/seed0/agent\.json: must hold a JSON object"):
        suite.find_agents(zoo, "qin", "paper-rw", expected)
