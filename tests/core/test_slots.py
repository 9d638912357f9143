"""joulegym.core.slots: the slot bookkeeping's row view survives copies (SlotRows)."""

from __future__ import annotations

import copy
import pickle

import numpy as np

from joulegym.core.slots import SlotRows


class _Rows(SlotRows):
    slot_features = 3

    def __init__(self, k: int) -> None:
        self.K = k
        self._obs_buf = np.zeros(k * self.slot_features + 2, dtype=np.float32)
        self._bind_slot_rows()


def test_slot_rows_are_a_view_of_the_buffer_head():
    rows = _Rows(2)
    rows._slot_obs[1] = [1.0, 2.0, 3.0]
    assert rows._obs_buf.tolist() == [0, 0, 0, 1, 2, 3, 0, 0]


def test_a_copy_writes_through_its_own_view_into_its_own_buffer():
    rows = _Rows(2)
    for clone in (copy.deepcopy(rows), pickle.loads(pickle.dumps(rows))):
        assert np.shares_memory(clone._slot_obs, clone._obs_buf)
        clone._slot_obs[0, 0] = 7.0
        assert clone._obs_buf[0] == 7.0 and rows._obs_buf[0] == 0.0


def test_a_state_without_a_buffer_has_no_view():
    empty = SlotRows.__new__(SlotRows)
    empty.__setstate__({"K": 2})
    assert not hasattr(empty, "_slot_obs")
