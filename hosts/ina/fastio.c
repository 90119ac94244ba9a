/* Batched UDP I/O for `python -m hosts worker` (hosts/ina/fastio.py loads it through ctypes).
 *
 * One recvmmsg or sendmmsg moves a whole batch of datagrams between the socket and a flat
 * buffer of fixed-size slots, so the Python loop pays one call per batch instead of one
 * socket call (and its bytes/tuple objects) per packet.  Nothing here knows the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#define FIO_MAX_BATCH 256

/* Receive up to `max` waiting datagrams without blocking; datagram i lands at
 * buf + i * slot_size (cut to slot_size bytes).  lens[i] is its real length (MSG_TRUNC: it
 * may exceed slot_size), addrs[i] its IPv4 source in network order, ports[i] its source
 * port in host order.  Returns how many arrived (0: none waiting or interrupted) or -errno. */
int fio_recv(int fd, unsigned char *buf, int slot_size, int max, int *lens,
             unsigned int *addrs, unsigned short *ports)
{
    struct mmsghdr msgs[FIO_MAX_BATCH];
    struct iovec iov[FIO_MAX_BATCH];
    struct sockaddr_in src[FIO_MAX_BATCH];
    if (max > FIO_MAX_BATCH)
        max = FIO_MAX_BATCH;
    if (max <= 0 || slot_size <= 0)
        return -EINVAL;
    memset(msgs, 0, sizeof(msgs[0]) * (size_t)max);
    for (int i = 0; i < max; i++) {
        iov[i].iov_base = buf + (size_t)i * (size_t)slot_size;
        iov[i].iov_len = (size_t)slot_size;
        msgs[i].msg_hdr.msg_name = &src[i];
        msgs[i].msg_hdr.msg_namelen = sizeof(src[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int n = recvmmsg(fd, msgs, (unsigned int)max, MSG_DONTWAIT | MSG_TRUNC, NULL);
    if (n < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        lens[i] = (int)msgs[i].msg_len;
        if (msgs[i].msg_hdr.msg_namelen >= sizeof(struct sockaddr_in)
                && src[i].sin_family == AF_INET) {
            addrs[i] = src[i].sin_addr.s_addr;
            ports[i] = ntohs(src[i].sin_port);
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
