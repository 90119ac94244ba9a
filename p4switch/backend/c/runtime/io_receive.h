/* Part of io.c, included by it once (kept apart to keep io.c readable): taking frames off a
 * port's socket, from its PACKET_MMAP ring or with recvmmsg, VLAN tags put back. Each port is
 * read by its worker alone. */
#ifndef P4IO_RECEIVE_H
#define P4IO_RECEIVE_H

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

/* How both receive paths end: frames cut short are dropped and counted, and the caller learns
 * how many the socket handed over (`taken`, also the skipped ones) and how many go on (`n`). */
static int received(struct port *p, int n, uint64_t truncated, int taken, int *taken_out)
{
    if (truncated)
        COUNT(p->c.rx_dropped, truncated);
    *taken_out = taken;
    return n;
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
        if (p->vnet_size)       /* the kernel puts it right in front of the frame */
            memcpy(&out[n].vnet, data - p->vnet_size, sizeof(out[n].vnet));
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
    return received(p, n, truncated, t, taken);
}

static void ring_release(struct port *p, int taken)
{
    for (int k = 0; k < taken; k++) {
        __atomic_store_n(&ring_slot(p, p->next_slot)->tp_status, TP_STATUS_KERNEL,
                         __ATOMIC_RELEASE);
        p->next_slot = p->next_slot + 1 == p->slots ? 0 : p->next_slot + 1;
    }
}

static int mmsg_receive(struct worker *k, struct port *p, struct rx_frame *out, int *taken)
{
    for (int i = 0; i < P4IO_BURST; i++) {
        /* the frame starts at the same place with or without a virtio-net header */
        k->rx_iov[i].iov_base = k->rx_buffers + (size_t)i * RX_SLOT + RX_HEADROOM - p->vnet_size;
        k->rx_iov[i].iov_len = P4IO_MAX_FRAME - 4 + p->vnet_size;
        struct msghdr *m = &k->rx_msgs[i].msg_hdr;
        m->msg_name = &k->rx_addr[i];
        m->msg_namelen = sizeof(k->rx_addr[i]);
        m->msg_iov = &k->rx_iov[i];
        m->msg_iovlen = 1;
        m->msg_control = k->rx_control[i].space;
        m->msg_controllen = sizeof(k->rx_control[i].space);
        m->msg_flags = 0;
    }
    int r = recvmmsg(p->fd, k->rx_msgs, P4IO_BURST, MSG_DONTWAIT, NULL);
    if (r <= 0) {
        /* EAGAIN, or an error the socket reported (ENETDOWN while the link is down),
         * which reading has cleared: the port stays */
        *taken = 0;
        return 0;
    }
    int n = 0;
    uint64_t truncated = 0;
    for (int i = 0; i < r; i++) {
        struct msghdr *m = &k->rx_msgs[i].msg_hdr;
        if (k->rx_addr[i].sll_pkttype == PACKET_OUTGOING)
            continue;
        if (m->msg_flags & MSG_TRUNC) {
            truncated++;
            continue;
        }
        uint8_t *data = (uint8_t *)k->rx_iov[i].iov_base + p->vnet_size;
        uint32_t len = k->rx_msgs[i].msg_len;
        if (p->vnet_size) {     /* in front of the frame; a VLAN tag put back goes over it */
            if (len < p->vnet_size) {
                truncated++;
                continue;
            }
            memcpy(&out[n].vnet, k->rx_iov[i].iov_base, sizeof(out[n].vnet));
            len -= p->vnet_size;
        }
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
    return received(p, n, truncated, r, taken);
}

#endif
