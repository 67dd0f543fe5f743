//! DPDK's Environment Abstraction Layer (EAL): start-up once per process.
//!
//! DPDK programs take `app [EAL options] -- [app options]`. [`split_args`]
//! cuts the command line there (a bare `app --help` or `app --version` is
//! the app's), [`Eal::init`] hands the EAL part to
//! `rte_eal_init`, and [`EalArgs`] builds EAL argument lists: the embedded
//! default that works on any machine (virtual ports, no hugepages needed) and
//! the isolated set each test process uses.
//!
//! Invariants: EAL initialises at most once per process (a second call is
//! [`DpdkError::EalAlreadyInitialized`], also after cleanup, as DPDK requires).
//! `rte_eal_cleanup` runs only through the `unsafe` [`Eal::cleanup`]: pools
//! and mbufs are not tied to the `Eal`'s lifetime, so dropping it must not
//! free what they point into. Dropping it removes EAL's empty runtime
//! directory; the process's exit releases the memory. A static build
//! (build.rs, the default) refuses `-d`: a plugin would bring a second
//! copy of DPDK into the process.

use crate::error::{rte_errno, strerror, DpdkError, Result};
use crate::sys;
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Splits `app [EAL options] -- [app options]` into the EAL part (with the
/// program name first) and the app part. Without `--`, everything is EAL,
/// except a command line of nothing but help and version flags (`-h`,
/// `--help`, `-V`, `--version`): those are the app's, so `app --help` shows
/// the app's usage, which explains the `--`, instead of EAL's or an error
/// about a missing app option. (After any EAL option, `-h` and `--help` are
/// still EAL's: `app -l 0 --help` prints EAL's usage.)
pub fn split_args(args: impl IntoIterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let mut eal = Vec::new();
    let mut app = Vec::new();
    let mut after_separator = false;
    for arg in args {
        if after_separator {
            app.push(arg);
        } else if arg == "--" {
            after_separator = true;
        } else {
            eal.push(arg);
        }
    }
    if !after_separator && eal.len() > 1 && eal[1..].iter().all(|a| is_help_or_version(a)) {
        app = eal.split_off(1);
    }
    (eal, app)
}

/// True for the flags with which any app prints its help or its version.
fn is_help_or_version(arg: &str) -> bool {
    matches!(arg, "-h" | "--help" | "-V" | "--version")
}

/// The first `-d` (driver plugin) option among EAL arguments `args`
/// (program name first), as given.
fn plugin_option(args: &[String]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        if arg == "-d" {
            return Some(rest.next().map_or("-d", String::as_str));
        }
        if arg.starts_with("-d") && !arg.starts_with("--") {
            return Some(&arg[2..]);
        }
    }
    None
}

/// A running EAL. Dropping it removes EAL's empty runtime directory.
#[derive(Debug)]
pub struct Eal {
    args: Vec<String>,
}

impl Eal {
    /// Initialises EAL with `args` (program name first, then EAL options).
    pub fn init(args: &[String]) -> Result<Eal> {
        if let Some(plugin) = plugin_option(args).filter(|_| cfg!(dpdk_static)) {
            return Err(DpdkError::InvalidArgument(format!(
                "`{plugin}`: this build links DPDK statically, with every driver of the \
                 installed DPDK built in, so no plugin is needed; a -d plugin would load a \
                 second copy of DPDK. Drop -d, or build with DPSTACK_DPDK_LINK=shared to \
                 load plugins"
            )));
        }
        if INITIALIZED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::EalAlreadyInitialized);
        }
        let c_args = args
            .iter()
            .map(|a| CString::new(a.as_str()))
            .collect::<Result<Vec<CString>, _>>()
            .map_err(|_| {
                DpdkError::InvalidArgument("an EAL argument contains a NUL byte".into())
            })?;
        // rte_eal_init may permute argv (getopt), so it gets a mutable
        // pointer array; the strings themselves stay owned by `c_args`.
        let mut argv: Vec<*mut c_char> = c_args.iter().map(|a| a.as_ptr().cast_mut()).collect();
        argv.push(std::ptr::null_mut());
        let argc = c_int::try_from(c_args.len())
            .map_err(|_| DpdkError::InvalidArgument("too many EAL arguments".into()))?;
        // SAFETY: argv holds argc valid NUL-terminated strings plus a final
        // NULL, all alive until after the call; EAL keeps no pointer into them
        // beyond what it copies (it strdup()s what it stores).
        let ret = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            let errno = rte_errno();
            remove_runtime_dir();
            if errno == libc::EALREADY {
                return Err(DpdkError::EalAlreadyInitialized);
            }
            return Err(DpdkError::EalInit {
                errno,
                reason: strerror(errno),
                hint: init_hint(errno),
            });
        }
        Ok(Eal {
            args: args.to_vec(),
        })
    }

    /// The EAL arguments this process was started with.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// True once EAL has been initialised in this process.
    pub fn is_initialized() -> bool {
        INITIALIZED.load(Ordering::SeqCst)
    }
}

impl Eal {
    /// Releases EAL's resources (`rte_eal_cleanup`).
    ///
    /// # Safety
    /// No DPDK object may be used afterwards: every port, queue, pool and
    /// mbuf must be dropped and every lcore launch waited for. (Pools and
    /// mbufs are not tied to the `Eal`'s lifetime, so the compiler cannot
    /// check this; dropping an `Eal` without calling this is always safe, and
    /// the process's exit releases the memory.)
    pub unsafe fn cleanup(self) {
        // SAFETY: the caller guarantees no DPDK object is used any more.
        unsafe {
            sys::rte_eal_cleanup();
        }
        // Drop (below) removes the runtime directory.
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // No rte_eal_cleanup here: a pool or mbuf may outlive this handle.
        remove_runtime_dir();
    }
}

/// DPDK never removes its runtime directory (/var/run/dpdk/PREFIX for root).
/// Without shared files it is empty after cleanup or a failed init: remove it
/// so no process leaves one behind (remove_dir fails harmlessly on a
/// directory that still holds files, as in multi-process mode).
fn remove_runtime_dir() {
    // SAFETY: returns a pointer to EAL's static, NUL-terminated path buffer,
    // which stays valid after cleanup; it is copied at once.
    let dir = unsafe {
        let dir = sys::rte_eal_get_runtime_dir();
        (!dir.is_null()).then(|| CStr::from_ptr(dir).to_string_lossy().into_owned())
    };
    if let Some(dir) = dir.filter(|d| !d.is_empty()) {
        let _ = std::fs::remove_dir(dir);
    }
}

fn init_hint(errno: i32) -> &'static str {
    match errno {
        libc::EACCES | libc::ENOMEM => {
            "No usable hugepages or too little memory: pass --no-huge -m 512, or run \
             scripts/setup to reserve hugepages; run as root"
        }
        libc::ENODEV => {
            "A device could not be probed: check the --vdev/-a names and their arguments \
             (e.g. --vdev=net_null0, --vdev=net_tap0,iface=dtap0)"
        }
        libc::EINVAL => {
            "An EAL option is invalid: check the options before `--` (note that --in-memory \
             cannot be combined with --no-huge)"
        }
        libc::EBUSY => {
            "Another DPDK primary process holds this runtime directory: pass a different \
             --file-prefix, or --in-memory / --no-shconf"
        }
        _ => "See the EAL messages above for the cause",
    }
}

/// Builds EAL argument lists.
#[derive(Debug, Clone)]
pub struct EalArgs {
    program: String,
    lcores: String,
    memory: Vec<String>,
    vdevs: Vec<String>,
    extra: Vec<String>,
}

/// How the embedded default provides memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMode {
    /// Hugepages, kept in memory only (`--in-memory`): nothing to leak.
    HugepagesInMemory,
    /// Ordinary 4 KiB pages (`--no-huge --no-shconf`): works everywhere, slower.
    NoHugepages,
}

impl EalArgs {
    /// The embedded default for `program`: the listed virtual devices, no PCI,
    /// up to two lcores on the CPUs this process may use, hugepages when at
    /// least `memory_mb` of them are free (else ordinary memory), no shared
    /// files and no telemetry socket. Works on any Linux machine as root.
    pub fn embedded_default(program: &str, vdevs: &[&str], memory_mb: u32) -> EalArgs {
        let cpus = allowed_cpus();
        let first = cpus.first().copied().unwrap_or(0);
        let second = cpus.get(1).copied().unwrap_or(first);
        let mode = if free_hugepage_mb() >= u64::from(memory_mb) {
            MemoryMode::HugepagesInMemory
        } else {
            MemoryMode::NoHugepages
        };
        EalArgs {
            program: program.to_owned(),
            lcores: format!("--lcores=0@{first},1@{second}"),
            memory: memory_args(mode, memory_mb),
            vdevs: vdevs.iter().map(|v| (*v).to_owned()).collect(),
            extra: vec![
                "--no-pci".into(),
                "--no-telemetry".into(),
                format!("--file-prefix={program}"),
            ],
        }
    }

    /// Arguments for a test process: `lcores` lcores that float over every CPU
    /// (so parallel test processes do not all pin to CPU 0), ordinary memory,
    /// no shared files, no telemetry, no PCI, and a file prefix of its own
    /// (from the process id). Any number of these can run at once and none
    /// leaves files behind.
    pub fn for_test(lcores: u32) -> EalArgs {
        let cpus = allowed_cpus();
        let set = cpus
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let lcores = (0..lcores.max(1))
            .map(|l| format!("{l}@({set})"))
            .collect::<Vec<_>>()
            .join(",");
        EalArgs {
            program: "dpstack-test".into(),
            lcores: format!("--lcores={lcores}"),
            memory: memory_args(MemoryMode::NoHugepages, 256),
            vdevs: Vec::new(),
            extra: vec![
                "--no-pci".into(),
                "--no-telemetry".into(),
                format!("--file-prefix=dpstack-test-{}", std::process::id()),
                "--log-level=lib.eal:warning".into(),
            ],
        }
    }

    /// Adds a virtual device (`--vdev=SPEC`).
    pub fn vdev(mut self, spec: &str) -> EalArgs {
        self.vdevs.push(spec.to_owned());
        self
    }

    /// Adds any other EAL option.
    pub fn arg(mut self, arg: &str) -> EalArgs {
        self.extra.push(arg.to_owned());
        self
    }

    /// True if this list uses hugepages.
    pub fn uses_hugepages(&self) -> bool {
        !self.memory.iter().any(|a| a == "--no-huge")
    }

    /// The full argument list, program name first.
    pub fn to_vec(&self) -> Vec<String> {
        let mut args = vec![self.program.clone(), self.lcores.clone()];
        args.extend(self.memory.iter().cloned());
        args.extend(self.extra.iter().cloned());
        args.extend(self.vdevs.iter().map(|v| format!("--vdev={v}")));
        args
    }
}

fn memory_args(mode: MemoryMode, memory_mb: u32) -> Vec<String> {
    match mode {
        MemoryMode::HugepagesInMemory => vec!["--in-memory".into(), format!("-m{memory_mb}")],
        MemoryMode::NoHugepages => vec![
            "--no-huge".into(),
            format!("-m{memory_mb}"),
            "--no-shconf".into(),
        ],
    }
}

/// Free hugepage memory in MiB, from /proc/meminfo; 0 if unknown or if no
/// hugetlbfs is mounted (EAL needs a mount to find the page sizes).
pub fn free_hugepage_mb() -> u64 {
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        })
        .unwrap_or(false);
    if !mounted {
        return 0;
    }
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    let field = |name: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    field("HugePages_Free:") * field("Hugepagesize:") / 1024
}

/// The CPUs this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most
    // size_of::<cpu_set_t>() bytes into it; CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_option_is_found_in_both_spellings_and_nowhere_else() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let plugin = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_null.so";
        assert_eq!(
            plugin_option(&args(&["app", "-l0", "-d", plugin])),
            Some(plugin)
        );
        assert_eq!(
            plugin_option(&args(&["app", &format!("-d{plugin}")])),
            Some(plugin)
        );
        assert_eq!(
            plugin_option(&args(&["app", "--no-huge", "--vdev=net_null0"])),
            None
        );
        // The program's own name is not an option.
        assert_eq!(plugin_option(&args(&["-dapp", "-l0"])), None);
    }

    // A shared build hands -d to EAL, which this test must not start.
    #[cfg(dpdk_static)]
    #[test]
    fn a_static_build_refuses_a_plugin() {
        let args = ["app", "--no-huge", "-d", "librte_net_null.so"].map(String::from);
        match Eal::init(&args) {
            Err(DpdkError::InvalidArgument(message)) => {
                assert!(message.contains("DPSTACK_DPDK_LINK=shared"), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn split_args_cuts_at_the_first_double_dash() {
        let args = ["app", "-l", "0", "--", "-i", "--", "x"].map(String::from);
        let (eal, app) = split_args(args);
        assert_eq!(eal, ["app", "-l", "0"]);
        assert_eq!(app, ["-i", "--", "x"]);
    }

    #[test]
    fn split_args_without_separator_is_all_eal() {
        let (eal, app) = split_args(["app", "--no-huge"].map(String::from));
        assert_eq!(eal, ["app", "--no-huge"]);
        assert!(app.is_empty());
    }

    #[test]
    fn bare_help_and_version_flags_are_the_apps() {
        for flags in [
            &["--help"][..],
            &["-h"],
            &["--version"],
            &["-V"],
            &["--help", "--version"],
        ] {
            let args = std::iter::once("app").chain(flags.iter().copied());
            let (eal, app) = split_args(args.map(String::from));
            assert_eq!(eal, ["app"], "{flags:?}");
            assert_eq!(app, flags, "{flags:?}");
        }
    }

    #[test]
    fn help_after_an_eal_option_or_the_separator_is_not_moved() {
        let (eal, app) = split_args(["app", "-l", "0", "--help"].map(String::from));
        assert_eq!(eal, ["app", "-l", "0", "--help"], "EAL's own help");
        assert!(app.is_empty());
        let (eal, app) = split_args(["app", "--", "--help"].map(String::from));
        assert_eq!(eal, ["app"]);
        assert_eq!(app, ["--help"]);
        let (eal, app) = split_args(["app", "-h", "--", "-V"].map(String::from));
        assert_eq!(eal, ["app", "-h"], "with a separator the split is literal");
        assert_eq!(app, ["-V"]);
    }

    #[test]
    fn the_program_name_alone_is_all_eal() {
        let (eal, app) = split_args(["app"].map(String::from));
        assert_eq!(eal, ["app"]);
        assert!(app.is_empty());
    }

    #[test]
    fn test_args_are_isolated_and_leave_nothing_behind() {
        let args = EalArgs::for_test(2).vdev("net_null0").to_vec();
        for needed in ["--no-huge", "--no-shconf", "--no-telemetry", "--no-pci"] {
            assert!(
                args.iter().any(|a| a == needed),
                "{needed} missing: {args:?}"
            );
        }
        assert!(args.iter().any(|a| a == "--vdev=net_null0"));
        assert!(args[1].starts_with("--lcores=0@(") && args[1].contains(",1@("));
    }

    #[test]
    fn embedded_default_names_two_lcores_and_its_devices() {
        let args = EalArgs::embedded_default("dpstack-x", &["net_null0", "net_null1"], 64);
        let v = args.to_vec();
        assert_eq!(v[0], "dpstack-x");
        assert!(v[1].starts_with("--lcores=0@") && v[1].contains(",1@"));
        assert!(v.iter().any(|a| a == "--vdev=net_null1"));
        assert!(v.iter().any(|a| a == "--in-memory") != v.iter().any(|a| a == "--no-huge"));
    }
}
