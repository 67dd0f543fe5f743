/*
 * The DPDK surface dpstack binds: the headers bindgen reads, plus the
 * declarations of our C shim (dps_*), which gives Rust a real symbol for each
 * DPDK `static inline` fast-path function and for the TLS/macros that Rust
 * cannot reach (rte_errno, rte_lcore_id).
 */
#ifndef DPSTACK_SHIM_H
#define DPSTACK_SHIM_H

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_bus_vdev.h>
#include <rte_thash.h>

/* Errors and per-thread state (macros over TLS). */
int dps_errno(void);
unsigned dps_lcore_id(void);

/* Clock. */
uint64_t dps_rdtsc(void);

/* Burst I/O. */
uint16_t dps_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
uint16_t dps_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);

/* Buffers. */
struct rte_mbuf *dps_pktmbuf_alloc(struct rte_mempool *mp);
int dps_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned count);
void dps_pktmbuf_free(struct rte_mbuf *m);
char *dps_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len);
char *dps_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
char *dps_pktmbuf_adj(struct rte_mbuf *m, uint16_t len);
int dps_pktmbuf_trim(struct rte_mbuf *m, uint16_t len);
uint16_t dps_pktmbuf_tailroom(const struct rte_mbuf *m);
unsigned dps_mempool_avail_count(const struct rte_mempool *mp);
unsigned dps_mempool_in_use_count(const struct rte_mempool *mp);
uint16_t dps_pktmbuf_data_room_size(struct rte_mempool *mp);

/* The unmap guard (unmap_guard.c): a counter per queue handle of a port whose
 * PMD unmaps memory under running bursts; NULL when all are taken. `fenced`:
 * the bursts must make their odd store a full barrier. */
uint64_t *dps_unmap_guard_take(int *fenced);
void dps_unmap_guard_release(uint64_t *bursts);

/* RSS: DPDK's software Toeplitz over `input_len` host-order 32-bit words. */
uint32_t dps_softrss(const uint32_t *input, uint32_t input_len, const uint8_t *key);

#endif
