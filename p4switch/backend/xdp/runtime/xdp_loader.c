/* xdp_loader.c: a small shim over libbpf for p4switch/backend/xdp/loader.py.
 *
 * It exists for what ctypes cannot do well: libbpf's variadic print callback (the kernel
 * verifier's log reaches us only through it) and libbpf's option structs. Every function
 * returns 0 or a non-negative fd on success and -errno on failure, so Python can name the
 * error; objects are passed back and forth as opaque pointers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* libbpf's messages (warnings and info, where the verifier log comes) since the last reset. */
static char *captured;
static size_t captured_len, captured_cap;

static int capture(enum libbpf_print_level level, const char *format, va_list args)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    va_list again;
    va_copy(again, args);
    int need = vsnprintf(NULL, 0, format, again);
    va_end(again);
    if (need <= 0)
        return 0;
    if (captured_len + (size_t)need + 1 > captured_cap) {
        size_t cap = (captured_cap ? captured_cap : 4096);
        while (captured_len + (size_t)need + 1 > cap)
            cap *= 2;
        char *grown = realloc(captured, cap);
        if (!grown)
            return 0;
        captured = grown;
        captured_cap = cap;
    }
    vsnprintf(captured + captured_len, (size_t)need + 1, format, args);
    captured_len += (size_t)need;
    return need;
}

void p4x_log_reset(void)
{
    libbpf_set_print(capture);
    captured_len = 0;
    if (captured)
        captured[0] = '\0';
}

const char *p4x_log_text(void)
{
    return captured ? captured : "";
}

/* Open and load the object file at `path`; NULL with *err = -errno when either fails. */
struct bpf_object *p4x_open_load(const char *path, int *err)
{
    struct bpf_object *obj = bpf_object__open_file(path, NULL);
    long open_err = libbpf_get_error(obj);
    if (open_err) {
        *err = (int)open_err;
        return NULL;
    }
    int rc = bpf_object__load(obj);
    if (rc) {
        *err = rc < 0 ? rc : -EINVAL;
        bpf_object__close(obj);
        return NULL;
    }
    *err = 0;
    return obj;
}

void p4x_close(struct bpf_object *obj)
{
    bpf_object__close(obj);
}

/* The map `name`'s fd and shape; -ENOENT when the object has no such map. */
int p4x_map(struct bpf_object *obj, const char *name, unsigned int shape[4])
{
    struct bpf_map *map = bpf_object__find_map_by_name(obj, name);
    if (!map)
        return -ENOENT;
    shape[0] = bpf_map__key_size(map);
    shape[1] = bpf_map__value_size(map);
    shape[2] = bpf_map__max_entries(map);
    shape[3] = (unsigned int)bpf_map__type(map);
    return bpf_map__fd(map);
}

int p4x_program(struct bpf_object *obj, const char *name)
{
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);
    return prog ? bpf_program__fd(prog) : -ENOENT;
}

/* The program names of the object, each followed by '\n', into buf. */
int p4x_program_names(struct bpf_object *obj, char *buf, size_t size)
{
    struct bpf_program *prog;
    size_t used = 0;
    bpf_object__for_each_program(prog, obj) {
        int n = snprintf(buf + used, size - used, "%s\n", bpf_program__name(prog));
        if (n < 0 || used + (size_t)n >= size)
            return -ENOSPC;
        used += (size_t)n;
    }
    return 0;
}

int p4x_num_possible_cpus(void)
{
    return libbpf_num_possible_cpus();
}

static int neg_errno(int rc)
{
    return rc < 0 ? (errno ? -errno : rc) : rc;
}

int p4x_map_update(int fd, const void *key, const void *value, unsigned long long flags)
{
    errno = 0;
    return neg_errno(bpf_map_update_elem(fd, key, value, flags));
}

int p4x_map_lookup(int fd, const void *key, void *value)
{
    errno = 0;
    return neg_errno(bpf_map_lookup_elem(fd, key, value));
}

int p4x_map_delete(int fd, const void *key)
{
    errno = 0;
    return neg_errno(bpf_map_delete_elem(fd, key));
}

/* BPF_PROG_TEST_RUN: data in, data out (*out_size: capacity in, length out), *retval. */
int p4x_test_run(int prog_fd, const void *data, unsigned int size, void *out,
                 unsigned int *out_size, unsigned int *retval, int repeat)
{
    LIBBPF_OPTS(bpf_test_run_opts, opts,
                .data_in = data, .data_size_in = size,
                .data_out = out, .data_size_out = *out_size,
                .repeat = repeat);
    errno = 0;
    int rc = neg_errno(bpf_prog_test_run_opts(prog_fd, &opts));
    *out_size = opts.data_size_out;
    *retval = opts.retval;
    return rc;
}

static unsigned int mode_flags(int skb_mode)
{
    return skb_mode ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

/* Attach in driver (skb_mode 0) or generic mode, replacing whatever is there in either. */
int p4x_xdp_attach(int ifindex, int prog_fd, int skb_mode)
{
    /* The kernel refuses a second mode while the other holds a program: clear it first. */
    bpf_xdp_detach(ifindex, mode_flags(!skb_mode), NULL);
    errno = 0;
    return neg_errno(bpf_xdp_attach(ifindex, prog_fd, mode_flags(skb_mode), NULL));
}

int p4x_xdp_detach(int ifindex)
{
    int drv = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
    int skb = bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);
    return drv < 0 ? drv : skb < 0 ? skb : 0;
}

/* An fd that keeps run-time statistics on until it is closed. */
int p4x_enable_run_time_stats(void)
{
    errno = 0;
    return neg_errno(bpf_enable_stats(BPF_STATS_RUN_TIME));
}
