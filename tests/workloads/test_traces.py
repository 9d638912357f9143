"""Trace loaders (joulegym.workloads.traces): the real public files, malformed rows, detection, round trip.

The real files are read at run time from ``../shared/reference-data`` (never copied into the repo); the facts
asserted on them were counted from the files themselves (see PROVENANCE.md there for the origins).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.workloads.traces import (
    FORMATS,
    PAI2020_TASK_COLUMNS,
    JobTrace,
    detect_format,
    load_trace,
    load_trace_with_report,
    save_trace,
)
from tests.reference_data import REF

ELASTICFLOW = REF / "elasticflow" / "philly_103959.csv"
POLLUX_DAY = REF / "pollux-philly" / "philly_2017-10-13_24h.csv"
POLLUX_ALL = REF / "pollux-philly" / "philly.csv"
TIRESIAS = REF / "tiresias" / "60_job.csv"
OPENB = REF / "alibaba-pai" / "cluster-trace-gpu-v2023" / "csv" / "openb_pod_list_default.csv"
PAI_HEADER = REF / "alibaba-pai" / "cluster-trace-gpu-v2020" / "data" / "pai_task_table.header"
GAVEL_MSR = REF / "gavel" / "traces" / "msr" / "seed=0" / "103959.trace"
GAVEL_PHYS = REF / "gavel" / "traces" / "physical_cluster" / "artifact_evaluation.trace"

DAY_S = 86_400.0


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"reference file {path} is absent (the shared reference-data checkout is not next to the repo)")
    return path


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _assert_sorted_rebased(trace: JobTrace) -> None:
    assert trace.submit_time_s[0] == 0.0
    assert np.all(np.diff(trace.submit_time_s) >= 0)
    assert trace.submit_time_s.dtype == np.float64 and trace.num_gpus.dtype == np.int64
    assert trace.batch_size.dtype == np.int64 and trace.iterations.dtype == np.float64
    assert trace.duration_s.dtype == np.float64
    assert trace.job_id.dtype.kind == "U" and trace.model.dtype.kind == "U"
    assert np.all(trace.num_gpus >= 1)
    assert all(v.shape == (len(trace),) for v in trace.extra.values())


# --------------------------------------------------------------------------------------------- real files


def test_elasticflow_philly_103959():
    trace, report = load_trace_with_report(_need(ELASTICFLOW))
    assert report.format == "philly (elasticflow)" and report.rows_read == 876 and report.jobs_dropped == 0
    assert len(trace) == 876
    _assert_sorted_rebased(trace)
    assert Counter(trace.model.tolist()) == {
        "resnet50": 214,
        "vgg16": 186,
        "gpt2": 126,
        "bert": 122,
        "deepspeech2": 118,
        "inception3": 110,
    }
    assert Counter(trace.num_gpus.tolist()) == {1: 513, 2: 33, 4: 330}
    assert Counter(trace.batch_size.tolist()) == {64: 330, 128: 306, 256: 186, 32: 54}
    assert trace.submit_time_s[-1] == 7_910_536.0  # about 91.6 days
    assert np.all(np.isfinite(trace.iterations)) and np.all(np.isfinite(trace.duration_s))
    assert trace.duration_s.min() == 602.0 and trace.duration_s.max() == 1_792_395.0
    # The file's "real_*" columns equal the ones used; ddl (absolute deadline) is kept in extra.
    np.testing.assert_array_equal(trace.extra["real_iteration"], trace.iterations)
    np.testing.assert_array_equal(trace.extra["real_duration"], trace.duration_s)
    assert set(trace.extra) == {"real_iteration", "ddl", "real_duration"}
    assert trace.job_id[:3].tolist() == ["0", "1", "2"] and trace.iterations[0] == 1_282_877


def test_pollux_24h_day():
    trace, report = load_trace_with_report(_need(POLLUX_DAY))
    assert report.format == "philly (pollux)"
    assert len(trace) == 1896
    _assert_sorted_rebased(trace)
    assert Counter(trace.num_gpus.tolist()) == {1: 1842, 2: 19, 4: 21, 8: 13, 16: 1}
    span = trace.submit_time_s[-1]
    assert span == 86_134.0  # 00:00:06 to 23:55:40
    assert span < DAY_S < span + trace.duration_s[-1] + DAY_S
    assert trace.extra["timestamp"][0] == "2017-10-13 00:00:06"
    assert trace.extra["timestamp"][-1] == "2017-10-13 23:55:40"
    # Pollux's log has durations only: no models, batch sizes or iterations.
    assert set(trace.model.tolist()) == {""} and np.all(trace.batch_size == 0) and np.all(np.isnan(trace.iterations))
    assert trace.duration_s.min() == 5.0 and trace.duration_s.max() == 2_028_350.0
    np.testing.assert_array_equal(trace.extra["gpu_time"], trace.duration_s * trace.num_gpus)
    assert Counter(trace.extra["cluster"].tolist())["6214e9"] == 1294


def test_pollux_full_log_sorted_and_contains_the_day():
    full = load_trace(_need(POLLUX_ALL))
    assert len(full) == 82_247  # the file ends with a blank line, which is not a job
    _assert_sorted_rebased(full)
    # philly.csv is not in time order; the loader sorts it.
    assert full.extra["timestamp"][0] == "2017-09-04 10:30:41" and full.extra["timestamp"][-1] == "2017-12-22 08:02:11"
    span = pd.Timestamp("2017-12-22 08:02:11") - pd.Timestamp("2017-09-04 10:30:41")
    assert full.submit_time_s[-1] == span.total_seconds() == 9_408_690.0  # about 108.9 days
    assert len(set(full.extra["cluster"].tolist())) == 15
    assert Counter(full.num_gpus.tolist())[128] == 3
    # The 24 h file is exactly the rows of 2017-10-13 (PROVENANCE recipe).
    day = full.select(np.char.startswith(full.extra["timestamp"], "2017-10-13"))
    sliced = load_trace(_need(POLLUX_DAY))
    np.testing.assert_array_equal(day.submit_time_s, sliced.submit_time_s)
    np.testing.assert_array_equal(day.num_gpus, sliced.num_gpus)
    assert sorted(day.duration_s.tolist()) == sorted(sliced.duration_s.tolist())


def test_tiresias_60_jobs():
    trace = load_trace(_need(TIRESIAS), format="philly")
    assert len(trace) == 60
    _assert_sorted_rebased(trace)
    assert trace.submit_time_s[-1] == 1779.0
    assert Counter(trace.num_gpus.tolist()) == {1: 30, 2: 10, 4: 10, 8: 10}
    assert len(set(trace.model.tolist())) == 10 and np.all(np.isfinite(trace.iterations))
    # "interval" is the gap to the next submission.
    np.testing.assert_array_equal(np.diff(trace.submit_time_s), trace.extra["interval"][:-1])


def test_openb_pods_zero_gpu_rows_raise_unless_dropped():
    path = _need(OPENB)
    # openb-pod-0005 (line 7) is the first CPU-only pod.
    with pytest.raises(ValueError, match=r"openb_pod_list_default.csv line 7: num_gpu .*drop_zero_gpu=True"):
        load_trace(path)
    trace, report = load_trace_with_report(path, drop_zero_gpu=True)
    assert report.format == "openb" and report.rows_read == 8152
    assert report.dropped == {"zero_gpu": 1088} and report.dropped_lines["zero_gpu"][0] == 7
    assert len(trace) == 8152 - 1088
    _assert_sorted_rebased(trace)
    assert Counter(trace.num_gpus.tolist()) == {1: 6989, 8: 44, 2: 16, 4: 15}
    # Fractional shares round up to one GPU; the exact request is kept.
    request = trace.extra["gpu_request"]
    assert np.all(trace.num_gpus == np.ceil(request)) and (request < 1).sum() > 0
    assert np.all(request == trace.extra["num_gpu"] * trace.extra["gpu_milli"] / 1000)
    assert np.all(trace.duration_s >= 0) and trace.duration_s.max() == 12_537_496.0  # openb-pod-0000
    assert trace.job_id[0] == "openb-pod-0000"
    pending = trace.extra["pod_phase"] == "Pending"
    assert np.all(np.isnan(trace.extra["scheduled_time"][pending]))


def test_pai2020_columns_match_the_published_header():
    header = _need(PAI_HEADER).read_text().strip().split(",")
    assert tuple(header) == PAI2020_TASK_COLUMNS


def test_gavel_traces():
    msr = load_trace(_need(GAVEL_MSR))
    assert len(msr) == 986
    _assert_sorted_rebased(msr)
    assert msr.submit_time_s[-1] == 7_910_536.0  # the same Philly VC 103959 span as ElasticFlow's file
    assert msr.model[0] == "Transformer" and msr.batch_size[0] == 128 and msr.iterations[0] == 5_635_991
    no_bs = np.isin(msr.model, ["A3C", "CycleGAN"])
    assert no_bs.sum() == 33 + 47 and np.all(msr.batch_size[no_bs] == 0)
    # isolated run times from Gavel's simulation_throughputs.json (found above traces/)
    assert np.isfinite(msr.duration_s).all() and msr.duration_s[2] == pytest.approx(40093 / 1.5951407072133263)
    phys = load_trace(_need(GAVEL_PHYS))
    assert len(phys) == 15 and phys.model[0] == "ResNet-50" and phys.batch_size[0] == 64


# --------------------------------------------------------------------------------------------- malformed rows

PHILLY_OK = "job_id,submit_time,num_gpu,duration,model_name,batch_size,iteration\n0,10,1,100,vgg16,64,1000\n"
POLLUX_OK = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-13 00:00:06,3526.0,1,3526.0,6214e9\n"
OPENB_OK = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p0,1000,1024,1,500,,LS,Running,0,100,0\n"
)
PAI_OK = "j0,worker,2,Terminated,100,200,600,29.3,50,V100\n"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "philly_x.csv",
            PHILLY_OK + "1,20,abc,100,vgg16,64,1000\n",
            r"philly_x.csv line 3: num_gpu must be a positive integer, got 'abc'",
        ),
        (
            "philly_x.csv",
            PHILLY_OK + "1,20,1.5,100,vgg16,64,1000\n",
            r"line 3: num_gpu must be a positive integer, got '1.5'",
        ),
        (
            "philly_x.csv",
            PHILLY_OK + "1,20,-2,100,vgg16,64,1000\n",
            r"line 3: num_gpu must be a positive integer, got '-2'",
        ),
        (
            "philly_x.csv",
            PHILLY_OK + "1,soon,1,100,vgg16,64,1000\n",
            r"line 3: submit_time must be a \(non-missing\) number, got 'soon'",
        ),
        (
            "philly_x.csv",
            PHILLY_OK + "1,,1,100,vgg16,64,1000\n",
            r"line 3: submit_time must be a \(non-missing\) number, got ''",
        ),
        ("philly_x.csv", PHILLY_OK + "1,20,1,-5,vgg16,64,1000\n", r"line 3: duration must be a number >= 0, got '-5'"),
        (
            "philly_x.csv",
            PHILLY_OK + "1,20,1,100,vgg16,big,1000\n",
            r"line 3: batch_size must be an integer >= 0, got 'big'",
        ),
        (
            "philly_x.csv",
            PHILLY_OK + "1,20,0,100,vgg16,64,1000\n",
            r"line 3: num_gpu must be a request of at least one GPU",
        ),
        (
            "pollux.csv",
            POLLUX_OK + "yesterday,1.0,1,1.0,c\n",
            r"pollux.csv line 3: timestamp must be a date-time.*got 'yesterday'",
        ),
        (
            "pollux.csv",
            POLLUX_OK + "2017-10-13 00:00:07,1.0,x,1.0,c\n",
            r"line 3: num_gpus must be a positive integer, got 'x'",
        ),
        (
            "pod.csv",
            OPENB_OK + "p1,1000,1024,two,500,,LS,Running,0,100,0\n",
            r"pod.csv line 3: num_gpu must be an integer >= 0, got 'two'",
        ),
        (
            "pod.csv",
            OPENB_OK + "p1,1000,1024,1,1500,,LS,Running,0,100,0\n",
            r"line 3: gpu_milli must be a share of one GPU in \[0, 1000\]",
        ),
        (
            "pod.csv",
            OPENB_OK + "p1,1000,1024,1,500,,LS,Running,t0,100,0\n",
            r"line 3: creation_time must be a \(non-missing\) number, got 't0'",
        ),
        (
            "pod.csv",
            OPENB_OK + "p1,1000,1024,1,500,,LS,Running,50,40,0\n",
            r"line 3: deletion_time must be a time >= creation_time",
        ),
        (
            "pai_task_table.csv",
            PAI_OK + "j1,worker,1,Terminated,100,200,600,29.3,lots,V100\n",
            r"pai_task_table.csv line 2: plan_gpu must be a number, got 'lots'",
        ),
        (
            "pai_task_table.csv",
            PAI_OK + "j1,worker,1,Terminated,x,200,600,29.3,50,V100\n",
            r"line 2: start_time must be a number, got 'x'",
        ),
        (
            "pai_task_table.csv",
            PAI_OK + "j1,worker,1,Terminated,300,200,600,29.3,50,V100\n",
            r"line 2: end_time must be a time >= start_time",
        ),
        (
            "pai_task_table.csv",
            PAI_OK + "j1,worker,1,Terminated,0,0,600,29.3,50,V100\n",
            r"line 2: start_time must be a launch time > 0.*drop_unstarted=True",
        ),
        (
            "pai_task_table.csv",
            PAI_OK + "j1,ps,1,Terminated,100,200,600,29.3,,V100\n",
            r"line 2: plan_gpu must be a request of at least one GPU",
        ),
        (
            "g.trace",
            "A3C\tcmd\t-s\t1\t10\t0.0\t1\nA3C\tcmd\t-s\t1\t10\tlater\t1\n",
            r"g.trace line 2: arrival_time must be a \(non-missing\) number",
        ),
        (
            "g.trace",
            "A3C\tcmd\t-s\t1\t10\t0.0\t1\nA3C\tcmd\t-s\t1\t10\t5.0\tfour\n",
            r"g.trace line 2: scale_factor must be a positive integer",
        ),
    ],
)
def test_malformed_row_names_file_line_and_field(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        load_trace(_write(tmp_path, name, text))


def test_row_with_too_many_fields(tmp_path):
    with pytest.raises(ValueError, match=r"wide.csv: not a well-formed CSV file: .*line 3, saw 4"):
        load_trace(_write(tmp_path, "wide.csv", "job_id,submit_time,num_gpu\n0,1,1\n1,2,2,9\n"))


def test_blank_lines_do_not_shift_line_numbers(tmp_path):
    path = _write(tmp_path, "p.csv", PHILLY_OK + "\n\n1,20,1,100,vgg16,64,1000\n\n2,30,zz,100,vgg16,64,1000\n\n")
    with pytest.raises(ValueError, match=r"p.csv line 7: num_gpu .* got 'zz'"):
        load_trace(path)


@pytest.mark.parametrize(
    ("fmt", "text", "missing"),
    [
        ("philly", "job_id,submit_time,duration\n0,1,2\n", "num_gpu or num_gpus"),
        ("philly", "timestamp,duration\n2017-10-13 00:00:06,1\n", "num_gpus or num_gpu"),
        ("openb", "name,num_gpu,creation_time\np,1,0\n", "gpu_milli"),
        ("pai2020", "job_name,task_name,inst_num,status,start_time,end_time\nj,w,1,T,1,2\n", "plan_gpu"),
        ("joulegym", "job_id,num_gpus\n0,1\n", "submit_time_s"),
    ],
)
def test_missing_columns_are_named(tmp_path, fmt, text, missing):
    with pytest.raises(ValueError, match=rf"t.csv: missing required columns .*{missing}"):
        load_trace(_write(tmp_path, "t.csv", text), format=fmt)


@pytest.mark.parametrize("fmt", [*FORMATS, "auto"])
def test_empty_file_and_header_only_raise(tmp_path, fmt):
    with pytest.raises(ValueError, match=r"empty\.csv: empty file"):
        load_trace(_write(tmp_path, "empty.csv", ""), format=fmt)
    header = {"openb": OPENB_OK, "philly": PHILLY_OK, "joulegym": "job_id,submit_time_s,num_gpus\n0,0,1\n"}
    if fmt in header:
        only = header[fmt].splitlines()[0] + "\n\n"
        with pytest.raises(ValueError, match=r"head\.csv: no job rows \(empty trace\)"):
            load_trace(_write(tmp_path, "head.csv", only), format=fmt)


def test_unknown_and_undetectable_formats(tmp_path):
    path = _write(tmp_path, "t.csv", PHILLY_OK)
    with pytest.raises(ValueError, match=r"unknown trace format 'csv'; allowed: .*'openb'.*'pai2020'.*'philly'"):
        load_trace(path, format="csv")
    odd = _write(tmp_path, "odd.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(ValueError, match=r"odd.csv: cannot detect the trace format.*'openb'"):
        load_trace(odd)
    with pytest.raises(FileNotFoundError):
        load_trace(tmp_path / "nope.csv")


# --------------------------------------------------------------------------------------------- formats in detail


@pytest.mark.parametrize(
    ("text", "name", "fmt"),
    [
        (PHILLY_OK, "a.csv", "philly"),
        (POLLUX_OK, "a.csv", "philly"),
        ("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,5,vgg,3,1\n", "a.csv", "philly"),
        (OPENB_OK, "a.csv", "openb"),
        (PAI_OK, "pai_task_table.csv", "pai2020"),
        (",".join(PAI2020_TASK_COLUMNS) + "\n" + PAI_OK, "tasks.csv", "pai2020"),
        ("A3C\tcmd\t-s\t1\t10\t0.0\t1\n", "a.trace", "gavel"),
        ("job_id,submit_time_s,num_gpus,duration_s\n0,0,1,\n", "a.csv", "joulegym"),
    ],
)
def test_auto_detection(tmp_path, text, name, fmt):
    path = _write(tmp_path, name, text)
    assert detect_format(path) == fmt
    assert len(load_trace(path)) == 1


def test_sorting_is_stable_and_rebased(tmp_path):
    text = "job_id,submit_time,num_gpu\na,500,1\nb,300,2\nc,500,4\nd,300,8\ne,1000,1\n"
    trace = load_trace(_write(tmp_path, "s.csv", text))
    assert trace.job_id.tolist() == ["b", "d", "a", "c", "e"]
    assert trace.submit_time_s.tolist() == [0.0, 0.0, 200.0, 200.0, 700.0]
    assert trace.num_gpus.tolist() == [2, 8, 1, 4, 1]
    # Missing optional columns take the documented defaults; the row number is the id when there is none.
    assert set(trace.model.tolist()) == {""} and np.all(trace.batch_size == 0)
    assert np.all(np.isnan(trace.iterations)) and np.all(np.isnan(trace.duration_s))
    no_id = load_trace(_write(tmp_path, "n.csv", "submit_time,num_gpu\n9,1\n3,1\n"))
    assert no_id.job_id.tolist() == ["1", "0"]


def test_pai2020_jobs_aggregate_tasks(tmp_path):
    rows = [
        "j0,ps,1,Terminated,100,400,600,29.3,,",  # CPU-only parameter server
        "j0,worker,2,Terminated,120,500,400,10,50,V100",  # 2 x 50 % = 1 GPU
        "j1,worker,3,Failed,50,60,100,1,100,T4",
        "j2,worker,1,Running,10,,100,1,25,MISC",  # not finished: duration unknown
        "j3,worker,1,Waiting,0,0,100,1,100,",  # never launched
        "j4,tensorflow,1,Terminated,70,90,100,1,0,T4",  # no GPU at all
    ]
    path = _write(tmp_path, "pai_task_table.csv", "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"pai_task_table.csv line 5: start_time must be a launch time"):
        load_trace(path)
    with pytest.raises(ValueError, match=r"line 6: plan_gpu must be a request of at least one GPU.*got '0 GPUs"):
        load_trace(path, drop_unstarted=True)
    trace, report = load_trace_with_report(path, drop_unstarted=True, drop_zero_gpu=True)
    assert report.rows_read == 6 and report.dropped == {"unstarted": 1, "zero_gpu": 1}
    assert report.dropped_lines["unstarted"].tolist() == [5] and report.dropped_lines["zero_gpu"].tolist() == [6]
    assert trace.job_id.tolist() == ["j2", "j1", "j0"]
    assert trace.submit_time_s.tolist() == [0.0, 40.0, 90.0]
    assert trace.num_gpus.tolist() == [1, 3, 1]
    np.testing.assert_allclose(trace.extra["gpu_request"], [0.25, 3.0, 1.0])
    assert np.isnan(trace.duration_s[0]) and trace.duration_s[1:].tolist() == [10.0, 400.0]
    assert trace.extra["status"].tolist() == ["Running", "Failed", "Terminated"]
    assert trace.extra["num_tasks"].tolist() == [1, 1, 2]
    np.testing.assert_allclose(trace.extra["cpu_request"], [1.0, 3.0, 6 + 8])


def test_pai2020_wrong_width_headerless(tmp_path):
    with pytest.raises(ValueError, match=r"line 1: a headerless PAI-2020 task table has 10 fields.*got 6"):
        load_trace(_write(tmp_path, "pai_task_table.csv", "j,w,1,T,1,2\n"))


def test_openb_fractional_gpu_mapping(tmp_path):
    text = OPENB_OK + "p1,1000,1024,1,1000,,LS,Running,5,10,5\np2,1000,1024,4,1000,,BE,Pending,7,9,\n"
    trace = load_trace(_write(tmp_path, "pods.csv", text))
    assert trace.num_gpus.tolist() == [1, 1, 4]
    assert trace.extra["gpu_request"].tolist() == [0.5, 1.0, 4.0]
    assert trace.extra["gpu_milli"].tolist() == [500, 1000, 1000]
    assert trace.duration_s.tolist() == [100.0, 5.0, 2.0]
    assert np.isnan(trace.extra["scheduled_time"][2]) and trace.extra["pod_phase"][2] == "Pending"


# --------------------------------------------------------------------------------------------- round trip


def _sample_trace() -> JobTrace:
    return JobTrace(
        job_id=np.array(["a", "b,c", 'q"d', ""]),
        submit_time_s=np.array([0.0, 0.1, 1 / 3, 1e9 + 0.5]),
        num_gpus=np.array([1, 2, 4, 64], dtype=np.int64),
        duration_s=np.array([np.nan, 5.0, 1e-7, 123456.789]),
        model=np.array(["resnet50", "", "GPT-2 (124M)", "x"]),
        batch_size=np.array([0, 32, 64, 128], dtype=np.int64),
        iterations=np.array([np.nan, 1.0, 2.5, 1e12]),
        source="mem",
        extra={
            "phase": np.array(["Running", "", "Failed", "12"]),
            "milli": np.array([1000, 460, 0, -1], dtype=np.int64),
            "req": np.array([0.46, np.nan, 2.0, 1e-300]),
            "ok": np.array([True, False, True, True]),
        },
    )


def _assert_same(a: JobTrace, b: JobTrace) -> None:
    for name in ("job_id", "submit_time_s", "num_gpus", "duration_s", "model", "batch_size", "iterations"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype.kind == y.dtype.kind, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert list(a.extra) == list(b.extra)
    for name, x in a.extra.items():
        assert x.dtype.kind == b.extra[name].dtype.kind, name
        np.testing.assert_array_equal(x, b.extra[name], err_msg=name)


def test_save_and_load_round_trip(tmp_path):
    trace = _sample_trace()
    path = save_trace(trace, tmp_path / "t.csv")
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temp file left behind
    assert path.read_text().splitlines()[0].endswith("extra.phase:str,extra.milli:int,extra.req:float,extra.ok:bool")
    back = load_trace(path)
    assert detect_format(path) == "joulegym" and back.source == str(path)
    _assert_same(trace, back)
    save_trace(back.head(2), path)  # overwrites in place
    _assert_same(trace.head(2), load_trace(path, format="joulegym"))


def test_round_trip_of_a_loaded_real_trace(tmp_path):
    trace = load_trace(_need(ELASTICFLOW))
    _assert_same(trace, load_trace(save_trace(trace, tmp_path / "ef.csv")))


def test_dataframe_round_trip_and_validation():
    trace = _sample_trace()
    df = trace.to_dataframe()
    assert list(df.columns)[:7] == [
        "job_id",
        "submit_time_s",
        "num_gpus",
        "duration_s",
        "model",
        "batch_size",
        "iterations",
    ]
    assert df.attrs["source"] == "mem"
    back = JobTrace.from_dataframe(df)
    _assert_same(trace, back)
    assert back.source == "mem"
    shuffled = JobTrace.from_dataframe(df.iloc[::-1].reset_index(drop=True), source="x")
    _assert_same(trace, shuffled)  # sorted again on the way in
    with pytest.raises(ValueError, match=r"<DataFrame> row 1: num_gpus must be a positive integer, got 1.5"):
        JobTrace.from_dataframe(pd.DataFrame({"submit_time_s": [0.0, 1.0], "num_gpus": [1, 1.5]}), source="")
    with pytest.raises(ValueError, match=r"missing required columns \['num_gpus'\]"):
        JobTrace.from_dataframe(pd.DataFrame({"submit_time_s": [0.0]}))
    minimal = JobTrace.from_dataframe(pd.DataFrame({"submit_time_s": [5.0, 2.0], "num_gpus": [1, 2]}))
    assert minimal.job_id.tolist() == ["1", "0"] and minimal.submit_time_s.tolist() == [0.0, 3.0]


_text = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)
_floats = st.floats(min_value=0, max_value=1e12, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _text,
            _floats,
            st.integers(1, 4096),
            st.one_of(st.just(np.nan), _floats),
            _text,
            st.integers(0, 2**31),
            st.one_of(st.just(np.nan), _floats),
            _text,
            st.floats(allow_nan=True),
            st.integers(-(2**62), 2**62),
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda row: row[0],  # job ids are unique (a repeated id is an error)
    )
)
def test_round_trip_property(tmp_path_factory, rows):
    cols = list(zip(*rows))
    trace = JobTrace.from_dataframe(
        pd.DataFrame(
            {
                "job_id": pd.Series(cols[0], dtype=object),
                "submit_time_s": cols[1],
                "num_gpus": cols[2],
                "duration_s": cols[3],
                "model": pd.Series(cols[4], dtype=object),
                "batch_size": cols[5],
                "iterations": cols[6],
                "tag": pd.Series(cols[7], dtype=object),
                "value": np.array(cols[8], dtype=float),
                "count": np.array(cols[9], dtype=np.int64),
            }
        ),
        source="prop",
    )
    path = tmp_path_factory.mktemp("rt") / "trace.csv"
    _assert_same(trace, load_trace(save_trace(trace, path)))
