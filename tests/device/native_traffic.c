/* Benchmark support (native_traffic.py, for bench_native_io.py and bench_veth.py): a paced
 * raw-socket sender and a counting receiver, both on already-bound AF_PACKET sockets (opened
 * in the hosts' namespaces), so that Python is not what limits the rate. Frames carry a
 * 64-bit sequence number at a given offset (after the EtherType for raw frames, in the UDP
 * payload for routed IPv4 ones). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 32
#define RING_BLOCK (64 * 1024)
#define RING_BYTES (16 * 1024 * 1024)
#define RING_SLOT 2048

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Send `count` copies of `frame` (the sequence number written at `seq_at`) on socket `fd`,
 * at `rate` frames/s (0: as fast as the socket takes them; sends block when its buffer is
 * full). Returns how many were sent; *elapsed_ns the time it took. */
uint64_t traffic_send(int fd, const uint8_t *frame, uint32_t len, uint32_t seq_at,
                      uint64_t count, double rate, uint64_t *elapsed_ns)
{
    static uint8_t buffers[BATCH][2048];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    if (len > sizeof(buffers[0]) || seq_at + 8 > len)
        return 0;
    prctl(PR_SET_TIMERSLACK, 1UL);
    memset(msgs, 0, sizeof(msgs));
    for (int i = 0; i < BATCH; i++) {
        memcpy(buffers[i], frame, len);
        iov[i].iov_base = buffers[i];
        iov[i].iov_len = len;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    uint64_t start = now_ns(), sent = 0;
    while (sent < count) {
        if (rate > 0) {
            uint64_t due = start + (uint64_t)((double)sent * 1e9 / rate);
            if (due > now_ns() + 2000) {
                struct timespec t = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
            }
        }
        uint32_t n = count - sent < BATCH ? (uint32_t)(count - sent) : BATCH;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t seq = sent + i;
            memcpy(buffers[i] + seq_at, &seq, sizeof(seq));
        }
        int r = sendmmsg(fd, msgs, n, 0);
        if (r < 0) {
            if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
                continue;
            break;
        }
        sent += (uint64_t)r;
    }
    *elapsed_ns = now_ns() - start;
    return sent;
}

/* Count frames of `len` bytes and EtherType `ethertype` (sequence number at `seq_at`)
 * arriving on socket `fd` (through a TPACKET_V2 ring set up here) until `count` arrived or
 * none came for `idle_ms`. When the ring runs dry after frames came, it sleeps
 * $TRAFFIC_NAP_US microseconds (if set) rather than wait on the socket, as the loop does
 * under load. out[0]: received, out[1]: first arrival, out[2]: last arrival
 * (CLOCK_MONOTONIC ns), out[3]: frames out of sequence order, out[4]: the kernel's drops on
 * this socket. `ready` is set to 1 once the ring is set up. Returns 0, or -errno. */
int traffic_receive(int fd, uint32_t len, uint16_t ethertype, uint32_t seq_at, uint64_t count,
                    int idle_ms, uint64_t out[5], volatile int *ready)
{
    int version = TPACKET_V2;
    struct tpacket_req req = {RING_BLOCK, RING_BYTES / RING_BLOCK, RING_SLOT,
                              (RING_BYTES / RING_BLOCK) * (RING_BLOCK / RING_SLOT)};
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
        return -errno;
    uint8_t *ring = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return -errno;
    struct tpacket_stats st;
    socklen_t sl = sizeof(st);
    getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl);    /* reset */
    memset(out, 0, 5 * sizeof(uint64_t));
    *ready = 1;
    uint32_t slot = 0;
    uint64_t expected = 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    int busy = 0;
    const char *nap_env = getenv("TRAFFIC_NAP_US");
    long nap_us = nap_env ? atol(nap_env) : 0;
    while (out[0] < count) {
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(ring + (size_t)slot * RING_SLOT);
        if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
            if (busy && nap_us > 0) {
                /* frames were coming: look again after a nap rather than being woken per
                 * frame by the sender (waking a halted vCPU is costly for the waker) */
                struct timespec t = {0, nap_us * 1000};
                nanosleep(&t, NULL);
                busy = 0;
                continue;
            }
            int r = poll(&pfd, 1, idle_ms);
            if (r == 0)
                break;
            continue;
        }
        busy = 1;
        const uint8_t *data = (uint8_t *)h + h->tp_mac;
        const struct sockaddr_ll *sll =
            (const struct sockaddr_ll *)((uint8_t *)h + TPACKET_ALIGN(sizeof(*h)));
        if (sll->sll_pkttype != PACKET_OUTGOING && h->tp_len == len && seq_at + 8 <= len &&
            data[12] == (ethertype >> 8) && data[13] == (ethertype & 0xff)) {
            uint64_t seq;
            memcpy(&seq, data + seq_at, sizeof(seq));
            out[2] = now_ns();
            if (out[0]++ == 0)
                out[1] = out[2];
            if (seq != expected)
                out[3]++;
            expected = seq + 1;
        }
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        slot = slot + 1 == req.tp_frame_nr ? 0 : slot + 1;
    }
    sl = sizeof(st);
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
        out[4] = st.tp_drops;
    munmap(ring, RING_BYTES);
    return 0;
}
