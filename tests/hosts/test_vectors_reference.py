"""The exact answers the workers check against (hosts/vectors.collective_reference): built
once per process for the threads of a worker group, the same as built alone."""

import threading

import numpy as np
import pytest

from hosts import vectors


def _built_alone(collective, seed, rank, world, elements, dtype):
    """The answer from the rank vectors directly, without collective_reference."""
    inputs = [vectors.generate(seed, r, world, elements, dtype) for r in range(world)]
    wide = np.int64 if dtype == np.int32 else np.float64
    if collective == "broadcast":
        return inputs[0].astype(wide)
    bounds = [vectors.shard_bounds(r, world, elements) for r in range(world)]
    if collective == "allgather":
        return np.concatenate([inputs[r][a:b] for r, (a, b) in enumerate(bounds)]).astype(wide)
    total = np.sum([x.astype(wide) for x in inputs], axis=0)
    if collective == "allreduce":
        return total
    a, b = bounds[rank]
    return total[a:b]


@pytest.mark.parametrize("collective", ["allreduce", "reduce-scatter", "allgather",
                                        "broadcast"])
def test_threads_share_one_reference_made_once(collective, monkeypatch):
    world, elements, dtype = 24, 301, np.dtype("int32")
    vectors._last_reference[:] = [None, None]
    made, real_generate = [], vectors.generate

    def counting_generate(*args, **kwargs):
        made.append(args[1])
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(vectors, "generate", counting_generate)
    answers = {}

    def check(rank):
        answers[rank] = vectors.collective_reference(collective, 7, rank, world, elements,
                                                     dtype)

    threads = [threading.Thread(target=check, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == (1 if collective == "broadcast" else world)   # not world x world
    monkeypatch.setattr(vectors, "generate", real_generate)
    for rank in range(world):
        expected = _built_alone(collective, 7, rank, world, elements, dtype)
        assert answers[rank].total.dtype == expected.dtype
        assert np.array_equal(answers[rank].total, expected)
        assert not answers[rank].total.flags.writeable


def test_another_job_gets_its_own_reference():
    first = vectors.collective_reference("allreduce", 1, 0, 4, 100, np.dtype("int32"))
    second = vectors.collective_reference("allreduce", 2, 0, 4, 100, np.dtype("int32"))
    third = vectors.collective_reference("allreduce", 2, 0, 4, 100, np.dtype("float32"))
    assert not np.array_equal(first.total, second.total)
    assert np.array_equal(second.total, _built_alone("allreduce", 2, 0, 4, 100,
                                                     np.dtype("int32")))
    assert third.total.dtype == np.float64
