"""The native back end: the checked IR to C, built once per program with the system C
compiler and driven through ctypes (see docs/native.md).

- emit.py     the C emitter (the second emitter over the IR the Python back end walks)
- runtime/    the hand-written C the generated code links with: packets, tables, externs,
              the traffic manager, and the packet I/O loop
- build.py    `gcc -O2 -shared`, cached by a hash of the sources and the flags
- io.py       ctypes binding of the packet I/O loop (AF_PACKET ports on a thread of its own)
"""
