"""The DREAM event loop (spec §3.1) on hand-made tables: releases, deadlines, cascades, gates, context
switches, drops, the safety cap, the task-level switch, windows, determinism and common random numbers."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.core.simulator import Simulator
from joulegym.envs.dream.mapscore import DreamPolicy
from joulegym.envs.dream.simulator import (
    ALL_LAYERS,
    COMPLETED,
    DISCARDED,
    WAIT,
    App,
    Dispatch,
    DreamSim,
    Drop,
    LayerTable,
    ModelTable,
    Wait,
    Workload,
    crn_uniform,
)
from tests.dream.toy import E_BYTE, model, reset, run_until, sim, table


def run_fixed(s: DreamSim, decisions) -> None:
    """Apply a scripted decision function until the horizon."""
    v = s.view()
    while s.advance():
        s.apply(decisions(v))


def first_ready_first_idle(v):
    return Dispatch(next(iter(v.ready)), v.idle_accs()[0])


def test_follows_core_protocol():
    s = sim({"a": model("a", table("a", [[1.0]]))}, [App("a", 10)])
    assert isinstance(s, Simulator)
    assert s.done is False and s.truncated is False
    view = s.view()
    assert view is not s and not isinstance(view, Simulator) and not hasattr(view, "sim")
    assert not any(hasattr(view, name) for name in ("apply", "advance", "reset"))


def test_periodic_releases_deadlines_and_completion_times():
    # one model, 10 FPS, two layers of 30 ms on one accelerator: frame k runs [0.1k, 0.1k + 0.06]
    s = sim({"a": model("a", table("a", [[30.0], [30.0]]))}, [App("a", 10)], horizon_s=0.5, record_timeline=True)
    reset(s, 0)
    run_fixed(s, first_ready_first_idle)
    assert s.truncated
    assert s.f_release == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert s.f_deadline == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert s.f_end[:4] == pytest.approx([0.06, 0.16, 0.26, 0.36])
    m = s.metrics()
    # deadline 0.5 is not < horizon 0.5: 4 frames counted, none violated -> floor 1/(2*4)
    assert m["frames"] == 4 and m["violated"] == 0
    assert m["overall_rate_dlv"] == pytest.approx(1 / 8)
    assert m["layers"] == 10 and m["dispatches"] == 10  # frame 4 (not counted) still runs both layers


def test_finishing_exactly_at_deadline_meets_it_and_late_frames_keep_running():
    s = sim({"a": model("a", table("a", [[50.0], [50.0]]))}, [App("a", 10)], horizon_s=0.35)
    reset(s, 0)
    run_fixed(s, first_ready_first_idle)
    assert s.f_end[0] == pytest.approx(0.1)
    assert not s.f_violated[0]
    # from then on each frame waits for its predecessor; f1 ends at 0.2 exactly too
    assert s.f_state[1] == COMPLETED and not s.f_violated[1]


def test_late_frame_is_violated_at_its_deadline_and_still_completes():
    s = sim({"a": model("a", table("a", [[80.0], [80.0]]))}, [App("a", 10)], horizon_s=0.45, cap=None)
    reset(s, 0)
    run_fixed(s, first_ready_first_idle)
    assert s.f_violated[0] and s.f_state[0] == COMPLETED and s.f_end[0] == pytest.approx(0.16)
    assert s.metrics()["violated"] == s.metrics()["frames"]


def test_safety_cap_discards_the_oldest_outstanding_frame():
    # an accelerator that never gets work: every frame stays outstanding; cap 2
    s = sim({"a": model("a", table("a", [[10.0]]))}, [App("a", 10)], horizon_s=0.55, cap=2)
    reset(s, 0)
    v = s.view()
    while s.advance():
        s.apply(WAIT)
    assert s.cap_discards == 4  # releases 3..6 each discard one
    assert [s.f_state[i] for i in range(6)] == [DISCARDED] * 4 + [0, 0]
    assert all(s.f_violated[i] for i in range(4))
    assert v.outstanding.keys() == {4, 5}


def test_context_switch_flush_and_fetch_bytes_energy_and_latency():
    # two models, each 2 layers; 2 accelerators; lat_per_byte 1e-6 s (so 10 bytes = 10 us)
    a = table("a", [[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], in_b=[5, 7], out_b=[11, 13])
    b = table("b", [[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], in_b=[2, 3], out_b=[17, 19])
    s = sim({"a": model("a", a), "b": model("b", b)}, [App("a", 1), App("b", 1)], n_acc=2,
            lat_per_byte=np.array([1e-6, 1e-6]), horizon_s=5.0)
    reset(s, 0)
    assert s.advance()
    ta, tb = 0, 1
    assert s.view().switch_bytes(ta, 0) == 0  # nothing resident, first layer's input is in its table entry
    s.apply(Dispatch(ta, 0))
    s.apply(Dispatch(tb, 1))
    assert s.advance()
    assert s.now == pytest.approx(1e-3)
    # a continues on acc 1 where b is resident: flush b's last output (17) + fetch a's next input (7)
    assert s.view().switch_bytes(ta, 1) == 17 + 7
    # a continues on acc 0 (its own activation): free
    assert s.view().switch_bytes(ta, 0) == 0
    assert s.view().switch_energy(ta, 1) == pytest.approx(24 * E_BYTE)
    s.apply(Dispatch(ta, 1))
    assert s.acc_busy_until[1] == pytest.approx(1e-3 + 1e-3 + 24e-6)
    # the flush is b's data movement (charged to b), the fetch a's (docs §3 #7)
    assert s.f_energy[ta] == pytest.approx(2.0 + 7 * E_BYTE)
    assert s.f_energy[tb] == pytest.approx(1.0 + 17 * E_BYTE)
    assert s.context_switches == 1
    # acc 0 no longer holds a's activation (it moved with the fetch): b there pays only its fetch (in_b[1] = 3)
    assert s.acc_resident[0] == -1
    assert s.view().switch_bytes(tb, 0) == 3


def test_worst_case_energy_is_the_nominal_path_on_the_hungriest_accelerator():
    t = table("a", [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], [[1.0, 4.0], [3.0, 2.0], [5.0, 5.0]], skip=[[1, 2]])
    s = sim({"a": model("a", t)}, [App("a", 10, p_dynamic=1.0)], n_acc=2, horizon_s=0.2)
    reset(s, 0)
    run_fixed(s, first_ready_first_idle)
    assert s.f_worst[0] == pytest.approx(4 + 3 + 5)
    # layer 1 is always skipped (p = 1): frame 0 runs layers 0, 2 on acc 0: 1 + 5
    assert s.f_energy[0] == pytest.approx(6.0)
    assert s.metrics()["norm_energy/a"] == pytest.approx(6 / 12)


def test_skipnet_gates_and_early_exits_follow_the_presampled_outcomes():
    skip_t = table("s", [[1.0]] * 6, skip=[[1, 3], [3, 5]])
    exit_t = table("e", [[1.0]] * 5, exits=[1, 3])
    s = sim({"s": model("s", skip_t), "e": model("e", exit_t)},
            [App("s", 10, p_dynamic=0.5), App("e", 10, p_dynamic=0.5)], horizon_s=1.0, record_timeline=True)
    reset(s, 7)
    run_fixed(s, first_ready_first_idle)
    layers_run: dict[int, int] = {}
    for _a, t0, t1, _m, _k, i in s.timeline:
        layers_run[i] = layers_run.get(i, 0) + round((t1 - t0) / 1e-3)
    key = s._seed_key
    for i in range(len(s.f_state)):
        if s.f_state[i] != COMPLETED:
            continue
        m, k = s.f_model[i], s.f_frame[i]
        nk = s._name_keys[m]
        if s.model_names[m] == "s":
            expect = 6 - sum(2 for b in range(2) if crn_uniform(key, nk, k, 1 + b) < 0.5)
        else:
            taken = [crn_uniform(key, nk, k, 1001 + b) < 0.5 for b in range(2)]
            expect = 2 if taken[0] else 4 if taken[1] else 5
        assert layers_run[i] == expect, (s.model_names[m], k)
    assert len(set(layers_run.values())) > 1  # the outcomes do vary


def test_min_to_go_is_a_lower_bound_and_to_go_the_worst_case_mean():
    skip_t = table("s", [[1.0, 3.0], [2.0, 1.0], [4.0, 4.0], [1.0, 2.0]], skip=[[1, 3]])
    s = sim({"s": model("s", skip_t)}, [App("s", 10, p_dynamic=0.5)], n_acc=2, horizon_s=0.1)
    reset(s, 0)
    s.advance()
    # at layer 0: best = 1 (layer 0) + skip block [1, 3) skipped + 1 (layer 3) = 2 ms
    assert s.view().min_to_go(0) == pytest.approx(2e-3)
    assert s.view().to_go(0) == pytest.approx((2 + 1.5 + 4 + 1.5) * 1e-3)


def test_cascade_child_released_with_probability_and_inherits_deadline():
    tabs = {"p": model("p", table("p", [[10.0, 10.0]])), "c": model("c", table("c", [[10.0, 10.0]]))}
    apps = [App("p", 10), App("c", 10, parent="p", p=0.5)]
    s = sim(tabs, apps, n_acc=2, horizon_s=2.0)
    reset(s, 3)
    run_fixed(s, first_ready_first_idle)
    children = [i for i in range(len(s.f_state)) if s.model_names[s.f_model[i]] == "c"]
    parents = {s.f_frame[i]: i for i in range(len(s.f_state)) if s.model_names[s.f_model[i]] == "p"}
    assert 3 <= len(children) <= 17  # 20 parents, p = 0.5
    for i in children:
        par = parents[s.f_frame[i]]
        assert s.f_release[i] == pytest.approx(s.f_end[par])
        assert s.f_deadline[i] == s.f_deadline[par]
        assert crn_uniform(s._seed_key, s._name_keys[1], s.f_frame[i], 0) < 0.5
    own = sim(tabs, apps, n_acc=2, horizon_s=2.0, child_deadline="own_period")
    reset(own, 3)
    run_fixed(own, first_ready_first_idle)
    for i in range(len(own.f_state)):
        if own.model_names[own.f_model[i]] == "c":
            assert own.f_deadline[i] == pytest.approx(own.f_release[i] + 0.1)


def test_drop_of_a_running_frame_frees_the_accelerator_at_chunk_end_without_children():
    tabs = {"p": model("p", table("p", [[10.0], [10.0]])), "c": model("c", table("c", [[10.0]]))}
    s = sim(tabs, [App("p", 10), App("c", 10, parent="p", p=1.0)], horizon_s=0.1)
    reset(s, 0)
    s.advance()
    s.apply(Dispatch(0, 0))
    s.apply(Drop(0))
    assert s.acc_running[0] == 0  # its layer keeps running
    with pytest.raises(ValueError, match=r"Drop.task=0 is not outstanding"):
        s.apply(Drop(0))
    assert not s.advance()  # nothing ready again until the horizon: no child, no second layer
    assert s.f_violated[0] and s.drops == 1 and len(s.f_state) == 1
    assert s.f_energy[0] == pytest.approx(1.0)


def test_supernet_variant_choice_and_lock():
    heavy = table("v0", [[1.0]] * 5)
    light = table("v1", [[1.0]] * 4)
    s = sim({"o": model("o", heavy, light, switch_point=2)}, [App("o", 10)], horizon_s=0.1)
    reset(s, 0)
    s.advance()
    assert not s.view().at_switch_point(0)
    s.apply(Dispatch(0, 0, 2))
    s.advance()
    assert s.view().at_switch_point(0)
    assert s.view().min_to_go(0) == pytest.approx(2e-3)  # the lightest open variant (layers 2, 3 of v1)
    s.apply(Dispatch(0, 0, 1, variant=1))
    s.advance()
    assert not s.view().at_switch_point(0)
    with pytest.raises(ValueError, match="past its switch point"):
        s.apply(Dispatch(0, 0, 1, variant=0))
    run_fixed(s, first_ready_first_idle)
    assert s.f_state[0] == COMPLETED and s.layers == 4
    assert s.metrics()["subnet/v1"] == 1


def test_task_level_switch_cancels_absent_models_and_restarts_releases():
    tabs = {n: model(n, table(n, [[30.0]])) for n in ("a", "b", "c")}
    wl2 = Workload("two", (App("b", 10), App("c", 5)))
    s = DreamSim(tabs, Workload("one", (App("a", 10), App("b", 10))), acc_pes=[1024],
                 switch_lat_per_byte=[0.0], switch_energy_per_byte=E_BYTE, horizon_s=1.0,
                 switch=(0.45, wl2, tabs, [0.0]), record_timeline=True, release_phase="sync")
    reset(s, 0)
    v = s.view()
    while s.advance():
        s.apply(WAIT if s.now < 0.42 else first_ready_first_idle(v))  # a backlog builds up before the switch
    names = s.model_names
    assert names == ("a", "b", "c")
    a_frames = [i for i in range(len(s.f_state)) if names[s.f_model[i]] == "a"]
    assert max(s.f_release[i] for i in a_frames) < 0.45
    assert s.cancelled > 0
    c_rel = sorted(s.f_release[i] for i in range(len(s.f_state)) if names[s.f_model[i]] == "c")
    assert c_rel[0] == pytest.approx(0.45) and c_rel[1] == pytest.approx(0.65)
    # cancelled frames whose deadline had not passed are not counted anywhere
    for i in a_frames:
        if s.f_state[i] == 4:
            assert s.f_counted[i] == (s.f_deadline[i] <= 0.45)
    assert s.active_models() == (1, 2)


def test_window_stats_of_the_episode_window_equal_the_running_sums():
    s = DreamSim.from_catalog("ar-social", "4k-1ws2os", horizon_s=0.5)
    run_inner(s, make_inner("edf", family="dream"), 1)
    w = s.window_stats(0.0, 0.5)
    assert w["frames"] == s.acc_frames and w["violated"] == s.acc_violated
    assert w["energy"] == pytest.approx(s.acc_energy) and w["worst"] == pytest.approx(s.acc_worst)
    assert s.window_uxcost(0.0, 0.5) == pytest.approx(s.metrics()["uxcost"])


def test_advance_until_stops_between_windows_without_losing_decisions():
    whole = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=0.6)
    ref = run_inner(whole, make_inner("edf", family="dream"), 5)
    parts = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=0.6)
    parts.reset(np.random.default_rng(5))  # the episode run_inner(..., 5) runs
    sched = make_inner("edf", family="dream")
    sched.reset(parts, np.random.default_rng(0))
    for t1 in (0.1, 0.25, 0.4, None):
        run_until(parts, sched, t1)
        if t1 is not None:
            assert parts.now <= t1 + 1e-12 and not parts.truncated
    assert parts.truncated
    assert parts.metrics() == ref


def test_same_seed_same_trajectory_and_metrics():
    s1 = DreamSim.from_catalog("vr-gaming", "4k-1os2ws", horizon_s=0.5, record_timeline=True)
    s2 = DreamSim.from_catalog("vr-gaming", "4k-1os2ws", horizon_s=0.5, record_timeline=True)
    for sched in ("random-dispatch", "mapscore-fixed"):
        m1 = run_inner(s1, make_inner(sched, family="dream"), 11)
        m2 = run_inner(s2, make_inner(sched, family="dream"), 11)
        assert m1 == m2 and s1.timeline == s2.timeline
    m3 = run_inner(s2, make_inner("random-dispatch", family="dream"), 12)
    assert m3 != m1


def test_common_random_numbers_across_schedulers():
    """Every scheduler sees the same releases and the same dynamic outcomes under a seed."""
    outcomes = []
    for name in ("fcfs", "edf", "veltair"):
        s = DreamSim.from_catalog("ar-call", "8k-2ws", horizon_s=1.0, cap=None, record_timeline=True)
        run_inner(s, make_inner(name, family="dream"), 4)
        children = sorted((s.f_model[i], s.f_frame[i]) for i in range(len(s.f_state))
                          if s.model_names[s.f_model[i]] == "gnmt")
        roots = sorted((s.f_model[i], s.f_frame[i], s.f_release[i]) for i in range(len(s.f_state))
                       if s.model_names[s.f_model[i]] != "gnmt")
        # SkipNet: the layers a completed frame ran are fixed by the pre-sampled gates
        ran = {(s.f_model[i], s.f_frame[i]): s.f_layers[i] for i in range(len(s.f_state))
               if s.f_state[i] == COMPLETED}
        outcomes.append((children, roots, ran))
    common = outcomes[0][2].keys() & outcomes[1][2].keys() & outcomes[2][2].keys()
    assert len(common) > 20
    assert len({outcomes[0][2][key] for key in common}) > 1  # skips do happen
    for key in common:
        assert outcomes[0][2][key] == outcomes[1][2][key] == outcomes[2][2][key]
    assert outcomes[0][0] == outcomes[1][0] == outcomes[2][0]
    assert outcomes[0][1] == outcomes[1][1] == outcomes[2][1]


def test_bad_input_raises_value_error_naming_the_field():
    t = table("a", [[1.0]])
    with pytest.raises(ValueError, match="fps"):
        App("a", -5)
    with pytest.raises(ValueError, match="p="):
        App("a", 5, parent="b", p=1.5)
    with pytest.raises(ValueError, match="latency"):
        LayerTable("x", np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="energy"):
        LayerTable("x", np.ones((2, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError, match="skip_blocks"):
        LayerTable("x", np.ones((2, 1)), np.ones((2, 1)), skip_blocks=[[1, 5]])
    with pytest.raises(ValueError, match="switch_point"):
        ModelTable("o", (t, t), switch_point=3)
    with pytest.raises(ValueError, match="parent"):
        Workload("w", (App("a", 5, parent="zzz", p=0.5),))
    with pytest.raises(ValueError, match="has no cost table"):
        sim({"a": model("a", t)}, [App("b", 5)])
    with pytest.raises(ValueError, match="child_deadline"):
        sim({"a": model("a", t)}, [App("a", 5)], child_deadline="never")
    with pytest.raises(ValueError, match="cap"):
        sim({"a": model("a", t)}, [App("a", 5)], cap=0)
    with pytest.raises(ValueError, match="horizon_s"):
        sim({"a": model("a", t)}, [App("a", 5)], horizon_s=-1)
    with pytest.raises(ValueError, match="hw="):
        DreamSim.from_catalog("vr-gaming", "3k-9ws")
    with pytest.raises(ValueError, match="scenario="):
        DreamSim.from_catalog("vr-racing", "4k-2ws")
    s = sim({"a": model("a", table("a", [[10.0], [10.0]]))}, [App("a", 10), ], horizon_s=0.3)
    reset(s, 0)
    s.advance()
    with pytest.raises(ValueError, match=r"Dispatch.variant=2"):
        s.apply(Dispatch(0, 0, 1, variant=2))
    with pytest.raises(ValueError, match=r"Dispatch.n_layers"):
        s.apply(Dispatch(0, 0, 0))
    s.apply(Dispatch(0, 0))
    with pytest.raises(ValueError, match=r"Dispatch.acc=0 is busy"):
        s.apply(Dispatch(0, 0))
    with pytest.raises(ValueError, match=r"Dispatch.acc=3"):
        s.apply(Dispatch(0, 3))
    with pytest.raises(ValueError, match=r"Dispatch.task=9"):
        s.apply(Dispatch(9, 0))
    with pytest.raises(ValueError, match="wakeup_s"):
        s.apply(Wait(math.inf))
    with pytest.raises(ValueError, match="decision="):
        s.apply("dispatch")


def test_all_layers_dispatch_runs_the_model_in_one_chunk():
    s = sim({"a": model("a", table("a", [[10.0], [20.0], [30.0]]))}, [App("a", 10)], horizon_s=0.1)
    reset(s, 0)
    s.advance()
    s.apply(Dispatch(0, 0, ALL_LAYERS))
    assert s.acc_busy_until[0] == pytest.approx(0.06)
    run_fixed(s, first_ready_first_idle)
    assert s.f_end[0] == pytest.approx(0.06) and s.dispatches == 1 and s.layers == 3


def test_dream_full_vr_gaming_episode_under_two_cpu_seconds():
    """Speed (docs §7): a 2 s VR_Gaming episode (~10^4 layer dispatches) with DREAM-Full < 2 s CPU on the fast
    path (fixed parameters: the offline tuning is a one-off per configuration, cached)."""
    s = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=2.0)
    sched = DreamPolicy("full", "fixed", 0.0, 0.6)
    t0 = time.process_time()
    m = run_inner(s, sched, 0)
    cpu = time.process_time() - t0
    assert m["dispatches"] > 10_000
    assert cpu < 2.0, f"DREAM-Full VR_Gaming episode took {cpu:.2f} s CPU"


def test_chunk_granularity_dispatches_whole_chunks():
    """``granularity="chunk:N"``: a model's layers cut into at most N chunks of consecutive layers (a Supernet's stem
    a chunk of its own); any dispatch runs the rest of the chunk it starts in, and the decision costs are the
    chunk's (docs §4)."""
    from joulegym.envs.dream.tables import chunk_ends, parse_granularity

    assert chunk_ends(6, None) == [1, 2, 3, 4, 5, 6]
    assert chunk_ends(6, 2) == [3, 3, 3, 6, 6, 6]
    assert chunk_ends(5, 9) == [1, 2, 3, 4, 5]  # never more chunks than layers
    assert chunk_ends(7, 3, switch_point=2) == [2, 2, 4, 4, 7, 7, 7]  # stem [0, 2), then 2 chunks
    assert parse_granularity("layer") is None and parse_granularity("chunk:4") == 4
    for bad in ("chunk:0", "chunk:x", "chunks:2", 3):
        with pytest.raises(ValueError, match="granularity"):
            parse_granularity(bad)
    s = sim({"a": model("a", table("a", [[10.0], [20.0], [30.0], [40.0]]))}, [App("a", 5)], horizon_s=0.2,
            granularity="chunk:2")
    reset(s, 0)
    s.advance()
    v = s.view()
    assert v.next_lat(0) == pytest.approx((0.03,))  # the chunk [0, 2): 10 + 20 ms
    s.apply(Dispatch(0, 0))  # one unit: the whole first chunk
    assert s.acc_busy_until[0] == pytest.approx(0.03) and s.layers == 2
    s.advance()
    assert s.f_pos[0] == 2 and v.next_lat(0) == pytest.approx((0.07,))
    s.apply(Dispatch(0, 0, ALL_LAYERS))  # coarser requests stay coarser
    assert s.acc_busy_until[0] == pytest.approx(0.1) and s.layers == 4


@pytest.mark.parametrize("name", ["planaria", "veltair", "dream-full", "random-dispatch"])
def test_energy_floor_bounds_every_completed_frame(name):
    """:meth:`DreamSim.energy_floor` (the R5 bound, docs/families/dream-cost-model.md "Energy"): no completed frame
    of any scheduler spent less than its floor, and the floor is not simply the spend (some frames spent more)."""
    s = DreamSim.from_catalog("ar-call", "4k-1os2ws", horizon_s=0.3)
    run_inner(s, make_inner(name, family="dream"), 2)
    done = [i for i, state in enumerate(s.f_state) if state == COMPLETED]
    assert done
    floors = {i: s.energy_floor(i) for i in done}
    assert all(0.0 < floors[i] <= s.f_energy[i] * (1 + 1e-12) for i in done)
    assert any(s.f_energy[i] > floors[i] * (1 + 1e-6) for i in done)


def test_a_fork_continues_like_the_original_and_shares_no_episode_state():
    sim = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.4)
    policy = make_inner("edf", family="dream")
    sim.reset(np.random.default_rng(0), 5)
    policy.reset(sim, np.random.default_rng(0))
    for _ in range(400):
        assert sim.advance()
        sim.apply(policy.decide(sim.view()))
    fork = sim.fork()
    before = sim.metrics()
    view = fork.view()
    while fork.advance():  # the fork runs to the end; the original does not move
        fork.apply(policy.decide(view))
    assert sim.metrics() == before and fork.view() is not sim.view()
    view = sim.view()
    while sim.advance():
        sim.apply(policy.decide(view))
    assert sim.metrics() == fork.metrics()
    assert run_inner(sim, policy, 0, instance=5) == fork.metrics()  # the same as the episode run in one go
