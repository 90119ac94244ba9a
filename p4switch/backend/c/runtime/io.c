/* The native packet I/O loop (io.h): AF_PACKET ports <-> a pipeline function.
 *
 * Receiving: each port has a PACKET_MMAP TPACKET_V2 receive ring (no system call per frame
 * or per burst while frames keep coming), or, when its MTU is too large for ring slots of a
 * sensible size or the ring is turned off (p4io_set_tuning, P4IO_RX=mmsg), recvmmsg into
 * per-worker buffers (io_receive.h). Sending: frames the pipeline emits are copied into
 * per-port batches, sent with sendmmsg (MSG_DONTWAIT: a full socket buffer drops the frame, as a congested
 * link would).
 *
 * With $P4IO_QDISC_BYPASS=1, transmitting bypasses the qdisc layer (PACKET_QDISC_BYPASS)
 * on ports whose root qdisc is noqueue (a veth's default) when they are opened; a port with
 * a shaping qdisc (tbf, netem) keeps going through it. Off by default: a qdisc added to the
 * port later would be bypassed too, and it saved at most 0.2 us per frame (docs/native.md).
 *
 * Segmentation offload (p4io_set_offload): every socket carries a virtio-net header
 * (PACKET_VNET_HDR) in front of each frame, so a TCP send the host's stack left whole
 * (TSO/GSO: several segments, up to the ring slot's size) is one frame for the pipeline. The
 * header it came with goes out with every frame the pipeline emits for it, and the kernel of
 * the next hop cuts it where it must. A frame of one segment whose checksum the sender left
 * partial gets it finished on arrival, as the sender's NIC would have, and goes on without a
 * header, as do the frames of inject and send. (The Python loop's reference of the same:
 * p4switch/device/segments.py.)
 *
 * Waiting: poll() on the ports and a wake eventfd; under load (a wake-up found frames) a
 * short timed sleep instead, so that senders do not pay for waking the loop frame by frame
 * (see p4io_set_tuning).
 *
 * Threads (p4io_set_threads): worker w receives on the ports added w-th, w+nthreads-th, ...
 * (frames of one port keep their order) and has its own transmit batches on every port; a
 * worker's transmit side of a port is its own socket, so workers never share a batch.
 * p4io_inject and p4io_send use one more set of batches, under `lock`.
 *
 * Locking: the pipeline pointer is under `pipeline_lock`, a reader-writer lock that workers
 * hold for reading over a burst and p4io_set_pipeline takes for writing (so the previous
 * pipeline is out of use when it returns). The pipeline itself serialises its state (the
 * C back end takes the switch's mutex per packet). `lock` covers the port table's writers
 * and the control batches. The receive side of a port belongs to its worker alone.
 * Counters are updated with relaxed atomics so p4io_stats can read them from any thread.
 */
#define _GNU_SOURCE
#include "io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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

struct port;

/* One worker's (or the control side's) transmit batch on one port, on a socket of its own. */
struct txq {
    struct port *port;
    int fd;
    int dirty;
    uint32_t vnet_size;                    /* header in front of each frame (0: none) */
    uint32_t count;
    size_t used;
    struct mmsghdr msgs[TX_FRAMES];
    struct iovec iov[TX_FRAMES];
    uint8_t arena[TX_ARENA];
};

struct port {
    uint32_t number;
    int fd;                                /* receiving */
    unsigned ifindex;
    char ifname[IF_NAMESIZE];
    struct counters c;
    /* receive ring (NULL: recvmmsg) */
    uint8_t *ring;
    size_t ring_bytes;
    uint32_t slot_size, slots, next_slot;
    uint32_t vnet_size;                    /* sizeof(struct virtio_net_hdr) with offload, or 0 */
    int qdisc_bypass;                      /* the transmit sockets skip the qdisc layer */
    uint32_t ntx;
    struct txq *tx[];                      /* one per worker, then the control side's */
};

struct cpu_frame {
    uint8_t *data;
    uint32_t len;
};

/* A datapath thread: receives on its share of the ports, transmits on its own batches. */
struct worker {
    p4io_loop *loop;
    uint32_t id;
    int wake_fd;                           /* written to wake this worker */
    pthread_t thread;
    int started;
    struct txq *dirty[P4IO_MAX_PORTS];     /* batches to flush */
    uint32_t ndirty;
    /* the frame in the pipeline (segmentation offload): its header, bytes and length */
    struct virtio_net_hdr vnet;
    const uint8_t *vnet_data;
    uint32_t vnet_len;
    /* recvmmsg receive buffers */
    uint8_t *rx_buffers;
    struct mmsghdr rx_msgs[P4IO_BURST];
    struct iovec rx_iov[P4IO_BURST];
    struct sockaddr_ll rx_addr[P4IO_BURST];
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
    } rx_control[P4IO_BURST];
};

struct p4io_loop {
    pthread_mutex_t lock;
    pthread_rwlock_t pipeline_lock;
    p4io_process_fn fn;
    void *pipeline;
    int32_t cpu_port;                      /* written under lock, read with relaxed loads */
    struct port *ports[P4IO_MAX_PORTS];
    uint32_t nports;                       /* published with release stores */
    int16_t index[PORT_INDEX];             /* port number -> ports[] index, -1: none */
    int stopped;
    uint32_t ring_kb;                      /* receive ring per port; 0: recvmmsg */
    uint32_t nap_us, nap_min;              /* read by the workers with relaxed loads */
    uint32_t nthreads;                     /* fixed once a port is open */
    int bypass;                            /* $P4IO_QDISC_BYPASS=1 */
    int offload;                           /* virtio-net headers; fixed once a port is open */
    struct worker *workers[P4IO_MAX_THREADS];
    struct worker *control;                /* inject and send, under lock */
    /* CPU port queue */
    pthread_mutex_t cpu_lock;
    int cpu_fd;
    struct cpu_frame cpu_queue[P4IO_CPU_QUEUE];
    uint32_t cpu_head, cpu_count;
    /* loop-wide counters */
    uint64_t no_port_dropped, cpu_dropped, pipeline_dropped;
};

struct rx_frame {
    const uint8_t *data;
    uint32_t len;
    struct virtio_net_hdr vnet;            /* with segmentation offload */
};

static void set_error(char *err, int errlen, const char *format, const char *a, const char *b)
{
    if (err && errlen > 0)
        snprintf(err, (size_t)errlen, format, a, b);
}

static void wake_workers(p4io_loop *loop)
{
    uint64_t one = 1;
    for (uint32_t w = 0; w <= P4IO_MAX_THREADS; w++) {
        struct worker *k = w < P4IO_MAX_THREADS
            ? __atomic_load_n(&loop->workers[w], __ATOMIC_ACQUIRE) : loop->control;
        if (k && k->wake_fd >= 0 && write(k->wake_fd, &one, sizeof(one)) < 0) {
            /* the counter is saturated: the worker wakes anyway */
        }
    }
}

static void free_worker(struct worker *k)
{
    if (!k)
        return;
    if (k->rx_buffers)
        munmap(k->rx_buffers, (size_t)RX_SLOT * P4IO_BURST);
    if (k->wake_fd >= 0)
        close(k->wake_fd);
    free(k);
}

static struct worker *new_worker(p4io_loop *loop, uint32_t id)
{
    struct worker *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->loop = loop;
    k->id = id;
    k->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    /* Buffers are mapped, not allocated: only the pages frames touch are ever backed. */
    k->rx_buffers = mmap(NULL, (size_t)RX_SLOT * P4IO_BURST, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (k->rx_buffers == MAP_FAILED)
        k->rx_buffers = NULL;
    if (k->wake_fd < 0 || !k->rx_buffers) {
        free_worker(k);
        return NULL;
    }
    for (int i = 0; i < P4IO_BURST; i++) {
        k->rx_iov[i].iov_base = k->rx_buffers + (size_t)i * RX_SLOT + RX_HEADROOM;
        k->rx_iov[i].iov_len = P4IO_MAX_FRAME - 4;
    }
    return k;
}

/* The workers, once: their number is fixed from then on (under lock). */
static int make_workers(p4io_loop *loop)
{
    if (loop->workers[0])
        return 0;
    struct worker *made[P4IO_MAX_THREADS] = {0};
    for (uint32_t w = 0; w < loop->nthreads; w++)
        if (!(made[w] = new_worker(loop, w))) {
            while (w > 0)
                free_worker(made[--w]);
            return -1;
        }
    for (uint32_t w = loop->nthreads; w-- > 0;)   /* workers[0] last: it says "made" */
        __atomic_store_n(&loop->workers[w], made[w], __ATOMIC_RELEASE);
    return 0;
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
    /* Writers first: a pipeline swap must not wait for the workers to fall idle together. */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&loop->pipeline_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    loop->cpu_port = -1;
    loop->nthreads = 1;
    memset(loop->index, 0xff, sizeof(loop->index));
    const char *rx = getenv("P4IO_RX"), *kb = getenv("P4IO_RING_KB");
    const char *nap = getenv("P4IO_NAP_US"), *nap_min = getenv("P4IO_NAP_MIN");
    const char *bypass = getenv("P4IO_QDISC_BYPASS");
    loop->bypass = bypass && strcmp(bypass, "1") == 0;
    p4io_set_tuning(loop, rx && strcmp(rx, "mmsg") == 0 ? 0
                          : kb ? (uint32_t)strtoul(kb, NULL, 10) : RING_KB,
                    nap ? (uint32_t)strtoul(nap, NULL, 10) : NAP_US,
                    nap_min ? (uint32_t)strtoul(nap_min, NULL, 10) : NAP_MIN_FRAMES);
    loop->cpu_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop->control = new_worker(loop, P4IO_MAX_THREADS);
    if (loop->cpu_fd < 0 || !loop->control) {
        set_error(err, errlen, "cannot create the packet loop: %s%s", strerror(errno), "");
        p4io_destroy(loop);
        return NULL;
    }
    return loop;
}

int p4io_set_threads(p4io_loop *loop, uint32_t nthreads)
{
    if (nthreads < 1 || nthreads > P4IO_MAX_THREADS)
        return -1;
    pthread_mutex_lock(&loop->lock);
    int fixed = loop->workers[0] != NULL;
    if (!fixed)
        loop->nthreads = nthreads;
    pthread_mutex_unlock(&loop->lock);
    return fixed && loop->nthreads != nthreads ? -1 : 0;
}

uint32_t p4io_threads(p4io_loop *loop)
{
    return loop->nthreads;
}

int p4io_set_offload(p4io_loop *loop, int on)
{
    pthread_mutex_lock(&loop->lock);
    int fixed = loop->nports > 0;
    if (!fixed)
        loop->offload = on != 0;
    int now = loop->offload;
    pthread_mutex_unlock(&loop->lock);
    return now == (on != 0) ? 0 : -1;
}

int p4io_offload(p4io_loop *loop)
{
    return loop->offload;
}

static void close_port(struct port *p)
{
    for (uint32_t i = 0; i < p->ntx; i++)
        if (p->tx[i]) {
            if (p->tx[i]->fd >= 0)
                close(p->tx[i]->fd);
            free(p->tx[i]);
        }
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
    for (uint32_t w = 0; w < P4IO_MAX_THREADS; w++)
        free_worker(loop->workers[w]);
    free_worker(loop->control);
    if (loop->cpu_fd > 0)
        close(loop->cpu_fd);
    pthread_mutex_destroy(&loop->lock);
    pthread_mutex_destroy(&loop->cpu_lock);
    pthread_rwlock_destroy(&loop->pipeline_lock);
    free(loop);
}

static void set_buffer(int fd, int forced, int plain)
{
    int size = SOCKET_BUFFER;
    if (setsockopt(fd, SOL_SOCKET, forced, &size, sizeof(size)) < 0)
        setsockopt(fd, SOL_SOCKET, plain, &size, sizeof(size));
}

/* Whether the interface's root qdisc is noqueue (rtnetlink's IFLA_QDISC); 0 when unsure. */
static int qdisc_is_noqueue(unsigned ifindex)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return 0;
    struct {
        struct nlmsghdr h;
        struct ifinfomsg i;
    } request = {
        .h = {.nlmsg_len = sizeof(request), .nlmsg_type = RTM_GETLINK,
              .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
        .i = {.ifi_family = AF_UNSPEC, .ifi_index = (int)ifindex},
    };
    static _Thread_local char reply[16384];
    int noqueue = 0;
    ssize_t n = -1;
    if (send(fd, &request, sizeof(request), 0) == (ssize_t)sizeof(request))
        n = recv(fd, reply, sizeof(reply), 0);
    close(fd);
    struct nlmsghdr *h = (struct nlmsghdr *)reply;
    if (n <= 0 || !NLMSG_OK(h, (size_t)n) || h->nlmsg_type != RTM_NEWLINK)
        return 0;
    struct ifinfomsg *info = NLMSG_DATA(h);
    int left = (int)IFLA_PAYLOAD(h);
    for (struct rtattr *a = IFLA_RTA(info); RTA_OK(a, left); a = RTA_NEXT(a, left))
        if (a->rta_type == IFLA_QDISC)
            noqueue = strncmp(RTA_DATA(a), "noqueue", RTA_PAYLOAD(a)) == 0;
    return noqueue;
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
    if (p->vnet_size)      /* segments left whole: as large as a slot may be (P4IO_OFFLOAD_FRAME) */
        slot = RING_MAX_SLOT;
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

/* A transmit batch on a socket of its own (protocol 0: it receives nothing). */
static struct txq *open_txq(struct port *p)
{
    struct txq *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->port = p;
    q->vnet_size = p->vnet_size;
    q->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_ifindex = (int)p->ifindex};
    int on = 1;
    if (q->fd < 0 || (q->vnet_size &&
                      setsockopt(q->fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof(on)) < 0) ||
        bind(q->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        if (q->fd >= 0)
            close(q->fd);
        free(q);
        return NULL;
    }
    set_buffer(q->fd, SO_SNDBUFFORCE, SO_SNDBUF);
    int one = 1;
    if (p->qdisc_bypass)
        setsockopt(q->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    for (int i = 0; i < TX_FRAMES; i++) {
        q->msgs[i].msg_hdr.msg_iov = &q->iov[i];
        q->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return q;
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
    if (make_workers(loop) < 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, "out of memory");
        pthread_mutex_unlock(&loop->lock);
        return -1;
    }
    uint32_t ntx = loop->nthreads + 1;
    uint32_t vnet_size = loop->offload ? (uint32_t)sizeof(struct virtio_net_hdr) : 0;
    pthread_mutex_unlock(&loop->lock);

    struct port *p = calloc(1, sizeof(*p) + ntx * sizeof(struct txq *));
    if (!p) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, "out of memory");
        return -1;
    }
    p->number = number;
    p->vnet_size = vnet_size;
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
    p->ifindex = if_nametoindex(ifname);
    if (p->ifindex == 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    set_buffer(p->fd, SO_RCVBUFFORCE, SO_RCVBUF);
    int one = 1;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    /* Frames the host sends are not even queued (Linux >= 4.20); sll_pkttype is still
     * checked for older kernels. */
    setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    if (p->vnet_size && setsockopt(p->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0) {
        set_error(err, errlen, "cannot open interface %s with segmentation offload: %s",
                  ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    uint32_t ring_kb = __atomic_load_n(&loop->ring_kb, __ATOMIC_RELAXED);
    if (ring_kb)
        setup_ring(p, ring_kb);
    struct sockaddr_ll addr = {
        .sll_family = AF_PACKET,
        .sll_protocol = htons(ETH_P_ALL),
        .sll_ifindex = (int)p->ifindex,
    };
    if (bind(p->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
        close_port(p);
        return -1;
    }
    /* A shaping qdisc must see every frame; noqueue has nothing to do but cost. */
    p->qdisc_bypass = loop->bypass && qdisc_is_noqueue(p->ifindex);
    for (p->ntx = 0; p->ntx < ntx; p->ntx++)
        if (!(p->tx[p->ntx] = open_txq(p))) {
            set_error(err, errlen, "cannot open interface %s: %s", ifname, strerror(errno));
            close_port(p);
            return -1;
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
    __atomic_store_n(&loop->ports[n], p, __ATOMIC_RELEASE);
    if (number < PORT_INDEX)
        __atomic_store_n(&loop->index[number], (int16_t)n, __ATOMIC_RELEASE);
    __atomic_store_n(&loop->nports, n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&loop->lock);
    wake_workers(loop);
    return 0;
}

int p4io_port_info(p4io_loop *loop, uint32_t port, uint32_t out[2])
{
    uint32_t n = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (loop->ports[i]->number == port) {
            out[0] = loop->ports[i]->ring != NULL;
            out[1] = (uint32_t)loop->ports[i]->qdisc_bypass;
            return 0;
        }
    return -1;
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
    __atomic_store_n(&loop->cpu_port, cpu_port, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&loop->lock);
}

void p4io_set_pipeline(p4io_loop *loop, p4io_process_fn fn, void *pipeline)
{
    pthread_rwlock_wrlock(&loop->pipeline_lock);
    loop->fn = fn;
    loop->pipeline = pipeline;
    pthread_rwlock_unlock(&loop->pipeline_lock);
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

/* ---- transmitting (each worker on its own batches; the control side under lock) ------- */

static struct port *find_port(p4io_loop *loop, uint32_t number)
{
    if (number < PORT_INDEX) {
        int i = __atomic_load_n(&loop->index[number], __ATOMIC_ACQUIRE);
        return i >= 0 ? __atomic_load_n(&loop->ports[i], __ATOMIC_ACQUIRE) : NULL;
    }
    uint32_t n = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (loop->ports[i]->number == number)
            return loop->ports[i];
    return NULL;
}

/* Send a batch; returns how many frames were dropped. */
static uint32_t flush_txq(struct txq *q)
{
    uint32_t done = 0, dropped = 0;
    uint64_t sent_bytes = 0;
    while (done < q->count) {
        int r = sendmmsg(q->fd, &q->msgs[done], q->count - done, MSG_DONTWAIT);
        if (r > 0) {
            for (int i = 0; i < r; i++)
                sent_bytes += q->iov[done + i].iov_len - q->vnet_size;
            done += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN) {
            /* socket buffer full: the rest would be refused as well */
            dropped += q->count - done;
            done = q->count;
            break;
        }
        /* ENOBUFS (the device's queue is full), EMSGSIZE, ENETDOWN, ...: this frame */
        dropped++;
        done++;
    }
    struct port *p = q->port;
    COUNT(p->c.tx_frames, q->count - dropped);
    COUNT(p->c.tx_bytes, sent_bytes);
    if (dropped)
        COUNT(p->c.tx_dropped, dropped);
    q->count = 0;
    q->used = 0;
    return dropped;
}

/* Send every batch of a worker; a batch stays on the dirty list (once) until this. */
static void flush_all(struct worker *k)
{
    for (uint32_t i = 0; i < k->ndirty; i++) {
        flush_txq(k->dirty[i]);
        k->dirty[i]->dirty = 0;
    }
    k->ndirty = 0;
}

/* Queue a frame on a batch (flushing it first when full). 0, or -1 if dropped. */
static int enqueue(struct worker *k, struct txq *q, const uint8_t *data, uint32_t len,
                   const struct virtio_net_hdr *vnet)
{
    if (len > P4IO_MAX_FRAME) {
        COUNT(q->port->c.tx_dropped, 1);
        return -1;
    }
    uint32_t whole = len + q->vnet_size;
    if (q->count == TX_FRAMES || q->used + whole > TX_ARENA)
        flush_txq(q);
    uint8_t *copy = q->arena + q->used;
    if (q->vnet_size)
        memcpy(copy, vnet, q->vnet_size);
    memcpy(copy + q->vnet_size, data, len);
    q->iov[q->count].iov_base = copy;
    q->iov[q->count].iov_len = whole;
    q->count++;
    q->used += (whole + 63u) & ~63u;    /* keep copies cache-line aligned */
    if (!q->dirty) {
        q->dirty = 1;
        k->dirty[k->ndirty++] = q;
    }
    return 0;
}

static inline struct txq *worker_txq(struct worker *k, struct port *p)
{
    return p->tx[k->id == P4IO_MAX_THREADS ? p->ntx - 1 : k->id];
}

/* The header a frame the pipeline emits goes out with (0), or -1 when it cannot go out: the
 * header of the frame it came from when that is a send of several segments. The segments'
 * headers are where they were, or moved by the change in length when the pipeline changed the
 * headers in front of them (an encapsulation); a frame whose TCP header is at neither place
 * cannot be cut into segments. */
static int emitted_vnet(const struct worker *k, const uint8_t *data, uint32_t len,
                        struct virtio_net_hdr *out)
{
    *out = k->vnet;
    if (out->gso_type == VIRTIO_NET_HDR_GSO_NONE || len == k->vnet_len)
        return 0;
    const uint32_t l4 = 20;                 /* a TCP header's fixed part */
    int64_t moved = (int64_t)len - (int64_t)k->vnet_len;
    int64_t start = (int64_t)out->csum_start + moved;
    if (start >= 0 && start + l4 <= len && (int64_t)out->csum_start + l4 <= k->vnet_len &&
        memcmp(data + start, k->vnet_data + out->csum_start, l4) == 0) {
        out->csum_start = (uint16_t)start;
        if (out->hdr_len)
            out->hdr_len = (uint16_t)((int64_t)out->hdr_len + moved);
        return 0;
    }
    if ((uint32_t)out->csum_start + l4 <= len && (uint32_t)out->csum_start + l4 <= k->vnet_len &&
        memcmp(data + out->csum_start, k->vnet_data + out->csum_start, l4) == 0)
        return 0;
    return -1;
}

/* Finish the checksum a sender left to the NIC (NEEDS_CSUM): the ones' complement of the
 * sum from csum_start on, the field holding the pseudo-header's sum; 0 is sent as 0xffff.
 * Returns -1 when the header points outside the frame. */
static int finish_checksum(uint8_t *data, uint32_t len, const struct virtio_net_hdr *h)
{
    uint32_t at = (uint32_t)h->csum_start + h->csum_offset;
    if (h->csum_start >= len || at + 2 > len)
        return -1;
    uint64_t sum = 0;
    uint32_t i = h->csum_start;
    for (; i + 1 < len; i += 2)
        sum += (uint32_t)data[i] << 8 | data[i + 1];
    if (i < len)
        sum += (uint32_t)data[i] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t value = (uint16_t)~sum;
    if (value == 0)
        value = 0xffff;
    data[at] = (uint8_t)(value >> 8);
    data[at + 1] = (uint8_t)value;
    return 0;
}

static void emit(void *ctx, uint32_t port, const uint8_t *data, uint32_t len)
{
    struct worker *k = ctx;
    p4io_loop *loop = k->loop;
    int32_t cpu_port = __atomic_load_n(&loop->cpu_port, __ATOMIC_RELAXED);
    if (cpu_port >= 0 && port == (uint32_t)cpu_port) {
        cpu_push(loop, data, len);
        return;
    }
    struct port *p = find_port(loop, port);
    if (!p) {
        COUNT(loop->no_port_dropped, 1);
        return;
    }
    struct virtio_net_hdr vnet;
    if (emitted_vnet(k, data, len, &vnet) < 0) {
        COUNT(p->c.tx_dropped, 1);
        return;
    }
    enqueue(k, worker_txq(k, p), data, len, &vnet);
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
            static const struct virtio_net_hdr none;
            enqueue(loop->control, worker_txq(loop->control, p), data, len, &none);
            flush_all(loop->control);
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
    pthread_rwlock_rdlock(&loop->pipeline_lock);
    if (loop->fn) {
        memset(&loop->control->vnet, 0, sizeof(loop->control->vnet));
        loop->control->vnet_data = data;
        loop->control->vnet_len = len;
        result = loop->fn(loop->pipeline, port, data, len, emit, loop->control);
        if (result < 0)
            COUNT(loop->pipeline_dropped, 1);
    } else {
        COUNT(loop->pipeline_dropped, 1);
        result = -1;
    }
    pthread_rwlock_unlock(&loop->pipeline_lock);
    flush_all(loop->control);
    pthread_mutex_unlock(&loop->lock);
    return result < 0 ? -1 : 0;
}

/* ---- receiving (each port by its worker) ------------------------------------------- */

#include "io_receive.h"

/* A received frame's virtio-net header becomes the worker's for the frames the pipeline
 * emits: a send of several segments keeps it, a partial checksum is finished here. 0 for a
 * header that points outside its frame (the frame is dropped). */
static int take_vnet(struct worker *k, struct rx_frame *f)
{
    k->vnet_data = f->data;
    k->vnet_len = f->len;
    k->vnet = f->vnet;
    if (f->vnet.gso_type != VIRTIO_NET_HDR_GSO_NONE)
        return 1;
    memset(&k->vnet, 0, sizeof(k->vnet));
    if (f->vnet.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
        return finish_checksum((uint8_t *)f->data, f->len, &f->vnet) == 0;
    return 1;
}

/* One burst from one port through the pipeline; returns how many frames were taken off the
 * socket (P4IO_BURST: there may be more). */
static int port_burst(struct worker *k, struct port *p)
{
    p4io_loop *loop = k->loop;
    struct rx_frame frames[P4IO_BURST];
    int taken;
    int n = p->ring ? ring_receive(p, frames, &taken) : mmsg_receive(k, p, frames, &taken);
    if (n > 0) {
        uint64_t bytes = 0;
        for (int i = 0; i < n; i++)
            bytes += frames[i].len;
        COUNT(p->c.rx_frames, n);
        COUNT(p->c.rx_bytes, bytes);
        pthread_rwlock_rdlock(&loop->pipeline_lock);
        p4io_process_fn fn = loop->fn;
        void *pipeline = loop->pipeline;
        if (fn) {
            uint64_t failed = 0;
            for (int i = 0; i < n; i++) {
                if (p->vnet_size && !take_vnet(k, &frames[i])) {
                    failed++;
                    continue;
                }
                failed += fn(pipeline, p->number, frames[i].data, frames[i].len, emit, k) < 0;
            }
            if (failed)
                COUNT(loop->pipeline_dropped, failed);
        } else {
            COUNT(loop->pipeline_dropped, n);
        }
        pthread_rwlock_unlock(&loop->pipeline_lock);
        flush_all(k);
    }
    if (p->ring)
        ring_release(p, taken);
    return taken;
}

/* A worker's loop: its ports are the loop's ports id, id + nthreads, ... */
static int worker_run(struct worker *k)
{
    p4io_loop *loop = k->loop;
    struct pollfd fds[P4IO_MAX_PORTS + 1];
    struct port *mine[P4IO_MAX_PORTS];
    int more[P4IO_MAX_PORTS];
    uint32_t n = 0, seen = k->id;
    int napping = 0;
    fds[0].fd = k->wake_fd;
    fds[0].events = POLLIN;
    while (!__atomic_load_n(&loop->stopped, __ATOMIC_ACQUIRE)) {
        uint32_t now = __atomic_load_n(&loop->nports, __ATOMIC_ACQUIRE);
        for (; seen < now; seen += loop->nthreads, n++) {
            mine[n] = __atomic_load_n(&loop->ports[seen], __ATOMIC_ACQUIRE);
            fds[n + 1].fd = mine[n]->fd;
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
            if (read(k->wake_fd, &value, sizeof(value)) < 0) {
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
                int got = port_burst(k, mine[i]);
                taken += (uint32_t)got;
                more[i] = got == P4IO_BURST;
                any |= more[i];
            }
        }
        napping = taken >= __atomic_load_n(&loop->nap_min, __ATOMIC_RELAXED);
    }
    return 0;
}

static void *worker_thread(void *arg)
{
    struct worker *k = arg;
    if (worker_run(k) < 0)
        p4io_stop(k->loop);
    return NULL;
}

int p4io_run(p4io_loop *loop)
{
    pthread_mutex_lock(&loop->lock);
    int failed = make_workers(loop);
    pthread_mutex_unlock(&loop->lock);
    if (failed)
        return -1;
    for (uint32_t w = 1; w < loop->nthreads; w++) {
        struct worker *k = loop->workers[w];
        k->started = pthread_create(&k->thread, NULL, worker_thread, k) == 0;
        if (!k->started) {
            p4io_stop(loop);
            failed = -1;
        }
    }
    if (!failed && worker_run(loop->workers[0]) < 0) {
        failed = -1;
        p4io_stop(loop);
    }
    for (uint32_t w = 1; w < loop->nthreads; w++) {
        struct worker *k = loop->workers[w];
        if (k->started)
            pthread_join(k->thread, NULL);
        k->started = 0;
    }
    return failed ? -1 : 0;
}

void p4io_stop(p4io_loop *loop)
{
    __atomic_store_n(&loop->stopped, 1, __ATOMIC_RELEASE);
    wake_workers(loop);
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
