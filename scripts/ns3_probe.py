"""How fast ns-3 moves packets here: the measurement behind choosing SimGrid for
`python -m experiments simulate` (docs/scaling.md, "Simulation").

A chain of HOPS point-to-point links at 100 Gbit/s (1 us each), an ns-3 UdpClient on the first
node sending PACKETS datagrams of 1024 bytes, 100 ns apart, to a UdpServer on the last:
prints the wall-clock seconds of Simulator::Run and the packet-hops per second.  Nothing
but ns-3's own C++ models runs per packet (no Python callback), so this is an upper bound
of what an ns-3 model of our protocol could do.  ns-3 is not a dependency of the project:

    .venv/bin/pip install ns3==3.44.post0      # the PyPI wheel (Python bindings over cppyy)
    .venv/bin/python scripts/ns3_probe.py 4 100000
"""

import sys
import time

from ns import ns


def main(hops: int, packets: int) -> None:
    nodes = ns.NodeContainer()
    nodes.Create(hops + 1)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue("100Gbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue("1us"))
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    interfaces = []
    for i in range(hops):
        devices = p2p.Install(nodes.Get(i), nodes.Get(i + 1))
        addresses.SetBase(ns.Ipv4Address(f"10.{i // 250}.{i % 250}.0"),
                          ns.Ipv4Mask("255.255.255.0"))
        interfaces.append(addresses.Assign(devices))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    client = ns.UdpClientHelper(interfaces[-1].GetAddress(1).ConvertTo(), 9)
    client.SetAttribute("MaxPackets", ns.UintegerValue(packets))
    client.SetAttribute("Interval", ns.TimeValue(ns.NanoSeconds(100)))
    client.SetAttribute("PacketSize", ns.UintegerValue(1024))
    client.Install(nodes.Get(0)).Start(ns.Seconds(0.0))
    ns.UdpServerHelper(9).Install(nodes.Get(hops))
    started = time.monotonic()
    ns.Simulator.Run()
    seconds = time.monotonic() - started
    ns.Simulator.Destroy()
    print(f"{packets} packets over {hops} hops: {seconds:.2f} s, "
          f"{packets * hops / seconds:,.0f} packet-hops/s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/ns3_probe.py HOPS PACKETS")
    main(int(sys.argv[1]), int(sys.argv[2]))
