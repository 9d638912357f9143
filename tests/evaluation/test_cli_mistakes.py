"""CLI mistakes get one-line errors naming what is allowed (exit 2), or the right thing happens (docs/robustness.md):
policy kwarg typos, an agent loaded as the wrong algorithm, a bare model path, ``--quick`` alone, family names
in any case, rl-zoo3 ``lin_`` schedules, evaluation on the agent's training env and the command train.py prints."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from joulegym import baselines

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "joulegym/ETFPhi-tx2-fig5-v0"
ENV_KWARGS = {"horizon": 20}


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _one_line_error(proc: subprocess.CompletedProcess, prog: str = "evaluate.py") -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr and lines[-1].startswith(f"{prog}: error: "), proc.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """A tiny PPO run trained with an rl-zoo3 ``lin_1e-3`` learning-rate schedule; ``(run dir, train stdout)``."""
    pytest.importorskip("stable_baselines3")
    import contextlib
    import io

    from joulegym.training import main as train_main

    tmp = tmp_path_factory.mktemp("ppo")
    hyper = tmp / "hyper.yml"
    hyper.write_text("default:\n  n_steps: 32\n  batch_size: 32\n  n_epochs: 1\n  learning_rate: lin_1e-3\n")
    out, buffer = tmp / "run", io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = train_main(["--env", ENV_ID, "--env-kwargs", json.dumps(ENV_KWARGS), "--algo", "ppo",
                           "--timesteps", "64", "--hyperparams", str(hyper), "--out", str(out),
                           "--no-progress-bar", "--no-tensorboard"])
    assert code == 0
    return out, buffer.getvalue()


def test_policy_kwarg_typo_names_the_keywords(tmp_path):
    line = _one_line_error(_run("evaluate.py", "--policies", "etf-fixed-phi:ph=0.5", "--seeds", "1", "--no-plots",
                                "--out", str(tmp_path / "o")))
    assert "takes no keyword ['ph']" in line and "'phi'" in line


def test_quick_needs_reproduce_or_suite():
    line = _one_line_error(_run("evaluate.py", "--quick"))
    assert "--reproduce" in line and "--suite" in line


def test_console_scripts_print_their_own_names():
    bindir = Path(sys.executable).parent
    for script in ("joulegym-evaluate", "joulegym-train"):
        if not (bindir / script).is_file():
            pytest.skip(f"{script} is not installed in this environment")
        proc = subprocess.run([str(bindir / script), "--help"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {script} "), proc.stdout[:200]


def test_available_accepts_any_case_and_names_families():
    assert baselines.available("ETF") == baselines.available("etf")
    assert "etf-fixed-phi" in baselines.available("ETF")
    with pytest.raises(ValueError, match=r"family='ETX' is unknown; families: \[.*'etf'"):
        baselines.available("ETX")


def test_zoo_linear_schedule():
    from joulegym.agents.algos import LinearSchedule, split_run_keys

    params, _ = split_run_keys({"learning_rate": "lin_1e-3", "clip_range": "lin_0.2", "n_steps": 32})
    assert isinstance(params["learning_rate"], LinearSchedule)
    assert params["learning_rate"](1.0) == pytest.approx(1e-3) and params["learning_rate"](0.25) == pytest.approx(
        2.5e-4)
    assert params["clip_range"](0.5) == pytest.approx(0.1) and params["n_steps"] == 32
    with pytest.raises(ValueError, match=r"learning_rate='exp_1e-3'.*'lin_<value>'"):
        split_run_keys({"learning_rate": "exp_1e-3"})


def test_trained_with_schedule_and_wrong_algorithm_is_refused(ppo_run, tmp_path):
    run, _ = ppo_run
    config = json.loads((run / "config.json").read_text())
    assert config["complete"] and config["hyperparams"]["learning_rate"] == "lin_1e-3"
    from joulegym.agents.algos import saved_algo

    assert saved_algo(run / "model.zip") == "ppo"
    for spec, wanted in ((f"sac:{run}", "'ppo' agent, not 'sac'"),
                         (f"a2c:{run / 'model.zip'}", "holds a 'ppo' model, not 'a2c'")):
        line = _one_line_error(_run("evaluate.py", "--policies", spec, "--seeds", "1", "--no-plots", "--out",
                                    str(tmp_path / "o"), "--unsafe-unpickle-model-zip"))
        assert wanted in line, line


def test_printed_command_is_complete_and_bare_model_path_evaluates(ppo_run, tmp_path):
    run, stdout = ppo_run
    (command,) = [ln.removeprefix("evaluate: ") for ln in stdout.splitlines() if ln.startswith("evaluate: ")]
    argv = shlex.split(command)
    assert argv[:2] == ["python", "evaluate.py"]
    assert argv[argv.index("--env") + 1] == ENV_ID and json.loads(argv[argv.index("--env-kwargs") + 1]) == ENV_KWARGS
    assert argv[argv.index("--policies") + 1] == f"random,ppo:{run / 'agent'}" and "--out" in argv
    proc = _run(*argv[1:], "--seeds", "1", "--no-plots")  # the printed command, as printed, runs
    assert proc.returncode == 0, proc.stderr
    # a bare model.zip: the algorithm and the training env come from the run's config.json; loaded only when the
    # user says it may be unpickled, with a warning
    out = tmp_path / "bare"
    refused = _run("evaluate.py", "--policies", f"{run / 'model.zip'}", "--seeds", "1", "--no-plots", "--out", str(out))
    assert "--unsafe-unpickle-model-zip" in _one_line_error(refused) and not out.exists()
    proc = _run("evaluate.py", "--policies", f"{run / 'model.zip'}", "--seeds", "1", "--no-plots", "--out", str(out),
                "--unsafe-unpickle-model-zip")
    assert proc.returncode == 0, proc.stderr
    board = (out / "leaderboard.md").read_text()
    assert board.startswith(f"# {ENV_ID}") and json.dumps(ENV_KWARGS) in board and "| ppo" in board
    assert "trained on" not in proc.stderr and "unpickling" in proc.stderr


def test_told_another_env_warns(ppo_run, capsys):
    from joulegym.evaluation.cli import _env_and_kwargs, parse_args

    run, _ = ppo_run
    assert _env_and_kwargs(parse_args(["--policies", f"ppo:{run}"])) == (ENV_ID, ENV_KWARGS)
    assert capsys.readouterr().err == ""
    env_id, kwargs = _env_and_kwargs(parse_args(["--policies", f"ppo:{run}", "--env-kwargs", "{}"]))
    assert (env_id, kwargs) == (ENV_ID, {})  # evaluated where asked ...
    assert (f"warning: the agent {run} was trained on {ENV_ID} with env kwargs {json.dumps(ENV_KWARGS)}; "
            f"evaluating it on {ENV_ID} with {{}}") in capsys.readouterr().err  # ... with a warning
