//! Build script: DPDK bindings and the C shim.
//!
//! 1. Finds DPDK 22.11 with pkg-config (`libdpdk`). A missing DPDK stops the
//!    build with one message naming the setup command.
//! 2. Compiles `drivers/shim/shim.c`: out-of-line copies of DPDK's `static
//!    inline` fast-path functions (rx/tx burst, mbuf alloc/free, rdtsc) and of
//!    the macros over TLS (`rte_errno`, `rte_lcore_id`); and
//!    `drivers/shim/unmap_guard.c`, the `munmap` that waits for memif bursts
//!    in flight (docs/ARCHITECTURE.md, "Driver layer invariants").
//! 3. Runs bindgen over `drivers/shim/dpdk.h`, allowlisted to what dpstack
//!    uses (an unrestricted run drags in clang intrinsics that do not compile).
//!
//! 4. Links DPDK statically (see [`link_dpdk_static`]): its archives, every
//!    driver whole (their constructors register them), and the system
//!    libraries they need shared. `DPSTACK_DPDK_LINK=shared` links the shared
//!    libraries instead, as Debian's own tools are linked: EAL then loads
//!    every PMD plugin in its plugin directory.
//!
//! Static is the default because the packet path pays for the shared build:
//! a PMD's mempool and mbuf code reads the lcore id through
//! `__tls_get_addr` (the general-dynamic TLS model of a shared library)
//! about once a packet, about 12 instructions a packet of 490 on the echo
//! (docs/PERFORMANCE.md). Linked into the executable, that is one `%fs`
//! load. Facts behind each choice: ../shared/research/DPDK-FFI.md,
//! sections 1 to 4.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const SETUP_HINT: &str = "DPDK 22.11 development files were not found (pkg-config libdpdk).\n\
     Run `scripts/setup` (it installs: dpdk dpdk-dev libdpdk-dev libclang-dev clang pkg-config),\n\
     or install those Debian packages yourself, then build again.";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=drivers/shim/dpdk.h");
    println!("cargo:rerun-if-changed=drivers/shim/shim.c");
    println!("cargo:rerun-if-changed=drivers/shim/unmap_guard.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");

    let cflags = dpdk_cflags();
    compile_shim(&cflags);
    println!("cargo:rerun-if-env-changed=DPSTACK_DPDK_LINK");
    let shared = match env::var("DPSTACK_DPDK_LINK").as_deref() {
        Ok("shared") => true,
        Ok("static") | Err(_) => false,
        Ok(other) => {
            panic!("\n\nDPSTACK_DPDK_LINK={other}: use `static` (the default) or `shared`\n\n")
        }
    };
    // The shim archive goes before the DPDK libraries on the link line.
    // The probe checks the version; it emits the link flags only for the
    // shared build.
    if let Err(e) = pkg_config::Config::new()
        .atleast_version("22.11")
        .cargo_metadata(shared)
        .probe("libdpdk")
    {
        panic!("\n\n{SETUP_HINT}\n(pkg-config said: {e})\n\n");
    }
    // `cfg(dpdk_static)`: the EAL wrapper refuses `-d` plugins.
    println!("cargo::rustc-check-cfg=cfg(dpdk_static)");
    if !shared {
        link_dpdk_static();
        println!("cargo:rustc-cfg=dpdk_static");
    }
    generate_bindings(&cflags);
}

/// The words `pkg-config` prints for `args`, or the setup hint.
fn pkg_config_words(args: &[&str]) -> Vec<String> {
    match Command::new("pkg-config").args(args).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
        Ok(out) => panic!(
            "\n\n{SETUP_HINT}\n(pkg-config {} said: {})\n\n",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("\n\n{SETUP_HINT}\n(could not run pkg-config: {e})\n\n"),
    }
}

/// Link directives for DPDK's static archives, from `pkg-config --static
/// --libs libdpdk`, as `rustc-link-lib` lines so that they reach every
/// binary that links this crate (a user's too, unlike `rustc-link-arg`):
///
/// - the archives between `--whole-archive` and `--no-whole-archive` (the
///   buses, mempool drivers and PMDs, which register themselves from
///   constructors nothing references) whole;
/// - the libraries' archives (`-lrte_*`, which would pick the shared
///   library) as archives;
/// - the system libraries shared. Those that only the *static* builds of
///   DPDK's own dependencies need (libpcap's D-Bus and systemd, the
///   ibverbs providers) are left out: those dependencies are linked
///   shared, and some (`libsystemd`) have no development link at all.
fn link_dpdk_static() {
    let all = pkg_config_words(&["--static", "--libs", "libdpdk"]);
    let dependencies: Vec<String> = pkg_config_words(&["--print-requires-private", "libdpdk"])
        .into_iter()
        .filter(|word| word.chars().next().is_some_and(char::is_alphabetic))
        .collect();
    let dependencies: Vec<&str> = dependencies.iter().map(String::as_str).collect();
    let their_static =
        pkg_config_words(&[&["--static", "--libs"], dependencies.as_slice()].concat());
    let their_shared = pkg_config_words(&[&["--libs"], dependencies.as_slice()].concat());
    let only_static = |word: &str| {
        their_static.iter().any(|w| w == word) && !their_shared.iter().any(|w| w == word)
    };
    let mut whole = false;
    // A library named twice (pkg-config repeats shared ones) is linked
    // once: rustc refuses one name with two sets of modifiers.
    let mut named = std::collections::HashSet::new();
    for word in &all {
        let name = word.trim_start_matches("-l:lib").trim_end_matches(".a");
        if word.starts_with("-l") && !named.insert(name.trim_start_matches("-l").to_owned()) {
            continue;
        }
        match word.as_str() {
            "-Wl,--whole-archive" => whole = true,
            "-Wl,--no-whole-archive" => whole = false,
            "-pthread" => println!("cargo:rustc-link-lib=dylib=pthread"),
            w if w.starts_with("-L") => println!("cargo:rustc-link-search=native={}", &w[2..]),
            w if w.starts_with("-l:lib") && w.ends_with(".a") => {
                let name = &w["-l:lib".len()..w.len() - ".a".len()];
                let kind = if whole {
                    "static:+whole-archive,-bundle"
                } else {
                    "static:-bundle"
                };
                println!("cargo:rustc-link-lib={kind}={name}");
            }
            w if w.starts_with("-lrte_") => {
                println!("cargo:rustc-link-lib=static:-bundle={}", &w[2..])
            }
            w if w.starts_with("-l") && !only_static(w) => {
                println!("cargo:rustc-link-lib=dylib={}", &w[2..])
            }
            // The rest: flags for the link as a whole (`--as-needed`,
            // which rustc sets itself, and `--export-dynamic`, which only
            // plugins loaded with `-d` need) and the left-out libraries.
            _ => {}
        }
    }
}

/// The raw words of `pkg-config --cflags libdpdk`. The pkg-config crate keeps
/// only `-I`/`-D` and would drop `-include rte_config.h` and `-march=corei7`,
/// both of which the DPDK headers need.
fn dpdk_cflags() -> Vec<String> {
    let output = Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let mut flags: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            flags.push("-DALLOW_EXPERIMENTAL_API".to_owned());
            flags
        }
        Ok(out) => panic!(
            "\n\n{SETUP_HINT}\n(pkg-config said: {})\n\n",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("\n\n{SETUP_HINT}\n(could not run pkg-config: {e})\n\n"),
    }
}

fn compile_shim(cflags: &[String]) {
    let mut build = cc::Build::new();
    build
        .file("drivers/shim/shim.c")
        .file("drivers/shim/unmap_guard.c")
        .opt_level(3)
        .warnings(true);
    for flag in cflags {
        build.flag(flag);
    }
    build.compile("dpstack_shim");
}

fn generate_bindings(cflags: &[String]) {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets this"));
    let header = manifest.join("drivers/shim/dpdk.h");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets this"));

    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(cflags)
        .allowlist_function("dps_.*")
        .allowlist_function(
            "rte_eal_(init|cleanup|get_runtime_dir|remote_launch|wait_lcore|mp_wait_lcore|get_lcore_state|process_type)",
        )
        .allowlist_function("rte_(lcore_count|get_main_lcore|get_next_lcore|lcore_is_enabled|lcore_to_socket_id|socket_id)")
        .allowlist_function("rte_(get_tsc_hz|thread_register|thread_unregister|strerror|delay_us_block)")
        .allowlist_function("rte_pktmbuf_pool_create|rte_pktmbuf_free_bulk|rte_mempool_free|rte_mempool_lookup")
        .allowlist_function(
            "rte_eth_(dev_configure|rx_queue_setup|tx_queue_setup|dev_start|dev_stop|dev_close|dev_info_get|dev_count_avail|find_next|find_next_owned_by|dev_get_name_by_port|dev_socket_id|macaddr_get|link_get_nowait|link_speed_to_str|promiscuous_enable|promiscuous_disable|promiscuous_get|stats_get|stats_reset|xstats_get|xstats_get_names|xstats_reset|dev_set_mtu|dev_get_mtu|dev_is_valid_port|dev_adjust_nb_rx_tx_desc|dev_get_port_by_name|dev_set_link_up|dev_set_link_down|dev_rss_hash_conf_get|dev_rss_hash_update|dev_rss_reta_query|dev_rss_reta_update|rx_queue_info_get|tx_queue_info_get|dev_fw_version_get|allmulticast_get|allmulticast_enable|allmulticast_disable|dev_set_mc_addr_list|dev_get_vlan_offload|dev_capability_name)",
        )
        .allowlist_function("rte_dev_devargs")
        .allowlist_type("rte_mbuf|rte_mempool|rte_eth_.*|rte_devargs")
        .allowlist_var("RTE_ETH_.*|RTE_MBUF_.*|RTE_MAX_.*|RTE_PKTMBUF_HEADROOM|RTE_MEMPOOL_CACHE_MAX_SIZE|LCORE_ID_ANY|SOCKET_ID_ANY|RTE_ETHER_.*")
        .blocklist_item("per_lcore_.*")
        .no_debug("rte_flow_item_gtp_psc")
        .no_copy("rte_mbuf|rte_mempool")
        .derive_default(true)
        .wrap_unsafe_ops(true)
        .generate_comments(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .clang_macro_fallback()
        .clang_macro_fallback_build_dir(&out)
        .parse_callbacks(Box::new(WideFlags))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|e| {
            panic!("\n\nbindgen could not read the DPDK headers: {e}\n{SETUP_HINT}\n\n")
        });
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings.rs into OUT_DIR");
}

/// DPDK builds its offload, RSS and mbuf flag constants with `RTE_BIT64(n)`,
/// which bindgen types inconsistently (u32, u64 or a negative i64). They are
/// all 64-bit masks: give every one of them `u64`.
#[derive(Debug)]
struct WideFlags;

impl bindgen::callbacks::ParseCallbacks for WideFlags {
    fn int_macro(&self, name: &str, _value: i64) -> Option<bindgen::callbacks::IntKind> {
        const PREFIXES: [&str; 5] = [
            "RTE_ETH_RX_OFFLOAD_",
            "RTE_ETH_TX_OFFLOAD_",
            "RTE_ETH_RSS_",
            "RTE_MBUF_F_",
            "RTE_ETH_LINK_SPEED_",
        ];
        PREFIXES
            .iter()
            .any(|p| name.starts_with(p))
            .then_some(bindgen::callbacks::IntKind::U64)
    }
}
