/* The native packet I/O loop of the C back end: moves frames between AF_PACKET sockets bound
 * to network interfaces (the switch's ports) and a pipeline function, with no Python per frame.
 *
 * One or more worker threads (p4io_set_threads; the caller of p4io_run is the first) each
 * block in poll() over their share of the ports and a wake eventfd, receive frames in bursts
 * (at most P4IO_BURST per port per round, so ports are served fairly), run the pipeline on
 * each, collect the frames it emits into per-port transmit batches of their own and send
 * them with sendmmsg after each burst. A port is received by one worker only, so its frames
 * enter the pipeline in order; the pipeline must be safe to call from several threads at
 * once (the C back end's p4n_process serialises on the switch's mutex). Other threads may
 * call p4io_inject, p4io_send, p4io_set_pipeline, p4io_add_port, p4io_stop, p4io_stats and
 * p4io_cpu_pop at any time; p4io_create and p4io_destroy are not concurrent with anything.
 *
 * Frames the host itself sends out of a port's interface (PACKET_OUTGOING, which includes
 * the frames the loop sends) are not received. VLAN tags the kernel took out of received
 * frames are put back after the MAC addresses, so the pipeline sees frames as on the wire.
 */
#ifndef P4IO_H
#define P4IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define P4IO_MAX_PORTS 256        /* interfaces per loop */
#define P4IO_BURST 64             /* frames received from one port per round */
#define P4IO_CPU_QUEUE 4096       /* frames waiting for Python on the CPU port */
#define P4IO_MAX_FRAME 65600      /* largest frame handled (with a restored VLAN tag) */
#define P4IO_MAX_THREADS 64       /* worker threads per loop */
#define P4IO_OFFLOAD_FRAME 16000  /* largest frame received with segmentation offload */

typedef void (*p4io_emit_fn)(void *emit_ctx, uint32_t port, const uint8_t *data, uint32_t len);
/* The pipeline: process one frame received on `port`; calls emit() for every frame it sends,
 * in order (data valid only during the call). Returns 0, or -1 if the frame was dropped for
 * an internal error. */
typedef int (*p4io_process_fn)(void *pipeline, uint32_t port, const uint8_t *data, uint32_t len,
                               p4io_emit_fn emit, void *emit_ctx);

typedef struct p4io_loop p4io_loop;

/* A loop with no ports and no pipeline; NULL (and a message in err) on failure. */
p4io_loop *p4io_create(char *err, int errlen);
/* Open an AF_PACKET socket bound to `ifname` as switch port `port`. 0, or -1 with a one-line
 * message in err ("cannot open interface veth9: No such device"). May be called while the
 * loop runs. */
int p4io_add_port(p4io_loop *loop, uint32_t port, const char *ifname, char *err, int errlen);
/* The number of worker threads (1 to P4IO_MAX_THREADS; default 1). Fixed once a port is
 * open or the loop has run: -1 when `nthreads` is out of range or differs from the fixed
 * number. */
int p4io_set_threads(p4io_loop *loop, uint32_t nthreads);
uint32_t p4io_threads(p4io_loop *loop);
/* Segmentation offload (1) or not (0, the default): every port's sockets carry a virtio-net
 * header (PACKET_VNET_HDR), so a TCP segment its sender left whole (up to P4IO_OFFLOAD_FRAME
 * bytes: larger ones are dropped and counted as rx_dropped) enters the pipeline as one frame,
 * and the frames the pipeline emits for it go out with its header (io.c). Fixed once a port
 * is open: -1 when `on` differs from what is fixed. */
int p4io_set_offload(p4io_loop *loop, int on);
int p4io_offload(p4io_loop *loop);
/* How port `port` moves frames: out[0] 1 = receives through a PACKET_MMAP ring (0: with
 * recvmmsg), out[1] 1 = transmits bypassing the qdisc layer ($P4IO_QDISC_BYPASS=1 and its
 * root qdisc was noqueue when it was opened; 0: through its qdisc). 0, or -1 for a port
 * that is not open. */
int p4io_port_info(p4io_loop *loop, uint32_t port, uint32_t out[2]);
/* Tuning; the defaults come from the environment (P4IO_RX=mmsg: ring_kb 0, P4IO_RING_KB,
 * P4IO_NAP_US, P4IO_NAP_MIN), else 8192, 50, 2.
 * ring_kb: each port's PACKET_MMAP receive ring in KiB (0: receive with recvmmsg); applies
 *   to ports added afterwards. A port whose MTU needs ring slots over 16 KiB uses recvmmsg.
 * nap_us, nap_min: when a wake-up found at least nap_min frames, the loop sleeps nap_us
 *   microseconds and then looks at every port, rather than waiting on the sockets (being
 *   woken by each frame's sender costs the sender dearly when this thread's CPU is idle);
 *   when it finds fewer it waits on the sockets again. nap_us 0: always wait on them. The
 *   price is up to nap_us of extra latency while frames keep coming. */
void p4io_set_tuning(p4io_loop *loop, uint32_t ring_kb, uint32_t nap_us, uint32_t nap_min);
/* The CPU port (-1: none). Frames the pipeline emits to it are queued for p4io_cpu_pop. */
void p4io_set_cpu_port(p4io_loop *loop, int32_t cpu_port);
/* The pipeline (NULL fn: drop everything). May be called while the loop runs: when it
 * returns, the previous pipeline is no longer being called and may be freed. */
void p4io_set_pipeline(p4io_loop *loop, p4io_process_fn fn, void *pipeline);
/* Run the loop until p4io_stop (which is sticky: a stopped loop's p4io_run returns at
 * once): the first worker on the calling thread, the others on threads of their own, which
 * have ended when it returns. Returns 0, or -1 if poll() failed or a thread could not be
 * started. */
int p4io_run(p4io_loop *loop);
/* Make p4io_run return soon; thread-safe, async-signal-safe. */
void p4io_stop(p4io_loop *loop);
/* Run a frame (a PacketOut) through the pipeline as if received on `port`, and send what it
 * emits; thread-safe. The pipeline's result (0 or -1), or -1 when there is no pipeline. */
int p4io_inject(p4io_loop *loop, uint32_t port, const uint8_t *data, uint32_t len);
/* Put a frame straight on a port's wire (or on the CPU queue when `port` is the CPU port);
 * thread-safe. 0 when handed to the kernel, -1 when dropped (and counted). */
int p4io_send(p4io_loop *loop, uint32_t port, const uint8_t *data, uint32_t len);
/* An eventfd that is readable while CPU-port frames are queued: p4io_cpu_pop resets it when
 * it takes the last one, so pop until it returns 0 and do not read the fd yourself. */
int p4io_cpu_fd(p4io_loop *loop);
/* Take the oldest CPU-port frame into buf: 1 = got one (its length in *len_out), 0 = queue
 * empty, -1 = buf too small (the frame stays queued; *len_out is its length). */
int p4io_cpu_pop(p4io_loop *loop, uint8_t *buf, uint32_t cap, uint32_t *len_out);
/* Counters of one port: rx_frames, rx_bytes, tx_frames, tx_bytes, tx_dropped, rx_dropped
 * (the kernel's drops from PACKET_STATISTICS, plus frames too large to receive). All zero
 * for a port number that is not open. */
void p4io_stats(p4io_loop *loop, uint32_t port, uint64_t out[6]);
/* Loop-wide counters: frames emitted to a port that is neither open nor the CPU port,
 * frames dropped because the CPU queue was full, frames dropped by the pipeline (-1) or for
 * want of one. */
void p4io_global_stats(p4io_loop *loop, uint64_t out[3]);
/* Close the ports and free the loop; p4io_run must have returned. */
void p4io_destroy(p4io_loop *loop);

#ifdef __cplusplus
}
#endif
#endif
