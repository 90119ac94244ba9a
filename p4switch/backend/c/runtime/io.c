/* The native packet I/O loop (io.h): AF_PACKET ports <-> a pipeline function.
 *
 * Receiving: each port has a PACKET_MMAP TPACKET_V2 receive ring (no system call per frame
 * or per burst while frames keep coming), or, when its MTU is too large for ring slots of a
 * sensible size or the ring is turned off (p4io_set_tuning, P4IO_RX=mmsg), recvmmsg into
 * per-loop buffers. Sending: frames the pipeline emits are copied into per-port batches,
 * sent with sendmmsg (MSG_DONTWAIT: a full socket buffer drops the frame, as a congested
 * link would).
 *
 * Waiting: poll() on the ports and a wake eventfd; under load (a wake-up found frames) a
 * short timed sleep instead, so that senders do not pay for waking the loop frame by frame
 * (see p4io_set_tuning).
 *
 * Locking: `lock` covers the pipeline pointer and its calls (taken once per burst), the
 * transmit batches and the port table's writers. The receive side of a port belongs to the
 * I/O thread alone. Counters are updated with relaxed atomics so p4io_stats can read them
 * from any thread.
 */
#define _GNU_SOURCE
#include "io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define SOCKET_BUFFER (4 * 1024 * 1024)
#define RING_KB 8192                       /* receive ring per port (P4IO_RING_KB) */
#define RING_BLOCK (64 * 1024)
#define RING_MAX_SLOT (16 * 1024)          /* larger MTUs use recvmmsg */
#define TX_FRAMES 256                      /* frames batched per port before a flush */
#define TX_ARENA (256 * 1024)              /* bytes batched per port before a flush */
#define RX_HEADROOM 16                     /* room to put a VLAN tag back in front */
#define RX_SLOT (RX_HEADROOM + P4IO_MAX_FRAME + 176) /* 176: spread slots over cache sets */
#define NAP_MIN_FRAMES 2                   /* frames per wake-up that count as load */
#define NAP_US 50                          /* default sleep under load (P4IO_NAP_US) */
#define PORT_INDEX 1024                    /* port numbers below this are looked up directly */

#define COUNT(field, n) __atomic_fetch_add(&(field), (uint64_t)(n), __ATOMIC_RELAXED)
#define READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

struct counters {
    uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes, tx_dropped, rx_dropped, kernel_dropped;
};

struct port {
    uint32_t number;
    int fd;
    char ifname[IF_NAMESIZE];
    struct counters c;
    /* receive ring (NULL: recvmmsg) */
    uint8_t *ring;
    size_t ring_bytes;
    uint32_t slot_size, slots, next_slot;
    /* transmit batch */
    struct mmsghdr tx_msgs[TX_FRAMES];
    struct iovec tx_iov[TX_FRAMES];
    uint32_t tx_count;
    size_t tx_used;
    int tx_dirty;
    uint8_t tx_arena[TX_ARENA];
};

struct cpu_frame {
    uint8_t *data;
    uint32_t len;
};

struct p4io_loop {
    pthread_mutex_t lock;
    p4io_process_fn fn;
    void *pipeline;
    int32_t cpu_port;
    struct port *ports[P4IO_MAX_PORTS];
    uint32_t nports;                       /* published with release stores */
    int16_t index[PORT_INDEX];             /* port number -> ports[] index, -1: none */
    struct port *dirty[P4IO_MAX_PORTS];    /* ports with a transmit batch to flush */
    uint32_t ndirty;
    int wake_fd;
    int stopped;
    uint32_t ring_kb;                      /* receive ring per port; 0: recvmmsg */
    uint32_t nap_us, nap_min;              /* read by the I/O thread with relaxed loads */
    /* CPU port queue */
    pthread_mutex_t cpu_lock;
    int cpu_fd;
    struct cpu_frame cpu_queue[P4IO_CPU_QUEUE];
    uint32_t cpu_head, cpu_count;
    /* loop-wide counters */
    uint64_t no_port_dropped, cpu_dropped, pipeline_dropped;
    /* recvmmsg receive buffers (I/O thread only) */
    uint8_t *rx_buffers;
    struct mmsghdr rx_msgs[P4IO_BURST];
    struct iovec rx_iov[P4IO_BURST];
    struct sockaddr_ll rx_addr[P4IO_BURST];
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
    } rx_control[P4IO_BURST];
};

struct rx_frame {
    const uint8_t *data;
    uint32_t len;
};

static void set_error(char *err, int errlen, const char *format, const char *a, const char *b)
{
    if (err && errlen > 0)
        snprintf(err, (size_t)errlen, format, a, b);
}

p4io_loop *p4io_create(char *err, int errlen)
{
    p4io_loop *loop = calloc(1, sizeof(*loop));
    if (!loop) {
        set_error(err, errlen, "%s%s", "out of memory", "");
        return NULL;
    }
    pthread_mutex_init(&loop->lock, NULL);
    pthread_mutex_init(&loop->cpu_lock, NULL);
    loop->cpu_port = -1;
    memset(loop->index, 0xff, sizeof(loop->index));
    const char *rx = getenv("P4IO_RX"), *kb = getenv("P4IO_RING_KB");
    const char *nap = getenv("P4IO_NAP_US"), *nap_min = getenv("P4IO_NAP_MIN");
    p4io_set_tuning(loop, rx && strcmp(rx, "mmsg") == 0 ? 0
                          : kb ? (uint32_t)strtoul(kb, NULL, 10) : RING_KB,
                    nap ? (uint32_t)strtoul(nap, NULL, 10) : NAP_US,
                    nap_min ? (uint32_t)strtoul(nap_min, NULL, 10) : NAP_MIN_FRAMES);
    loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop->cpu_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    /* Buffers are mapped, not allocated: only the pages frames touch are ever backed. */
    loop->rx_buffers = mmap(NULL, (size_t)RX_SLOT * P4IO_BURST, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (loop->wake_fd < 0 || loop->cpu_fd < 0 || loop->rx_buffers == MAP_FAILED) {
        set_error(err, errlen, "cannot create the packet loop: %s%s", strerror(errno), "");
        if (loop->rx_buffers == MAP_FAILED)
            loop->rx_buffers = NULL;
        p4io_destroy(loop);
        return NULL;
    }
    for (int i = 0; i < P4IO_BURST; i++) {
        loop->rx_iov[i].iov_base = loop->rx_buffers + (size_t)i * RX_SLOT + RX_HEADROOM;
        loop->rx_iov[i].iov_len = P4IO_MAX_FRAME - 4;
    }
    return loop;
}

static void close_port(struct port *p)
{
    if (p->ring)
        munmap(p->ring, p->ring_bytes);
    if (p->fd >= 0)
        close(p->fd);
    free(p);
}

void p4io_destroy(p4io_loop *loop)
{
    if (!loop)
        return;
    for (uint32_t i = 0; i < loop->nports; i++)
        close_port(loop->ports[i]);
    for (uint32_t i = 0; i < loop->cpu_count; i++)
        free(loop->cpu_queue[(loop->cpu_head + i) % P4IO_CPU_QUEUE].data);
    if (loop->rx_buffers)
        munmap(loop->rx_buffers, (size_t)RX_SLOT * P4IO_BURST);
    if (loop->wake_fd >= 0)
        close(loop->wake_fd);
    if (loop->cpu_fd >= 0)
        close(loop->cpu_fd);
    pthread_mutex_destroy(&loop->lock);
    pthread_mutex_destroy(&loop->cpu_lock);
    free(loop);
}

static void set_buffer(int fd, int forced, int plain)
{
    int size = SOCKET_BUFFER;
    if (setsockopt(fd, SOL_SOCKET, forced, &size, sizeof(size)) < 0)
        setsockopt(fd, SOL_SOCKET, plain, &size, sizeof(size));
}

/* A TPACKET_V2 receive ring with slots large enough for the interface's MTU; 0, or -1 to
 * fall back to recvmmsg (MTU too large, or the kernel refused). */
static int setup_ring(struct port *p, uint32_t ring_kb)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, p->ifname, sizeof(p->ifname));
    if (ioctl(p->fd, SIOCGIFMTU, &ifr) < 0)
        return -1;
    /* header, address, alignment, Ethernet + two VLAN tags, and some slack */
    uint32_t need = (uint32_t)TPACKET2_HDRLEN + 16 + 32 + (uint32_t)ifr.ifr_mtu + 32;
    uint32_t slot = 2048;
    while (slot < need)
        slot <<= 1;
    if (slot > RING_MAX_SLOT)
        return -1;
    size_t ring_bytes = (size_t)ring_kb * 1024;
    int version = TPACKET_V2;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0)
        return -1;
    struct tpacket_req req = {
        .tp_block_size = RING_BLOCK,
        .tp_block_nr = (unsigned)(ring_bytes / RING_BLOCK),
        .tp_frame_size = slot,
        .tp_frame_nr = (unsigned)(ring_bytes / RING_BLOCK) * (RING_BLOCK / slot),
    };
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
        return -1;
    void *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (ring == MAP_FAILED) {
        memset(&req, 0, sizeof(req));
        setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req));
        return -1;
    }
    p->ring = ring;
    p->ring_bytes = ring_bytes;
    p->slot_size = slot;
    p->slots = req.tp_frame_nr;
    p->next_slot = 0;
    return 0;
}

int p4io_add_port(p4io_loop *loop, uint32_t number, const char *ifname, char *err, int errlen)
{
    char num[16];
    snprintf(num, sizeof(num), "%u", number);
    if (strlen(ifname) >= IF_NAMESIZE || !*ifname) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, "invalid name");
        return -1;
    }
    pthread_mutex_lock(&loop->lock);
    uint32_t n = loop->nports;
    for (uint32_t i = 0; i < n; i++)
        if (loop->ports[i]->number == number) {
            set_error(err, errlen, "port %s is already open (on %s)", num,
                      loop->ports[i]->ifname);
            pthread_mutex_unlock(&loop->lock);
            return -1;
        }
    if (n >= P4IO_MAX_PORTS) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, "too many ports");
        pthread_mutex_unlock(&loop->lock);
        return -1;
    }
    pthread_mutex_unlock(&loop->lock);

    struct port *p = calloc(1, sizeof(*p));
    if (!p) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, "out of memory");
        return -1;
    }
    p->number = number;
    strcpy(p->ifname, ifname);
    /* Protocol 0 until bound: receives nothing from other interfaces in between. */
    p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p->fd < 0) {
        int e = errno;
        if (e == EPERM || e == EACCES)
            set_error(err, errlen, "opening a raw socket for %s needs root (CAP_NET_RAW)",
                      ifname, "");
        else
            set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(e));
        free(p);
        return -1;
    }
    unsigned ifindex = if_nametoindex(ifname);
    if (ifindex == 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    set_buffer(p->fd, SO_RCVBUFFORCE, SO_RCVBUF);
    set_buffer(p->fd, SO_SNDBUFFORCE, SO_SNDBUF);
    int one = 1;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    /* Frames the host sends are not even queued (Linux >= 4.20); sll_pkttype is still
     * checked for older kernels. */
    setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    uint32_t ring_kb = __atomic_load_n(&loop->ring_kb, __ATOMIC_RELAXED);
    if (ring_kb)
        setup_ring(p, ring_kb);
    struct sockaddr_ll addr = {
        .sll_family = AF_PACKET,
        .sll_protocol = htons(ETH_P_ALL),
        .sll_ifindex = (int)ifindex,
    };
    if (bind(p->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    for (int i = 0; i < TX_FRAMES; i++) {
        p->tx_msgs[i].msg_hdr.msg_iov = &p->tx_iov[i];
        p->tx_msgs[i].msg_hdr.msg_iovlen = 1;
    }

    pthread_mutex_lock(&loop->lock);
    n = loop->nports;
    int taken = 0;
    for (uint32_t i = 0; i < n; i++)
        taken |= loop->ports[i]->number == number;
    if (taken || n >= P4IO_MAX_PORTS) {   /* another thread was quicker */
        pthread_mutex_unlock(&loop->lock);
        set_error(err, errlen, "port %s is already open (on %s)", num, "another interface");
        close_port(p);
        return -1;
    }
    loop->ports[n] = p;
    if (number < PORT_INDEX)
        loop->index[number] = (int16_t)n;
    __atomic_store_n(&loop->nports, n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&loop->lock);
    uint64_t wake = 1;
    if (write(loop->wake_fd, &wake, sizeof(wake)) < 0) {
        /* the counter is saturated: the loop wakes anyway */
    }
    return 0;
}

void p4io_set_tuning(p4io_loop *loop, uint32_t ring_kb, uint32_t nap_us, uint32_t nap_min)
{
    if (ring_kb) {      /* whole ring blocks, at least one */
        ring_kb = ring_kb / (RING_BLOCK / 1024) * (RING_BLOCK / 1024);
        if (ring_kb < RING_BLOCK / 1024)
            ring_kb = RING_BLOCK / 1024;
        if (ring_kb > 1024 * 1024)
            ring_kb = 1024 * 1024;
    }
    if (nap_us > 100000)
        nap_us = 100000;
    __atomic_store_n(&loop->ring_kb, ring_kb, __ATOMIC_RELAXED);
    __atomic_store_n(&loop->nap_us, nap_us, __ATOMIC_RELAXED);
    __atomic_store_n(&loop->nap_min, nap_min ? nap_min : 1, __ATOMIC_RELAXED);
}

void p4io_set_cpu_port(p4io_loop *loop, int32_t cpu_port)
{
    pthread_mutex_lock(&loop->lock);
    loop->cpu_port = cpu_port;
    pthread_mutex_unlock(&loop->lock);
}

void p4io_set_pipeline(p4io_loop *loop, p4io_process_fn fn, void *pipeline)
{
    pthread_mutex_lock(&loop->lock);
    loop->fn = fn;
    loop->pipeline = pipeline;
    pthread_mutex_unlock(&loop->lock);
}

/* ---- the CPU port queue ------------------------------------------------------------- */

static void cpu_push(p4io_loop *loop, const uint8_t *data, uint32_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    pthread_mutex_lock(&loop->cpu_lock);
    if (!copy || loop->cpu_count == P4IO_CPU_QUEUE) {
        pthread_mutex_unlock(&loop->cpu_lock);
        free(copy);
        COUNT(loop->cpu_dropped, 1);
        return;
    }
    memcpy(copy, data, len);
    struct cpu_frame *slot = &loop->cpu_queue[(loop->cpu_head + loop->cpu_count) % P4IO_CPU_QUEUE];
    slot->data = copy;
    slot->len = len;
    if (loop->cpu_count++ == 0) {
        uint64_t one = 1;
        if (write(loop->cpu_fd, &one, sizeof(one)) < 0) {
            /* cannot overflow: it is reset whenever the queue empties */
        }
    }
    pthread_mutex_unlock(&loop->cpu_lock);
}

int p4io_cpu_fd(p4io_loop *loop)
{
    return loop->cpu_fd;
}

int p4io_cpu_pop(p4io_loop *loop, uint8_t *buf, uint32_t cap, uint32_t *len_out)
{
    pthread_mutex_lock(&loop->cpu_lock);
    if (loop->cpu_count == 0) {
        pthread_mutex_unlock(&loop->cpu_lock);
        return 0;
    }
    struct cpu_frame *slot = &loop->cpu_queue[loop->cpu_head];
    *len_out = slot->len;
    if (slot->len > cap) {
        pthread_mutex_unlock(&loop->cpu_lock);
        return -1;
    }
    memcpy(buf, slot->data, slot->len);
    free(slot->data);
    slot->data = NULL;
    loop->cpu_head = (loop->cpu_head + 1) % P4IO_CPU_QUEUE;
    if (--loop->cpu_count == 0) {
        uint64_t value;
        if (read(loop->cpu_fd, &value, sizeof(value)) < 0) {
            /* already reset */
        }
    }
    pthread_mutex_unlock(&loop->cpu_lock);
    return 1;
}

/* ---- transmitting (under loop->lock) ----------------------------------------------- */

static struct port *find_port(p4io_loop *loop, uint32_t number)
{
    if (number < PORT_INDEX) {
        int i = loop->index[number];
        return i >= 0 ? loop->ports[i] : NULL;
    }
    uint32_t n = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (loop->ports[i]->number == number)
            return loop->ports[i];
    return NULL;
}

/* Send a port's batch; returns how many frames were dropped. */
static uint32_t flush_port(struct port *p)
{
    uint32_t done = 0, dropped = 0;
    uint64_t sent_bytes = 0;
    while (done < p->tx_count) {
        int r = sendmmsg(p->fd, &p->tx_msgs[done], p->tx_count - done, MSG_DONTWAIT);
        if (r > 0) {
            for (int i = 0; i < r; i++)
                sent_bytes += p->tx_iov[done + i].iov_len;
            done += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN) {
            /* socket buffer full: the rest would be refused as well */
            dropped += p->tx_count - done;
            done = p->tx_count;
            break;
        }
        /* ENOBUFS (the device's queue is full), EMSGSIZE, ENETDOWN, ...: this frame */
        dropped++;
        done++;
    }
    COUNT(p->c.tx_frames, p->tx_count - dropped);
    COUNT(p->c.tx_bytes, sent_bytes);
    if (dropped)
        COUNT(p->c.tx_dropped, dropped);
    p->tx_count = 0;
    p->tx_used = 0;
    return dropped;
}

/* Send every batch; the port stays on the dirty list (once) until this. */
static void flush_all(p4io_loop *loop)
{
    for (uint32_t i = 0; i < loop->ndirty; i++) {
        flush_port(loop->dirty[i]);
        loop->dirty[i]->tx_dirty = 0;
    }
    loop->ndirty = 0;
}

/* Queue a frame on a port's batch (flushing it first when full). 0, or -1 if dropped. */
static int enqueue(p4io_loop *loop, struct port *p, const uint8_t *data, uint32_t len)
{
    if (len > P4IO_MAX_FRAME) {
        COUNT(p->c.tx_dropped, 1);
        return -1;
    }
    if (p->tx_count == TX_FRAMES || p->tx_used + len > TX_ARENA)
        flush_port(p);
    uint8_t *copy = p->tx_arena + p->tx_used;
    memcpy(copy, data, len);
    p->tx_iov[p->tx_count].iov_base = copy;
    p->tx_iov[p->tx_count].iov_len = len;
    p->tx_count++;
    p->tx_used += (len + 63u) & ~63u;      /* keep copies cache-line aligned */
    if (!p->tx_dirty) {
        p->tx_dirty = 1;
        loop->dirty[loop->ndirty++] = p;
    }
    return 0;
}

static void emit(void *ctx, uint32_t port, const uint8_t *data, uint32_t len)
{
    p4io_loop *loop = ctx;
    if (loop->cpu_port >= 0 && port == (uint32_t)loop->cpu_port) {
        cpu_push(loop, data, len);
        return;
    }
    struct port *p = find_port(loop, port);
    if (!p) {
        COUNT(loop->no_port_dropped, 1);
        return;
    }
    enqueue(loop, p, data, len);
}

int p4io_send(p4io_loop *loop, uint32_t port, const uint8_t *data, uint32_t len)
{
    int result = -1;
    pthread_mutex_lock(&loop->lock);
    if (loop->cpu_port >= 0 && port == (uint32_t)loop->cpu_port) {
        uint64_t before = READ(loop->cpu_dropped);
        cpu_push(loop, data, len);
        result = READ(loop->cpu_dropped) == before ? 0 : -1;
    } else {
        struct port *p = find_port(loop, port);
        if (!p) {
            COUNT(loop->no_port_dropped, 1);
        } else {
            uint64_t before = READ(p->c.tx_dropped);
            enqueue(loop, p, data, len);
            flush_all(loop);
            result = READ(p->c.tx_dropped) == before ? 0 : -1;
        }
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int p4io_inject(p4io_loop *loop, uint32_t port, const uint8_t *data, uint32_t len)
{
    int result;
    pthread_mutex_lock(&loop->lock);
    if (loop->fn) {
        result = loop->fn(loop->pipeline, port, data, len, emit, loop);
        if (result < 0)
            COUNT(loop->pipeline_dropped, 1);
    } else {
        COUNT(loop->pipeline_dropped, 1);
        result = -1;
    }
    flush_all(loop);
    pthread_mutex_unlock(&loop->lock);
    return result < 0 ? -1 : 0;
}

/* ---- receiving (I/O thread) -------------------------------------------------------- */

/* Put the VLAN tag the kernel took out back after the MAC addresses; `data` has at least 4
 * bytes of room in front. Returns the new start. */
static uint8_t *restore_vlan(uint8_t *data, uint32_t *len, uint32_t status, uint16_t tci,
                             uint16_t tpid)
{
    if (!(status & TP_STATUS_VLAN_VALID) || *len < 12)
        return data;
    if (!(status & TP_STATUS_VLAN_TPID_VALID))
        tpid = ETH_P_8021Q;
    uint8_t *start = data - 4;
    memmove(start, data, 12);
    start[12] = (uint8_t)(tpid >> 8);
    start[13] = (uint8_t)tpid;
    start[14] = (uint8_t)(tci >> 8);
    start[15] = (uint8_t)tci;
    *len += 4;
    return start;
}

static inline struct tpacket2_hdr *ring_slot(struct port *p, uint32_t i)
{
    return (struct tpacket2_hdr *)(p->ring + (size_t)i * p->slot_size);
}

/* Up to P4IO_BURST frames from the ring; the slots stay the loop's until ring_release. */
static int ring_receive(struct port *p, struct rx_frame *out, int *taken)
{
    int n = 0, t = 0;
    uint32_t i = p->next_slot;
    uint64_t truncated = 0;
    while (t < P4IO_BURST) {
        struct tpacket2_hdr *h = ring_slot(p, i);
        uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(status & TP_STATUS_USER))
            break;
        t++;
        i = i + 1 == p->slots ? 0 : i + 1;
        const struct sockaddr_ll *sll =
            (const struct sockaddr_ll *)((uint8_t *)h + TPACKET_ALIGN(sizeof(*h)));
        if (sll->sll_pkttype == PACKET_OUTGOING)
            continue;
        if ((status & TP_STATUS_COPY) || h->tp_snaplen < h->tp_len) {
            truncated++;
            continue;
        }
        uint8_t *data = (uint8_t *)h + h->tp_mac;
        uint32_t len = h->tp_snaplen;
        if ((status & TP_STATUS_VLAN_VALID) && h->tp_mac >= TPACKET2_HDRLEN + 4)
            data = restore_vlan(data, &len, status, h->tp_vlan_tci, h->tp_vlan_tpid);
        else if (status & TP_STATUS_VLAN_VALID) {
            truncated++;     /* no room in front: cannot happen with the kernel's layout */
            continue;
        }
        out[n].data = data;
        out[n].len = len;
        n++;
    }
    if (truncated)
        COUNT(p->c.rx_dropped, truncated);
    *taken = t;
    return n;
}

static void ring_release(struct port *p, int taken)
{
    for (int k = 0; k < taken; k++) {
        __atomic_store_n(&ring_slot(p, p->next_slot)->tp_status, TP_STATUS_KERNEL,
                         __ATOMIC_RELEASE);
        p->next_slot = p->next_slot + 1 == p->slots ? 0 : p->next_slot + 1;
    }
}

static int mmsg_receive(p4io_loop *loop, struct port *p, struct rx_frame *out, int *taken)
{
    for (int i = 0; i < P4IO_BURST; i++) {
        struct msghdr *m = &loop->rx_msgs[i].msg_hdr;
        m->msg_name = &loop->rx_addr[i];
        m->msg_namelen = sizeof(loop->rx_addr[i]);
        m->msg_iov = &loop->rx_iov[i];
        m->msg_iovlen = 1;
        m->msg_control = loop->rx_control[i].space;
        m->msg_controllen = sizeof(loop->rx_control[i].space);
        m->msg_flags = 0;
    }
    int r = recvmmsg(p->fd, loop->rx_msgs, P4IO_BURST, MSG_DONTWAIT, NULL);
    if (r <= 0) {
        /* EAGAIN, or an error the socket reported (ENETDOWN while the link is down),
         * which reading has cleared: the port stays */
        *taken = 0;
        return 0;
    }
    int n = 0;
    uint64_t truncated = 0;
    for (int i = 0; i < r; i++) {
        struct msghdr *m = &loop->rx_msgs[i].msg_hdr;
        if (loop->rx_addr[i].sll_pkttype == PACKET_OUTGOING)
            continue;
        if (m->msg_flags & MSG_TRUNC) {
            truncated++;
            continue;
        }
        uint8_t *data = loop->rx_iov[i].iov_base;
        uint32_t len = loop->rx_msgs[i].msg_len;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
            if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA &&
                c->cmsg_len >= CMSG_LEN(sizeof(struct tpacket_auxdata))) {
                struct tpacket_auxdata aux;
                memcpy(&aux, CMSG_DATA(c), sizeof(aux));
                data = restore_vlan(data, &len, aux.tp_status, aux.tp_vlan_tci,
                                    aux.tp_vlan_tpid);
            }
        }
        out[n].data = data;
        out[n].len = len;
        n++;
    }
    if (truncated)
        COUNT(p->c.rx_dropped, truncated);
    *taken = r;
    return n;
}

/* One burst from one port through the pipeline; returns how many frames were taken off the
 * socket (P4IO_BURST: there may be more). */
static int port_burst(p4io_loop *loop, struct port *p)
{
    struct rx_frame frames[P4IO_BURST];
    int taken;
    int n = p->ring ? ring_receive(p, frames, &taken) : mmsg_receive(loop, p, frames, &taken);
    if (n > 0) {
        uint64_t bytes = 0;
        for (int i = 0; i < n; i++)
            bytes += frames[i].len;
        COUNT(p->c.rx_frames, n);
        COUNT(p->c.rx_bytes, bytes);
        pthread_mutex_lock(&loop->lock);
        p4io_process_fn fn = loop->fn;
        void *pipeline = loop->pipeline;
        if (fn) {
            uint64_t failed = 0;
            for (int i = 0; i < n; i++)
                failed += fn(pipeline, p->number, frames[i].data, frames[i].len, emit, loop) < 0;
            if (failed)
                COUNT(loop->pipeline_dropped, failed);
        } else {
            COUNT(loop->pipeline_dropped, n);
        }
        flush_all(loop);
        pthread_mutex_unlock(&loop->lock);
    }
    if (p->ring)
        ring_release(p, taken);
    return taken;
}

int p4io_run(p4io_loop *loop)
{
    struct pollfd fds[P4IO_MAX_PORTS + 1];
    int more[P4IO_MAX_PORTS];
    uint32_t n = 0;
    int napping = 0;
    fds[0].fd = loop->wake_fd;
    fds[0].events = POLLIN;
    while (!__atomic_load_n(&loop->stopped, __ATOMIC_ACQUIRE)) {
        uint32_t now = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
        for (; n < now; n++) {
            fds[n + 1].fd = loop->ports[n]->fd;
            fds[n + 1].events = POLLIN;
            fds[n + 1].revents = 0;
        }
        /* Under load, sleep a fixed short time and then look at every port, instead of
         * waiting on the sockets: a thread waiting on a socket is woken by each frame's
         * sender, which costs the sender dearly when the waiter's CPU is idle (an IPI, a
         * VM exit on a virtual machine). Without load, wait on the sockets. */
        uint32_t nap_us = __atomic_load_n(&loop->nap_us, __ATOMIC_RELAXED);
        const struct timespec nap = {0, (long)nap_us * 1000};
        int r = napping && nap_us ? ppoll(fds, 1, &nap, NULL) : poll(fds, n + 1, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (fds[0].revents) {
            uint64_t value;
            if (read(loop->wake_fd, &value, sizeof(value)) < 0) {
                /* a concurrent wake-up was consumed already */
            }
        }
        int any = 0;
        for (uint32_t i = 0; i < n; i++) {
            short ev = napping ? POLLIN : fds[i + 1].revents;
            if (ev & POLLERR) {
                /* e.g. ENETDOWN when the link went down: reading SO_ERROR clears it */
                int e;
                socklen_t l = sizeof(e);
                getsockopt(fds[i + 1].fd, SOL_SOCKET, SO_ERROR, &e, &l);
            }
            more[i] = (ev & POLLIN) != 0;
            any |= more[i];
        }
        /* Rounds over the ports until each has given fewer than a full burst. */
        uint32_t taken = 0;
        while (any && !__atomic_load_n(&loop->stopped, __ATOMIC_RELAXED)) {
            any = 0;
            for (uint32_t i = 0; i < n; i++) {
                if (!more[i])
                    continue;
                int got = port_burst(loop, loop->ports[i]);
                taken += (uint32_t)got;
                more[i] = got == P4IO_BURST;
                any |= more[i];
            }
        }
        napping = taken >= __atomic_load_n(&loop->nap_min, __ATOMIC_RELAXED);
    }
    return 0;
}

void p4io_stop(p4io_loop *loop)
{
    __atomic_store_n(&loop->stopped, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (write(loop->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter is saturated: the loop wakes anyway */
    }
}

void p4io_stats(p4io_loop *loop, uint32_t port, uint64_t out[6])
{
    memset(out, 0, 6 * sizeof(uint64_t));
    struct port *p = NULL;
    uint32_t n = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (loop->ports[i]->number == port)
            p = loop->ports[i];
    if (!p)
        return;
    struct tpacket_stats st;      /* TPACKET_V1/V2 layout; reading resets the kernel's */
    socklen_t len = sizeof(st);
    if (getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
        COUNT(p->c.kernel_dropped, st.tp_drops);
    out[0] = READ(p->c.rx_frames);
    out[1] = READ(p->c.rx_bytes);
    out[2] = READ(p->c.tx_frames);
    out[3] = READ(p->c.tx_bytes);
    out[4] = READ(p->c.tx_dropped);
    out[5] = READ(p->c.rx_dropped) + READ(p->c.kernel_dropped);
}

void p4io_global_stats(p4io_loop *loop, uint64_t out[3])
{
    out[0] = READ(loop->no_port_dropped);
    out[1] = READ(loop->cpu_dropped);
    out[2] = READ(loop->pipeline_dropped);
}
