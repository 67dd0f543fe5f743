/*
 * The unmap guard: lets a polling lcore survive a memif peer that goes away.
 *
 * DPDK 22.11's net_memif PMD handles a disconnect (the peer closed the
 * control socket, exited or was killed) on EAL's interrupt thread:
 * memif_disconnect() clears the port's "connected" flag, then munmap()s the
 * shared regions that hold the rings and packet buffers, with nothing in
 * between that waits for the rx/tx bursts running on the polling lcores. A
 * burst checks the flag once, at its start; one that passed the check before
 * the flag was cleared and is still reading the ring when the regions are
 * unmapped (it was preempted, or is copying a full burst) dies with SIGSEGV.
 *
 * The fix is a grace period in front of that munmap():
 * - Every burst on a guarded queue (net_memif's, drivers/ethdev/guard.rs)
 *   bumps its guard's counter to odd before the PMD's burst function and back
 *   to even after it: one store each, on a cache line of its own.
 * - munmap() is defined here, so the static link binds DPDK's calls (and every
 *   other caller in the executable) to it. Called on the interrupt thread
 *   while any guard exists, it first issues a process-wide memory barrier
 *   (membarrier(2), private expedited), then waits until every guard that is
 *   odd has moved on, then unmaps. After the barrier, a burst that had not
 *   started sees the cleared flag and touches nothing; one that had started
 *   shows an odd counter and is waited for.
 * - Without membarrier(2) (an old kernel, a seccomp filter) the bursts make
 *   their odd store a locked read-modify-write instead, a full barrier on
 *   their side, and munmap() a fence on its side, with the same outcome.
 *
 * Invariant: a guard's counter is written only by the thread that owns its
 * queue handle; it is odd exactly while that thread is inside a burst. Guards
 * live in a static array and are never freed, so the waiter may read any of
 * them at any time.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dpdk.h"

#include <rte_interrupts.h>
#include <rte_log.h>

/* One guard per queue handle of a guarded port: RTE_MAX_ETHPORTS * 64. */
#define GUARDS 2048
/* How long munmap() waits for one burst before it gives up (a stuck lcore). */
#define BURST_WAIT_SECONDS 5

struct guard {
	_Alignas(64) _Atomic uint64_t bursts;
	_Atomic int taken;
};

static struct guard guards[GUARDS];
/* Guards taken now, and one past the highest index ever taken. */
static _Atomic unsigned guards_taken;
static _Atomic unsigned guards_end;
/* The membarrier command the waiter issues: -1 not chosen yet, 0 none. */
static _Atomic int barrier_cmd = -1;

static int choose_barrier(void)
{
	int cmd = atomic_load(&barrier_cmd);
	if (cmd >= 0)
		return cmd;
	cmd = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
		? MEMBARRIER_CMD_PRIVATE_EXPEDITED : 0;
	int unset = -1;
	if (!atomic_compare_exchange_strong(&barrier_cmd, &unset, cmd))
		cmd = unset;
	return cmd;
}

uint64_t *dps_unmap_guard_take(int *fenced)
{
	*fenced = choose_barrier() == 0;
	for (unsigned i = 0; i < GUARDS; i++) {
		int free = 0;
		if (atomic_compare_exchange_strong(&guards[i].taken, &free, 1)) {
			unsigned end = atomic_load(&guards_end);
			while (end < i + 1 && !atomic_compare_exchange_weak(&guards_end, &end, i + 1))
				;
			atomic_fetch_add(&guards_taken, 1);
			return (uint64_t *)&guards[i].bursts;
		}
	}
	return NULL;
}

void dps_unmap_guard_release(uint64_t *bursts)
{
	struct guard *g = (struct guard *)((char *)bursts - offsetof(struct guard, bursts));
	atomic_fetch_sub(&guards_taken, 1);
	atomic_store(&g->taken, 0);
}

/* Waits until no burst that may have missed the cleared flag is running. */
static void wait_for_bursts(void)
{
	int cmd = atomic_load(&barrier_cmd);
	if (cmd <= 0 || syscall(SYS_membarrier, cmd, 0, 0) != 0)
		atomic_thread_fence(memory_order_seq_cst);
	unsigned end = atomic_load(&guards_end);
	for (unsigned i = 0; i < end; i++) {
		uint64_t seen = atomic_load_explicit(&guards[i].bursts, memory_order_acquire);
		if ((seen & 1) == 0)
			continue;
		uint64_t deadline = rte_get_tsc_cycles() + BURST_WAIT_SECONDS * rte_get_tsc_hz();
		while (atomic_load_explicit(&guards[i].bursts, memory_order_acquire) == seen) {
			if (rte_get_tsc_cycles() > deadline) {
				RTE_LOG(WARNING, EAL,
					"dpstack: a burst has run for %d s; unmapping anyway\n",
					BURST_WAIT_SECONDS);
				break;
			}
			sched_yield();
		}
	}
}

int munmap(void *addr, size_t length)
{
	if (atomic_load_explicit(&guards_taken, memory_order_acquire) != 0 && rte_thread_is_intr())
		wait_for_bursts();
	return (int)syscall(SYS_munmap, addr, length);
}
