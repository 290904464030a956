//! `storbench smb shares HOST[:PORT]`: the shares a server offers (srvsvc NetrShareEnum over
//! `IPC$`), as a guest or as `smb://user@host` with the password from
//! `STORBENCH_SMB_PASSWORD` or a prompt. The session is logged off before it returns.

use std::process::ExitCode;

use anyhow::Context as _;
use storbench_job::target::Target;
use storbench_smb::{Client, ClientConfig};

/// SMB tools that need no mount and no root.
#[derive(clap::Args, Debug)]
pub struct SmbArgs {
    #[command(subcommand)]
    pub command: SmbCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum SmbCommand {
    /// List a server's shares (name, type, comment).
    Shares(SharesArgs),
}

#[derive(clap::Args, Debug)]
pub struct SharesArgs {
    /// The server: HOST[:PORT] (port 445 by default), or smb://[user[;domain]@]host[:port]
    /// (a guest login without a user).
    #[arg(value_name = "HOST[:PORT]")]
    pub server: String,
    /// Output format: table (default) or json.
    #[arg(long, value_name = "FORMAT", default_value = "table", value_parser = ["table", "json"])]
    pub format: String,
    /// The same as --format json (kept for scripts).
    #[arg(long, hide = true)]
    pub json: bool,
}

pub fn run(args: SmbArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        SmbCommand::Shares(a) => shares(a),
    }
}

fn shares(args: SharesArgs) -> anyhow::Result<ExitCode> {
    let raw = if args.server.starts_with("smb://") {
        args.server.clone()
    } else {
        format!("smb://{}", args.server)
    };
    // The URL needs a share to parse; the listing goes to IPC$ whatever is given.
    let with_share = match raw["smb://".len()..].find('/') {
        Some(_) => raw.clone(),
        None => format!("{raw}/IPC$"),
    };
    // The same parse as every target.
    let url = match Target::parse(&with_share).map_err(anyhow::Error::msg)? {
        Target::Smb(typed) => typed.url,
        other => anyhow::bail!("{other} is not an SMB server"),
    };
    storbench_engines::smb::password(&url, &crate::secrets::Terminal)?;
    let cfg = ClientConfig::from_url(&url, storbench_smb::url::password_from_env())?;
    let shares =
        Client::list_shares(&cfg).with_context(|| format!("shares of {}", url.server()))?;
    let text = if args.json || args.format == "json" {
        let list: Vec<serde_json::Value> = shares
            .iter()
            .map(|s| serde_json::json!({ "name": s.name, "type": s.kind_name(), "comment": s.remark }))
            .collect();
        serde_json::to_string_pretty(
            &serde_json::json!({ "server": url.server(), "shares": list }),
        )? + "\n"
    } else {
        let mut t = format!("server {}: {} share(s)\n", url.server(), shares.len());
        t += &format!("  {:<24}  {:<8}  COMMENT\n", "SHARE", "TYPE");
        for s in &shares {
            t += &format!("  {:<24}  {:<8}  {}\n", s.name, s.kind_name(), s.remark);
        }
        storbench_report::terminal::escape(&t).into_owned()
    };
    crate::running::print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}
