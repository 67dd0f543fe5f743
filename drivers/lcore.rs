//! Logical cores (lcores): the EAL threads that run polling loops.
//!
//! EAL creates one thread per lcore in `-l`/`--lcores` and pins each; the main
//! lcore is the thread that called `rte_eal_init`. [`launch`] runs a closure on
//! a worker lcore and [`LaunchHandle::wait`] joins it. A thread EAL did not
//! create can take an lcore id with [`ThreadRegistration`] (it then gets the
//! mempool's per-lcore cache, which halves alloc/free cost).
//!
//! Invariants: a panic in a launched closure never crosses the C boundary (it
//! is caught and reported as [`LaunchResult::Panicked`]); every launch is
//! waited for, at the latest when its handle drops.

use crate::error::{DpdkError, Result};
use crate::sys;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An lcore id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lcore(pub u32);

impl Lcore {
    /// The lcore of the calling thread, or `None` for a thread without one.
    pub fn current() -> Option<Lcore> {
        // SAFETY: reads the calling thread's lcore id.
        let id = unsafe { sys::dps_lcore_id() };
        (id != sys::LCORE_ID_ANY).then_some(Lcore(id))
    }

    /// The main lcore (the thread that initialised EAL).
    pub fn main() -> Lcore {
        // SAFETY: reads EAL's configuration.
        Lcore(unsafe { sys::rte_get_main_lcore() })
    }

    /// The worker lcores, ascending.
    pub fn workers() -> Vec<Lcore> {
        let mut workers = Vec::new();
        // SAFETY: rte_get_next_lcore only reads EAL's lcore table; starting
        // from -1 (as u32) is how DPDK's own iteration macro begins.
        let mut id = unsafe { sys::rte_get_next_lcore(u32::MAX, 1, 0) };
        while id < sys::RTE_MAX_LCORE {
            workers.push(Lcore(id));
            // SAFETY: as above.
            id = unsafe { sys::rte_get_next_lcore(id, 1, 0) };
        }
        workers
    }

    /// Number of lcores EAL runs (main included).
    pub fn count() -> u32 {
        // SAFETY: reads EAL's configuration.
        unsafe { sys::rte_lcore_count() }
    }

    /// The NUMA socket of this lcore.
    pub fn socket(self) -> u32 {
        // SAFETY: reads EAL's configuration.
        unsafe { sys::rte_lcore_to_socket_id(self.0) }
    }
}

/// How a launched closure ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchResult {
    /// It returned this value.
    Returned(i32),
    /// It panicked (the panic message went to stderr).
    Panicked,
}

type Job = Box<dyn FnOnce() -> i32 + Send>;

/// Sentinel return value that marks a caught panic.
const PANICKED: c_int = i32::MIN;

unsafe extern "C" fn trampoline(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Box<Job> leaked by `launch`, passed exactly once.
    let job = unsafe { Box::from_raw(arg.cast::<Job>()) };
    match catch_unwind(AssertUnwindSafe(job)) {
        Ok(value) if value == PANICKED => PANICKED + 1,
        Ok(value) => value,
        Err(_) => PANICKED,
    }
}

/// A closure running on a worker lcore. Waited for on the main lcore only
/// (DPDK's rule), so the handle stays on the thread that launched.
#[derive(Debug)]
#[must_use = "the lcore runs until waited for"]
pub struct LaunchHandle {
    lcore: Lcore,
    waited: bool,
    _main_lcore_only: std::marker::PhantomData<*const ()>,
}

impl LaunchHandle {
    /// The lcore it runs on.
    pub fn lcore(&self) -> Lcore {
        self.lcore
    }

    /// Waits for the closure to finish.
    pub fn wait(mut self) -> LaunchResult {
        self.waited = true;
        wait_lcore(self.lcore)
    }
}

impl Drop for LaunchHandle {
    fn drop(&mut self) {
        if !self.waited {
            wait_lcore(self.lcore);
        }
    }
}

fn wait_lcore(lcore: Lcore) -> LaunchResult {
    // SAFETY: the lcore was launched by `launch`; waiting blocks until it
    // is idle again.
    match unsafe { sys::rte_eal_wait_lcore(lcore.0) } {
        PANICKED => LaunchResult::Panicked,
        value => LaunchResult::Returned(value),
    }
}

/// Runs `job` on worker lcore `lcore`. Must be called on the main lcore
/// (DPDK's rule); fails if called elsewhere or if `lcore` is not an idle
/// worker.
pub fn launch(lcore: Lcore, job: impl FnOnce() -> i32 + Send + 'static) -> Result<LaunchHandle> {
    if Lcore::current() != Some(Lcore::main()) {
        return Err(DpdkError::Launch {
            lcore: lcore.0,
            reason: "launch must be called on the main lcore (the thread that initialised EAL)"
                .into(),
        });
    }
    if lcore == Lcore::main() || !Lcore::workers().contains(&lcore) {
        return Err(DpdkError::Launch {
            lcore: lcore.0,
            reason: format!(
                "not a worker lcore (workers: {:?}); give EAL more lcores with -l or --lcores",
                Lcore::workers().iter().map(|l| l.0).collect::<Vec<_>>()
            ),
        });
    }
    let job: Box<Job> = Box::new(Box::new(job));
    let arg = Box::into_raw(job).cast::<c_void>();
    // SAFETY: trampoline has the lcore_function_t signature and takes
    // ownership of `arg` exactly once; if the launch fails it never runs, so
    // `arg` is reclaimed here.
    let ret = unsafe { sys::rte_eal_remote_launch(Some(trampoline), arg, lcore.0) };
    if ret != 0 {
        // SAFETY: the job was not started, so we still own it.
        drop(unsafe { Box::from_raw(arg.cast::<Job>()) });
        return Err(DpdkError::Launch {
            lcore: lcore.0,
            reason: "the lcore is busy (still running an earlier launch)".into(),
        });
    }
    Ok(LaunchHandle {
        lcore,
        waited: false,
        _main_lcore_only: std::marker::PhantomData,
    })
}

/// An lcore id held by a non-EAL thread; given back on drop.
#[derive(Debug)]
pub struct ThreadRegistration {
    lcore: Lcore,
    // Registration belongs to the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl ThreadRegistration {
    /// Registers the calling thread with EAL. Returns `None` if it already
    /// has an lcore or EAL has no free lcore id left.
    pub fn register() -> Option<ThreadRegistration> {
        if Lcore::current().is_some() {
            return None;
        }
        // SAFETY: registers the calling thread; paired with unregister on drop.
        if unsafe { sys::rte_thread_register() } != 0 {
            return None;
        }
        Lcore::current().map(|lcore| ThreadRegistration {
            lcore,
            _not_send: std::marker::PhantomData,
        })
    }

    /// The lcore id this thread now has.
    pub fn lcore(&self) -> Lcore {
        self.lcore
    }
}

impl Drop for ThreadRegistration {
    fn drop(&mut self) {
        // SAFETY: this thread registered itself in `register`.
        unsafe { sys::rte_thread_unregister() }
    }
}
