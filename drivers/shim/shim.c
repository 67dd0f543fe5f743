/*
 * Out-of-line copies of DPDK's `static inline` fast-path functions and the
 * macros over thread-local state, so Rust can call them. Each is a one-line
 * forward: the cost is one direct call (~1 ns), per burst for the burst
 * functions. See docs/ARCHITECTURE.md ("Bindings"). Exported (not inline)
 * DPDK functions need no forward here: build.rs's bindgen allowlist names
 * them.
 */
#include "dpdk.h"

int dps_errno(void) { return rte_errno; }
unsigned dps_lcore_id(void) { return rte_lcore_id(); }
uint64_t dps_rdtsc(void) { return rte_rdtsc(); }

uint16_t dps_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t dps_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *dps_pktmbuf_alloc(struct rte_mempool *mp) { return rte_pktmbuf_alloc(mp); }

int dps_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned count)
{
	return rte_pktmbuf_alloc_bulk(mp, mbufs, count);
}

void dps_pktmbuf_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }
char *dps_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_prepend(m, len); }
char *dps_pktmbuf_append(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_append(m, len); }
char *dps_pktmbuf_adj(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_adj(m, len); }
int dps_pktmbuf_trim(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_trim(m, len); }
uint16_t dps_pktmbuf_tailroom(const struct rte_mbuf *m) { return rte_pktmbuf_tailroom(m); }
unsigned dps_mempool_avail_count(const struct rte_mempool *mp) { return rte_mempool_avail_count(mp); }
unsigned dps_mempool_in_use_count(const struct rte_mempool *mp) { return rte_mempool_in_use_count(mp); }
uint16_t dps_pktmbuf_data_room_size(struct rte_mempool *mp) { return rte_pktmbuf_data_room_size(mp); }
uint32_t dps_softrss(const uint32_t *input, uint32_t input_len, const uint8_t *key)
{
    return rte_softrss((uint32_t *)input, input_len, key);
}
