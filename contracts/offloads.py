"""The veth offloads (ethtool -K words) of the emulated links: one home for both that set
them, the network on every veth end (topologies/net.py) and each switch on its own ports
(p4switch/device/ports.py, which also turns the VLAN offloads off).

NONE: frames cross as they are on the wire (real sizes, real checksums).  SEGMENTING: a
TCP send leaves whole with its checksum to be finished, and the switches carry it as one
frame (segmentation offload: topologies/net.py, "INA_TSO"); receive offloads stay off, so
nothing is merged on the way in.
"""

NONE = ("tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
SEGMENTING = ("tx", "on", "rx", "off", "tso", "on", "gso", "on", "gro", "off")
VLAN_NONE = ("rxvlan", "off", "txvlan", "off")

