"""Trace loaders on hostile files: every error names the file, the line and the column,
and nothing is dropped or wrapped silently."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from joulegym.workloads.traces import JobTrace, load_trace

PHILLY_HEADER = "job_id,submit_time,num_gpu,batch_size\n"


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        # an infinite submit time is a job that never arrives
        ("p.csv", PHILLY_HEADER + "0,1,1,8\n1,inf,1,8\n", r"p.csv line 3: submit_time must be .*got 'inf'"),
        ("p.csv", PHILLY_HEADER + "0,1,1,8\n1,1e400,1,8\n", r"p.csv line 3: submit_time must be .*got '1e400'"),
        # finite submit times whose span overflows float64 once re-based to the first job
        ("p.csv", PHILLY_HEADER + "0,-1e308,1,8\n1,1e308,1,8\n", r"p.csv line 3: submit time must be within"),
        # a repeated job id (the second occurrence is named, with the first one's line)
        ("p.csv", PHILLY_HEADER + "a,1,1,8\nb,2,1,8\na,3,1,8\n",
         r"p.csv line 4: job_id must be a unique job id \(it is also on line 2\), got 'a'"),
        ("pod.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
         "deletion_time,scheduled_time\np0,1,1,1,1000,,LS,Running,0,10,0\np0,1,1,1,1000,,LS,Running,5,10,5\n",
         r"pod.csv line 3: name must be a unique job id \(it is also on line 2\)"),
        ("t.csv", "job_id,submit_time_s,num_gpus\n7,0,1\n7,1,1\n", r"t.csv line 3: job_id must be a unique"),
        # int64 overflow: 1e20 used to become INT64_MIN
        ("p.csv", PHILLY_HEADER + "0,1,1,1e20\n", r"p.csv line 2: batch_size must be .*at most 2\*\*63 - 1.*'1e20'"),
        ("p.csv", PHILLY_HEADER + "0,1,1,9223372036854775808\n", r"p.csv line 2: batch_size must be .*2\*\*63"),
        ("p.csv", PHILLY_HEADER + "0,1,1e20,8\n", r"p.csv line 2: num_gpu must be .*at most 2\*\*63 - 1"),
        ("t.csv", "job_id,submit_time_s,num_gpus,extra.count:int\n0,0,1,100000000000000000000\n",
         r"t.csv line 2: extra.count:int must be an integer, at most 2\*\*63 - 1"),
        ("t.csv", "job_id,submit_time_s,num_gpus,extra.count:int\n0,0,1,1e20\n",
         r"t.csv line 2: extra.count:int must be an integer, at most 2\*\*63 - 1"),
        # a row longer than the header: pandas used to drop the surplus cells with only a warning
        ("p.csv", PHILLY_HEADER + "0,1,1,8,99\n1,2,1,8\n",
         r"p.csv line 2: a row has 5 fields, more than the header's 4 \(extra cells \['99'\]"),
        ("p.csv", PHILLY_HEADER + "\n0,1,1,8,99\n1,2,1,8,7\n", r"p.csv: not a well-formed CSV .*line 3, saw 5"),
        # mixed time zones in Pollux timestamps
        ("day.csv", "timestamp,num_gpus,duration\n2017-10-13 00:00:06+00:00,1,5\n2017-10-13 00:00:07,1,5\n",
         r"day.csv line 3: timestamp must be a date-time with a UTC offset like the first.*'2017-10-13 00:00:07'"),
        ("day.csv", "timestamp,num_gpus,duration\n2017-10-13 00:00:06,1,5\n2017-10-13 00:00:07Z,1,5\n",
         r"day.csv line 3: timestamp must be a date-time without a UTC offset"),
        ("day.csv", "timestamp,num_gpus,duration\n2017-10-13 00:00:06,1,5\n13/10/2017 x,1,5\n",
         r"day.csv line 3: timestamp must be a date-time"),
    ],
)  # fmt: skip
def test_hostile_rows_name_file_line_and_column(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        load_trace(_write(tmp_path, name, text))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"job_id,submit_time,num_gpu\n0,1,1\n\xff\xfe\x00\x01,2,1\n", r"b.csv line 3 column 1: .*UTF-8.*0xff"),
        ("job_id,submit_time,num_gpu,model\n0,1,1,caf\u00e9\n".encode("latin-1"), r"b.csv line 2 column 10: .*0xe9"),
        (b"job_id,submit_time,num_gpu\n0,1,1\n1\x00,2,1\n", r"b.csv line 3 column 2: .*NUL byte"),
        (b"\x00\x01\x02\x03", r"b.csv line 1 column 1: .*NUL byte"),
    ],
)
def test_binary_and_latin1_files_name_line_and_column(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        load_trace(_write(tmp_path, "b.csv", data))


def test_offsets_are_compared_as_instants(tmp_path):
    text = "timestamp,num_gpus,duration\n2017-10-13 02:00:10+02:00,1,5\n2017-10-13 00:00:06Z,1,5\n"
    trace = load_trace(_write(tmp_path, "day.csv", text))
    assert trace.submit_time_s.tolist() == [0.0, 4.0]


def test_int64_limits_are_kept_exactly(tmp_path):
    top = 2**63 - 1
    text = f"job_id,submit_time_s,num_gpus,extra.count:int\n0,0,1,{top}\n1,1,1,{-(2**63)}\n"
    trace = load_trace(_write(tmp_path, "t.csv", text))
    assert trace.extra["count"].tolist() == [top, -(2**63)]


def test_large_integers_in_unused_columns_stay_floats_not_wrapped(tmp_path):
    trace = load_trace(_write(tmp_path, "p.csv", PHILLY_HEADER.strip() + ",tokens\n0,1,1,8,1e20\n1,2,1,8,3\n"))
    assert trace.extra["tokens"].dtype == np.float64 and trace.extra["tokens"].tolist() == [1e20, 3.0]


def test_dataframe_rejects_repeated_ids():
    df = pd.DataFrame({"job_id": ["x", "x"], "submit_time_s": [0.0, 1.0], "num_gpus": [1, 1]})
    with pytest.raises(ValueError, match=r"<DataFrame> row 1: job_id must be a unique job id \(it is also on row 0\)"):
        JobTrace.from_dataframe(df)
