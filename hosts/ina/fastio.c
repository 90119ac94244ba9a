/* Batched UDP I/O for `python -m hosts worker` (hosts/ina/fastio.py loads it through ctypes).
 *
 * One recvmmsg or sendmmsg moves a whole batch of datagrams between the socket and a flat
 * buffer of fixed-size slots, so the Python loop pays one call per batch instead of one
 * socket call (and its bytes/tuple objects) per packet; a receiver keeps the receive side's
 * message headers from call to call.  Nothing here knows the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define FIO_MAX_BATCH 256

/* A receiver: the recvmmsg message headers of `max` slots of a buffer, set up once, so that a
 * call only resets what the previous call changed (the kernel writes each used header's
 * address length back).  Setting up all 256 headers per call was 1.7% of a worker's CPU. */
struct fio_receiver {
    int max, used;
    struct mmsghdr msgs[FIO_MAX_BATCH];
    struct iovec iov[FIO_MAX_BATCH];
    struct sockaddr_in src[FIO_MAX_BATCH];
};

/* A receiver for `max` (at most FIO_MAX_BATCH) slots of `slot_size` bytes at `buf`; NULL when
 * an argument is out of range or memory ran out.  `buf` must outlive it. */
struct fio_receiver *fio_receiver_new(unsigned char *buf, int slot_size, int max)
{
    if (max <= 0 || max > FIO_MAX_BATCH || slot_size <= 0)
        return NULL;
    struct fio_receiver *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->max = max;
    for (int i = 0; i < max; i++) {
        r->iov[i].iov_base = buf + (size_t)i * (size_t)slot_size;
        r->iov[i].iov_len = (size_t)slot_size;
        r->msgs[i].msg_hdr.msg_name = &r->src[i];
        r->msgs[i].msg_hdr.msg_namelen = sizeof(r->src[i]);
        r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
        r->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return r;
}

void fio_receiver_free(struct fio_receiver *r) { free(r); }

/* Receive up to the receiver's `max` waiting datagrams without blocking; datagram i lands in
 * slot i (cut to slot_size bytes).  lens[i] is its real length (MSG_TRUNC: it may exceed
 * slot_size), addrs[i] its IPv4 source in network order, ports[i] its source port in host
 * order.  Returns how many arrived (0: none waiting or interrupted) or -errno. */
int fio_receive(struct fio_receiver *r, int fd, int *lens, unsigned int *addrs,
                unsigned short *ports)
{
    for (int i = 0; i < r->used; i++)
        r->msgs[i].msg_hdr.msg_namelen = sizeof(r->src[i]);
    r->used = 0;
    int n = recvmmsg(fd, r->msgs, (unsigned int)r->max, MSG_DONTWAIT | MSG_TRUNC, NULL);
    if (n < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    r->used = n;
    for (int i = 0; i < n; i++) {
        lens[i] = (int)r->msgs[i].msg_len;
        if (r->msgs[i].msg_hdr.msg_namelen >= sizeof(struct sockaddr_in)
                && r->src[i].sin_family == AF_INET) {
            addrs[i] = r->src[i].sin_addr.s_addr;
            ports[i] = ntohs(r->src[i].sin_port);
        } else {
            addrs[i] = 0;
            ports[i] = 0;
        }
    }
    return n;
}

/* Send `count` datagrams to ip:port (ip in network order, port in host order); datagram i
 * is lens[i] bytes at buf + i * slot_size.  Blocks like sendto when the socket buffer is
 * full.  Returns count, or -errno of the first datagram that could not be sent (the ones
 * before it were sent). */
int fio_send(int fd, const unsigned char *buf, int slot_size, const int *lens, int count,
             unsigned int ip, unsigned short port)
{
    struct mmsghdr msgs[FIO_MAX_BATCH];
    struct iovec iov[FIO_MAX_BATCH];
    struct sockaddr_in dst;
    memset(&dst, 0, sizeof(dst));
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = ip;
    dst.sin_port = htons(port);
    int done = 0;
    while (done < count) {
        int batch = count - done < FIO_MAX_BATCH ? count - done : FIO_MAX_BATCH;
        memset(msgs, 0, sizeof(msgs[0]) * (size_t)batch);
        for (int i = 0; i < batch; i++) {
            iov[i].iov_base = (void *)(buf + (size_t)(done + i) * (size_t)slot_size);
            iov[i].iov_len = (size_t)lens[done + i];
            msgs[i].msg_hdr.msg_name = &dst;
            msgs[i].msg_hdr.msg_namelen = sizeof(dst);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, msgs, (unsigned int)batch, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        done += r;
    }
    return done;
}
