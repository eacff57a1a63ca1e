//! The room's seccomp filter: a short deny list, compiled by `seccompiler` (Firecracker's
//! filter compiler) and loaded by bubblewrap (`--seccomp FD`) right before the program starts.
//!
//! Why a filter at all: a process inherits its parent's *session keyring*, and no namespace
//! hides it — bubblewrap's user namespace gives a new user keyring, but `keyctl print
//! %user:<name>` still finds a key in the inherited session keyring (that is where the kernel
//! keyring store keeps Engram's API keys). Refusing the keyring calls closes that door for any
//! program, Python or not. The other entries widen the kernel's attack surface and no tool
//! needs them. Everything else is allowed; the namespaces do the rest.

/// System calls the room refuses with `EPERM`, by name (for messages and tests).
pub const DENIED: &[&str] = &[
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
];

/// The compiled filter as the bytes bubblewrap reads: `struct sock_filter` records (8 bytes
/// each: `code` u16, `jt` u8, `jf` u8, `k` u32, native endian).
///
/// Errors: a message when this CPU architecture has no filter (seccompiler knows x86_64,
/// aarch64 and riscv64).
#[cfg(target_os = "linux")]
pub fn program() -> Result<Vec<u8>, String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    use std::collections::BTreeMap;

    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let numbers: [i64; 6] = [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
    ];
    let mut rules = BTreeMap::new();
    for nr in numbers {
        rules.insert(nr, Vec::new());
        // x86_64's x32 ABI passes the same architecture check with bit 30 set on the number.
        if cfg!(target_arch = "x86_64") {
            rules.insert(nr | 0x4000_0000, Vec::new());
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for ins in program {
        bytes.extend_from_slice(&ins.code.to_ne_bytes());
        bytes.push(ins.jt);
        bytes.push(ins.jf);
        bytes.extend_from_slice(&ins.k.to_ne_bytes());
    }
    Ok(bytes)
}
