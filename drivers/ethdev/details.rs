//! The port settings `show port info` prints besides [`PortInfo`]:
//! firmware version, device arguments, all-multicast mode and VLAN offloads.
//! Each is its own DPDK call; a driver without the operation gives `None`.
//!
//! Control path only.
//!
//! [`PortInfo`]: super::PortInfo

use super::info::{c_text, check};
use crate::error::Result;
use crate::sys;
use std::ffi::c_char;

/// Longest firmware version string asked for (testpmd asks 32 bytes).
const FW_VERSION_LEN: usize = 256;

/// VLAN offloads switched on (`rte_eth_dev_get_vlan_offload`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VlanOffload {
    /// VLAN tags are stripped on receive.
    pub strip: bool,
    /// Frames are filtered by VLAN id.
    pub filter: bool,
    /// Double VLAN (extended) mode.
    pub extend: bool,
    /// QinQ outer tags are stripped.
    pub qinq_strip: bool,
}

impl VlanOffload {
    fn from_mask(mask: u32) -> VlanOffload {
        VlanOffload {
            strip: mask & sys::RTE_ETH_VLAN_STRIP_OFFLOAD != 0,
            filter: mask & sys::RTE_ETH_VLAN_FILTER_OFFLOAD != 0,
            extend: mask & sys::RTE_ETH_VLAN_EXTEND_OFFLOAD != 0,
            qinq_strip: mask & sys::RTE_ETH_QINQ_STRIP_OFFLOAD != 0,
        }
    }
}

/// A port's settings. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSettings {
    /// The firmware version, if the driver reports one.
    pub firmware: Option<String>,
    /// The device's arguments (`iface=dtap0`), if it was created with any
    /// (an empty string for a device created without).
    pub devargs: Option<String>,
    /// All-multicast mode is on.
    pub allmulticast: bool,
    /// The VLAN offloads, if the driver reports them.
    pub vlan_offload: Option<VlanOffload>,
}

impl PortSettings {
    pub(crate) fn query(id: u16) -> Result<PortSettings> {
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: info is valid for writes for the call.
        let ret = unsafe { sys::rte_eth_dev_info_get(id, &mut info) };
        check(id, "read device info", ret)?;
        // SAFETY: reads the port's state.
        let allmulticast = unsafe { sys::rte_eth_allmulticast_get(id) } == 1;
        // SAFETY: reads the port's state.
        let vlan = unsafe { sys::rte_eth_dev_get_vlan_offload(id) };
        Ok(PortSettings {
            firmware: firmware_version(id),
            devargs: devargs(info.device),
            allmulticast,
            vlan_offload: (vlan >= 0).then(|| VlanOffload::from_mask(vlan as u32)),
        })
    }
}

/// The firmware version, or `None` if the driver has none to report.
fn firmware_version(id: u16) -> Option<String> {
    let mut text = [0 as c_char; FW_VERSION_LEN];
    // SAFETY: text holds FW_VERSION_LEN bytes, the size passed; DPDK writes
    // a NUL-terminated string (or returns the size it needs, > 0).
    let ret = unsafe { sys::rte_eth_dev_fw_version_get(id, text.as_mut_ptr(), text.len()) };
    (ret == 0).then(|| c_text(text.as_ptr()))
}

/// The arguments the device was created with, if it has a devargs entry.
fn devargs(device: *mut sys::rte_device) -> Option<String> {
    if device.is_null() {
        return None;
    }
    // SAFETY: device is the port's live rte_device (from dev_info); the
    // call returns its devargs or NULL.
    let devargs = unsafe { sys::rte_dev_devargs(device) };
    if devargs.is_null() {
        return None;
    }
    // SAFETY: devargs is non-NULL and lives as long as the device; `args`
    // (the union's legacy name of `drv_str`) is a NUL-terminated string
    // or NULL.
    let args = unsafe { (*devargs).__bindgen_anon_1.args };
    (!args.is_null()).then(|| c_text(args))
}
