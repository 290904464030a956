//! fio's NUMA placement, which a process may set on itself: `numa_cpu_nodes` (the nodes'
//! CPUs, from /sys) and `numa_mem_policy` (set_mempolicy), checked against the host's
//! nodes as each clone starts.

/// Where the host lists its NUMA nodes.
const NODE_DIR: &str = "/sys/devices/system/node";

/// The host's NUMA nodes, from /sys (one node 0 where the kernel lists none).
fn host_nodes() -> Vec<u32> {
    let mut nodes: Vec<u32> = std::fs::read_dir(NODE_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
        .collect();
    nodes.sort_unstable();
    if nodes.is_empty() {
        nodes.push(0);
    }
    nodes
}

/// `nodes` checked against the host's (empty: all of them).
fn existing_nodes(what: &str, nodes: &[u32]) -> Result<Vec<u32>, crate::error::EngineError> {
    let host = host_nodes();
    if nodes.is_empty() {
        return Ok(host);
    }
    match nodes.iter().find(|n| !host.contains(n)) {
        None => Ok(nodes.to_vec()),
        Some(n) => {
            let have: Vec<String> = host.iter().map(u32::to_string).collect();
            Err(crate::error::EngineError::new(
                crate::error::ErrorKind::Unsupported,
                format!(
                    "{what}: NUMA node {n} does not exist (this host has node {})",
                    have.join(", ")
                ),
            ))
        }
    }
}

/// Runs the calling thread on the CPUs of `nodes` (fio's `numa_cpu_nodes`; empty: all).
pub fn run_on_nodes(nodes: &[u32]) -> Result<(), crate::error::EngineError> {
    let mut cpus = Vec::new();
    for n in existing_nodes("numa_cpu_nodes", nodes)? {
        let list = std::fs::read_to_string(format!("{NODE_DIR}/node{n}/cpulist"));
        let list = list.unwrap_or_else(|_| format!("0-{}", online_cpus().saturating_sub(1)));
        cpus.extend(parse_list(list.trim()));
    }
    crate::cpu::run_on(&cpus)
}

/// The CPUs online.
fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// A kernel list (`0-3,8`) as numbers.
fn parse_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for item in text.split(',').filter(|s| !s.is_empty()) {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
            out.extend(lo..=hi);
        }
    }
    out
}

/// Sets the calling thread's memory policy (fio's `numa_mem_policy`) with set_mempolicy.
pub fn set_mem_policy(policy: &storbench_job::NumaMem) -> Result<(), crate::error::EngineError> {
    use storbench_job::NumaMode;
    const BITS: usize = 64;
    let mut mask = [0u64; 1024 / BITS];
    let needs_nodes = !matches!(policy.mode, NumaMode::Default | NumaMode::Local);
    if needs_nodes {
        let given = policy.nodes.clone().unwrap_or_default();
        for n in existing_nodes("numa_mem_policy", &given)? {
            mask[n as usize / BITS] |= 1 << (n as usize % BITS);
        }
    }
    let (ptr, maxnode) = if needs_nodes {
        (mask.as_ptr(), (mask.len() * BITS + 1) as libc::c_ulong)
    } else {
        (std::ptr::null(), 0)
    };
    // SAFETY: set_mempolicy reads `maxnode - 1` bits from `ptr`, which `mask` holds (or
    // nothing for a null mask).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            policy.mode as libc::c_int,
            ptr,
            maxnode,
        )
    };
    if rc != 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(crate::error::EngineError::errno(
            "set_mempolicy",
            &format!("{:?}", policy.mode).to_lowercase(),
            errno,
        ));
    }
    Ok(())
}
