"""Memory plan of embedding tables: bytes with optimizer state, table-wise and row-wise
placement on N GPUs, checked against hand-computed cases and a brute-force optimum."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interactive_recsys.errors import ParameterError
from interactive_recsys.stats._memory_plan import (
    EmbeddingTable,
    MemoryPlan,
    parse_memory,
    place_table_wise,
    table_bytes,
)

MB = 10**6


@pytest.mark.parametrize(("dtype", "optimizer", "expected"), [
    ("fp32", "none", 1000 * 16 * 4),
    ("fp32", "sgd", 1000 * 16 * 4),
    ("fp32", "adagrad", 1000 * 16 * 4 * 2),
    ("fp32", "adam", 1000 * 16 * 4 * 3),
    ("fp16", "sgd", 1000 * 16 * 2),
    ("fp16", "adam", 1000 * 16 * 2 * 3),
    ("float16", "adagrad", 1000 * 16 * 2 * 2),
])
def test_table_bytes_hand_computed(dtype: str, optimizer: str, expected: int) -> None:
    assert table_bytes(1000, 16, dtype, optimizer) == expected


def test_plan_hand_computed_three_tables_on_two_gpus() -> None:
    # fp16 + Adagrad: 4 bytes per weight in all.
    tables = [EmbeddingTable("big", 100_000, 64),     # 25.6 MB
              EmbeddingTable("mid", 50_000, 64),      # 12.8 MB
              EmbeddingTable("small", 30_001, 32)]    # 3.840128 MB
    plan = MemoryPlan(tables, num_gpus=2, gpu_memory=30 * MB, dtype="fp16",
                      optimizer="adagrad")
    assert plan.table_bytes == {"big": 25_600_000, "mid": 12_800_000, "small": 3_840_128}
    assert plan.total_bytes == 42_240_128
    assert plan.too_large == []
    # largest first: big -> GPU 0; mid -> GPU 1 (empty); small -> GPU 1 (12.8 < 25.6 MB)
    assert plan.table_wise.gpu_tables == [["big"], ["mid", "small"]]
    assert plan.table_wise.gpu_bytes == [25_600_000, 16_640_128]
    assert plan.table_wise.fits
    # row-wise: every table halved; small has an odd row count: GPU 0 gets the extra row
    per_row_small = 32 * 4
    assert plan.row_wise.gpu_bytes == [12_800_000 + 6_400_000 + 15_001 * per_row_small,
                                       12_800_000 + 6_400_000 + 15_000 * per_row_small]
    assert plan.row_wise.fits
    assert sum(plan.row_wise.gpu_bytes) == plan.total_bytes


def test_table_too_large_for_one_gpu_is_flagged_and_fits_only_row_wise() -> None:
    # fp32 + Adam: 12 bytes per weight; "huge" = 1M x 128 x 12 = 1.536 GB > 1 GB per GPU.
    tables = [EmbeddingTable("huge", 1_000_000, 128), EmbeddingTable("tiny", 100, 16)]
    plan = MemoryPlan(tables, num_gpus=4, gpu_memory="1GB", optimizer="adam")
    assert plan.table_bytes["huge"] == 1_536_000_000
    assert plan.too_large == ["huge"]
    assert plan.table_wise.unplaced == ["huge"]
    assert not plan.table_wise.fits
    assert plan.table_wise.gpu_tables == [["tiny"], [], [], []]
    assert plan.row_wise.fits
    assert plan.row_wise.max_bytes == 250_000 * 128 * 12 + 25 * 16 * 12
    text = repr(plan)
    assert "too large for one GPU: huge" in text and "does NOT fit" in text
    d = plan.to_dict()
    assert d["too_large"] == ["huge"] and d["table_wise"]["fits"] is False
    assert d["row_wise"]["fits"] is True


def test_row_wise_does_not_fit_when_the_total_is_too_large() -> None:
    tables = [EmbeddingTable("a", 1000, 100)]   # 400 kB fp32
    plan = MemoryPlan(tables, num_gpus=2, gpu_memory=150_000)
    assert plan.row_wise.gpu_bytes == [200_000, 200_000]
    assert not plan.row_wise.fits and not plan.table_wise.fits


def test_sizes_are_parsed_in_si_and_binary_units() -> None:
    assert parse_memory("16GB") == 16 * 10**9
    assert parse_memory("16GiB") == 16 * 2**30
    assert MemoryPlan([], gpu_memory="80GiB").gpu_memory == 80 * 2**30


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_gpus": 0}, "'num_gpus' parameter must be an integer >= 1. Got 0"),
    ({"num_gpus": 1.5}, "Got 1.5"),
    ({"dtype": "fp8"}, "'dtype' parameter must be one of ['fp32', 'fp16']. Got 'fp8'"),
    ({"optimizer": "rmsprop"}, "'optimizer' parameter must be one of"),
    ({"gpu_memory": "lots"}, "'gpu_memory' parameter must be a number of bytes"),
    ({"gpu_memory": 0}, "'gpu_memory' parameter must be positive"),
])
def test_bad_settings_name_the_parameter_and_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ParameterError) as info:
        MemoryPlan([EmbeddingTable("a", 10, 4)], **kwargs)
    assert message in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=7), st.integers(1, 3))
def test_greedy_table_wise_is_within_the_lpt_bound_of_the_optimum(sizes: list[int],
                                                                  gpus: int) -> None:
    named = {f"t{i}": s for i, s in enumerate(sizes)}
    placement = place_table_wise(named, gpus, capacity=10**9)
    # every table placed exactly once, loads add up
    placed = sorted(n for tables in placement.gpu_tables for n in tables)
    assert placed == sorted(named)
    assert placement.gpu_bytes == [sum(named[n] for n in t) for t in placement.gpu_tables]
    # brute force: the best possible maximum load
    best = min(max(sum(s for s, g in zip(sizes, assign, strict=True) if g == k)
                   for k in range(gpus))
               for assign in itertools.product(range(gpus), repeat=len(sizes)))
    # Graham's bound for largest-processing-time-first: max load <= (4/3 - 1/(3m)) * OPT
    assert placement.max_bytes <= (4 / 3 - 1 / (3 * gpus)) * best + 1e-9
