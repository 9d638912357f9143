"""``evaluate.py --record``: each evaluated policy's or agent's first episode as an animation of the env's frames."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from joulegym.evaluation.cli import main
from joulegym.evaluation.record import episode_frames, file_label, write_animation

SHORT = '{"horizon": 3}'


def _gif_frames(path) -> list[np.ndarray]:
    image = Image.open(path)
    frames = []
    for k in range(image.n_frames):
        image.seek(k)
        frames.append(np.asarray(image.convert("RGB")))
    return frames


def _gif_duration_ms(path) -> int:
    """The animation's length (Pillow merges equal consecutive frames and adds their durations)."""
    image = Image.open(path)
    total = 0
    for k in range(image.n_frames):
        image.seek(k)
        total += image.info["duration"]
    return total


def test_record_writes_one_animation_per_policy_of_its_first_episode(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--env", "joulegym/ETF-tx2-fig5-v0", "--env-kwargs", SHORT, "--policies", "etf,random", "--seeds", "2",
                 "--no-plots", "--record", "--out", str(out)]) == 0
    for label in ("etf", "random"):
        path = out / f"episode-{label}.gif"
        assert _gif_duration_ms(path) == 4 * 250  # the reset's frame and one per epoch (horizon 3), 4 fps
        frames = _gif_frames(path)
        assert frames[0].shape[2] == 3 and len({f.tobytes() for f in frames}) > 1  # the episode moves
    assert "episode-etf.gif" in capsys.readouterr().out


def test_recorded_frames_are_the_evaluated_episode():
    """The animation replays the first held-out seed: its frames are those of the same policy and seed again."""
    from joulegym import baselines

    first, fps = episode_frames("joulegym/ETF-tx2-fig5-v0", {"horizon": 2}, baselines.make("etf", family="etf"), 10000)
    again, _ = episode_frames("joulegym/ETF-tx2-fig5-v0", {"horizon": 2}, baselines.make("etf", family="etf"), 10000)
    assert len(first) == 3 and fps > 0
    assert all(np.array_equal(a, b) for a, b in zip(first, again))


def test_record_frames_caps_a_long_episode(tmp_path):
    out = tmp_path / "run"
    assert main(["--env", "joulegym/DREAM-tiny-v0", "--policies", "random", "--seeds", "1", "--no-plots",
                 "--record", "gif", "--record-frames", "5", "--out", str(out)]) == 0
    assert Image.open(out / "episode-random.gif").n_frames <= 5


def test_record_an_agent(tmp_path):
    """A trained agent (the shipped PowerFlow-tiny MaskablePPO, weights-only) is recorded like a reference policy."""
    pytest.importorskip("sb3_contrib")
    from pathlib import Path

    import joulegym

    agent = Path(joulegym.__file__).parent / "agents" / "zoo" / "powerflow" / "tiny" / "maskable_ppo"
    out = tmp_path / "run"
    assert main(["--env", "joulegym/PowerFlow-tiny-v0", "--policies", f"maskable_ppo:{agent}", "--seeds", "1",
                 "--no-plots", "--record", "--record-frames", "4", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("episode-*.gif")) == ["episode-maskable_ppo.gif", "episode-random.gif"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--record", "avi"], "--record must be one of ['gif', 'mp4'], got 'avi'"),
    (["--record-frames", "5"], "--record-frames applies only with --record"),
    (["--record", "--record-frames", "0"], "--record-frames must be >= 1, got 0"),
    (["--suite", "etf", "--record"], "--record applies only when evaluating policies on one env"),
])
def test_record_mistakes_are_one_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_mp4_without_ffmpeg_says_so(monkeypatch, capsys):
    from matplotlib import animation

    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    with pytest.raises(SystemExit):
        main(["--record", "mp4"])
    assert "--record mp4 needs the ffmpeg program on the PATH" in capsys.readouterr().err


def test_file_label_keeps_a_file_name_part():
    assert file_label("ppo:runs/x") == "ppo-runs-x" and file_label("etf-fixed-phi:phi=0.5") == "etf-fixed-phi-phi-0.5"


def test_write_animation_gif_round_trip(tmp_path):
    frames = [np.full((8, 10, 3), k * 40, dtype=np.uint8) for k in range(4)]
    path = write_animation(frames, tmp_path / "a.gif", fps=4.0)
    back = _gif_frames(path)
    assert len(back) == 4 and back[2].shape == (8, 10, 3) and Image.open(path).info["duration"] == 250
