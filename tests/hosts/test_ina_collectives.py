"""hosts/ina/ina_collectives.py: the shard layout on whole chunks and the per-round flags."""

import numpy as np
import pytest

from contracts.wire import FLAG_NO_VALUES, FLAG_TO_OWNER, NO_OWNER
from hosts.allreduce import shard
from hosts.ina.ina_collectives import (ShardLayout, collective_result, engine_input, round_flags)


@pytest.mark.parametrize("elements, world, k", [(203, 4, 8), (200000, 8, 64), (5, 3, 4),
                                                (64, 2, 64), (7, 8, 4)])
def test_shards_are_the_host_algorithms_padded_to_whole_chunks(elements, world, k):
    layout = ShardLayout(elements, world, k)
    data = np.arange(1, elements + 1, dtype=np.int32)
    padded = layout.spread(data)
    assert len(padded) == layout.padded_elements == layout.chunk_bounds[-1] * k
    assert layout.gather(padded).tolist() == data.tolist()
    for rank in range(world):
        host = data[shard(rank, world, elements)]
        assert layout.shard(rank, padded).tolist() == host.tolist()
        first, last = layout.chunk_bounds[rank], layout.chunk_bounds[rank + 1]
        assert last - first == -(-len(host) // k)            # padding < one chunk per shard
        chunk_values = padded[first * k:last * k]
        assert chunk_values[len(host):].tolist() == [0] * ((last - first) * k - len(host))


def test_round_flags_per_collective():
    bounds = (0, 2, 3)                       # rank 0: chunks 0-1, rank 1: chunk 2
    blocks = np.array([0, 1, 2, -1, -1])     # rounds 3 and 4: closing
    closing = np.array([False, False, False, True, True])
    flags, owner, keep = round_flags("reduce-scatter", 1, 0, bounds, blocks, closing)
    closed = FLAG_TO_OWNER | FLAG_NO_VALUES
    assert flags.tolist() == [FLAG_TO_OWNER] * 3 + [closed] * 2
    assert owner.tolist() == [0, 0, 1, NO_OWNER, NO_OWNER]
    assert keep.tolist() == [0, 0, 1, 0, 0]
    flags, owner, keep = round_flags("allgather", 1, 0, bounds, blocks, closing)
    assert flags.tolist() == [FLAG_NO_VALUES, FLAG_NO_VALUES, 0, closed, closed]
    assert keep.tolist() == [1, 1, 1, 0, 0]
    flags, _, keep = round_flags("broadcast", 1, 1, (), blocks, closing)
    assert flags.tolist() == [0, 0, 0, closed, closed] and keep.tolist() == [1, 1, 1, 0, 0]
    flags, _, _ = round_flags("broadcast", 0, 1, (), blocks, closing)
    assert flags.tolist() == [FLAG_NO_VALUES] * 3 + [closed] * 2
    assert round_flags("allreduce", 0, 0, (), blocks, closing) is None
    with pytest.raises(ValueError, match="unknown collective 'gather'"):
        round_flags("gather", 0, 0, (), blocks, closing)


def test_float32_copies_travel_as_bits_and_come_back_unchanged():
    data = np.array([1.5, -0.0, np.float32(1e-40), 3.25e38, -7.0], dtype=np.float32)
    vector, bounds = engine_input("allgather", data, 2, 4)
    assert vector.dtype == np.int32 and bounds == (0, 1, 2)
    back = collective_result("allgather", vector, 0, 2, 5, 4, np.dtype(np.float32))
    assert back.tobytes() == data.tobytes()
    vector, bounds = engine_input("reduce-scatter", data, 2, 4)
    assert vector.dtype == np.float32 and len(vector) == 8
