"""Unit tests of the packet replication engine (multicast groups, clone sessions)."""

import pytest

from p4switch.runtime.errors import AlreadyExists, InvalidArgument, NotFound
from p4switch.runtime.pre import PacketReplicationEngine


def test_multicast_groups():
    pre = PacketReplicationEngine()
    pre.set_multicast_group(1, [(2, 0), (3, 1)])
    assert pre.multicast_replicas(1) == ((2, 0), (3, 1))
    assert pre.multicast_replicas(9) == ()
    with pytest.raises(AlreadyExists):
        pre.insert_multicast_group(1, [])
    pre.modify_multicast_group(1, [(4, 0)])
    assert pre.multicast_replicas(1) == ((4, 0),)
    pre.delete_multicast_group(1)
    with pytest.raises(NotFound):
        pre.delete_multicast_group(1)
    with pytest.raises(InvalidArgument):
        pre.set_multicast_group(0, [])
    with pytest.raises(InvalidArgument):
        pre.set_multicast_group(2, [(512, 0)])
    with pytest.raises(InvalidArgument):
        pre.set_multicast_group(2, [(1, 0), (1, 0)])


def test_clone_sessions():
    pre = PacketReplicationEngine()
    pre.set_clone_session(5, [(7, 0)], truncate=64)
    session = pre.clone_session(5)
    assert session.replicas == ((7, 0),) and session.truncate == 64
    with pytest.raises(AlreadyExists):
        pre.insert_clone_session(5, [(1, 0)])
    with pytest.raises(NotFound):
        pre.modify_clone_session(6, [(1, 0)])
    pre.delete_clone_session(5)
    assert pre.clone_session(5) is None
    with pytest.raises(InvalidArgument):
        pre.set_clone_session(1, [(1, 0)], truncate=-1)
