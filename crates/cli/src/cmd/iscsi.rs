//! `storbench iscsi discover HOST[:PORT]`: the targets a portal offers (SendTargets) and, for
//! each, its LUNs with type, capacity, block size, vendor and product (REPORT LUNS, INQUIRY,
//! READ CAPACITY). Every session it opens is logged out before it returns.

use std::process::ExitCode;

use anyhow::Context as _;
use storbench_iscsi::discovery::{self, LunInfo};
use storbench_iscsi::{Timeouts, Url};
use storbench_job::target::Target;

use crate::StoreArgs;

/// iSCSI tools that need no kernel initiator and no root.
#[derive(clap::Args, Debug)]
pub struct IscsiArgs {
    #[command(subcommand)]
    pub command: IscsiCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum IscsiCommand {
    /// List a portal's targets and their LUNs (capacity, block size, vendor, product).
    Discover(DiscoverArgs),
}

#[derive(clap::Args, Debug)]
pub struct DiscoverArgs {
    /// The portal: HOST[:PORT] (port 3260 by default), or an iscsi:// URL, which may carry
    /// a CHAP user (iscsi://user@host; the secret from STORBENCH_ISCSI_SECRET, ?secret-file=
    /// or the prompt) and ?initiator=IQN.
    #[arg(value_name = "HOST[:PORT]")]
    pub portal: String,
    /// Initiator IQN to log in as (some targets allow only listed initiators).
    #[arg(long, value_name = "IQN")]
    pub initiator: Option<String>,
    /// Only list target names and addresses; do not log in to each target.
    #[arg(long)]
    pub targets_only: bool,
    /// Output format: table (default) or json.
    #[arg(long, value_name = "FORMAT", default_value = "table", value_parser = ["table", "json"])]
    pub format: String,
    /// The same as --format json (kept for scripts).
    #[arg(long, hide = true)]
    pub json: bool,
}

pub fn run(args: IscsiArgs, _store: &StoreArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        IscsiCommand::Discover(d) => discover(d),
    }
}

/// One target and what probing it found.
struct Found {
    name: String,
    addresses: Vec<String>,
    luns: Result<Vec<LunInfo>, String>,
}

fn discover(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    let raw = if args.portal.starts_with("iscsi://") {
        args.portal.clone()
    } else {
        format!("iscsi://{}", args.portal)
    };
    // The same parse as every target: a portal is an iSCSI URL without a target or LUN.
    let mut url = match Target::parse(&raw).map_err(anyhow::Error::msg)? {
        Target::Iscsi(typed) => typed.url,
        other => anyhow::bail!("{other} is not an iSCSI portal"),
    };
    storbench_engines::iscsi::secrets(&url, &crate::secrets::Terminal)?;
    url.resolve_secrets()?;
    if let Some(iqn) = args.initiator {
        url.initiator = iqn;
    }
    let timeouts = Timeouts::default();
    let targets = discovery::send_targets(&url, &timeouts)
        .with_context(|| format!("discovery on {}", url.portal()))?;
    let found: Vec<Found> = targets
        .into_iter()
        .map(|t| Found {
            luns: if args.targets_only {
                Ok(Vec::new())
            } else {
                discovery::probe_target(&url, &t.name, &timeouts).map_err(|e| e.to_string())
            },
            name: t.name,
            addresses: t.addresses,
        })
        .collect();
    let text = if args.json || args.format == "json" {
        serde_json::to_string_pretty(&to_json(&url, &found))? + "\n"
    } else {
        storbench_report::terminal::escape(&table(&url, &found, args.targets_only)).into_owned()
    };
    // Through print_out: a reader that went away (`| head`) ends quietly, not in a panic.
    crate::running::print_out(&storbench_model::redact::text(&text))?;
    Ok(ExitCode::SUCCESS)
}

fn table(url: &Url, found: &[Found], targets_only: bool) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "portal {}: {} target(s)", url.portal(), found.len());
    for t in found {
        let _ = writeln!(s, "\n{}  ({})", t.name, t.addresses.join(", "));
        if targets_only {
            continue;
        }
        match &t.luns {
            Err(e) => {
                let _ = writeln!(s, "  cannot list LUNs: {e}");
            }
            Ok(luns) => {
                let _ = writeln!(
                    s,
                    "  {:>4}  {:<10}  {:>10}  {:>6}  {:<8}  {:<16}  URL",
                    "LUN", "TYPE", "SIZE", "BLOCK", "VENDOR", "PRODUCT"
                );
                for l in luns {
                    let _ = writeln!(s, "{}", lun_row(url, &t.name, l));
                }
            }
        }
    }
    s
}

fn lun_row(url: &Url, target: &str, l: &LunInfo) -> String {
    let (kind, vendor, product) = match &l.inquiry {
        Some(i) => (i.device_type_name(), i.vendor.as_str(), i.product.as_str()),
        None => ("?", "", ""),
    };
    let (size, block, link) = match l.capacity {
        Some(c) => (
            storbench_core::space::human(c.bytes()),
            c.block_size.to_string(),
            format!("iscsi://{}/{target}/{}", url.portal(), l.lun),
        ),
        None => ("-".into(), "-".into(), l.error.clone().unwrap_or_default()),
    };
    format!(
        "  {:>4}  {kind:<10}  {size:>10}  {block:>6}  {vendor:<8}  {product:<16}  {link}",
        l.lun
    )
}

fn to_json(url: &Url, found: &[Found]) -> serde_json::Value {
    let targets: Vec<serde_json::Value> = found
        .iter()
        .map(|t| {
            let luns = match &t.luns {
                Ok(luns) => serde_json::Value::Array(luns.iter().map(lun_json).collect()),
                Err(e) => serde_json::json!({ "error": e }),
            };
            serde_json::json!({ "target": t.name, "addresses": t.addresses, "luns": luns })
        })
        .collect();
    serde_json::json!({ "portal": url.portal(), "targets": targets })
}

fn lun_json(l: &LunInfo) -> serde_json::Value {
    serde_json::json!({
        "lun": l.lun,
        "type": l.inquiry.as_ref().map(|i| i.device_type_name()),
        "vendor": l.inquiry.as_ref().map(|i| i.vendor.clone()),
        "product": l.inquiry.as_ref().map(|i| i.product.clone()),
        "revision": l.inquiry.as_ref().map(|i| i.revision.clone()),
        "size_bytes": l.capacity.map(|c| c.bytes()),
        "block_size": l.capacity.map(|c| c.block_size),
        "thin_provisioned": l.capacity.map(|c| c.thin),
        "error": l.error,
    })
}
