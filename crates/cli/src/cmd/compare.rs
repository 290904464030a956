//! `storbench compare`: tables of every metric the chosen runs share, with changes against a
//! baseline. Also the run selection (`ID|LABEL`) used by `show` and `report`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use storbench_report::compare::{NamedRun, compare};
use storbench_report::registry::{self, Style};
use storbench_store::{Store, StoredRun};

use crate::StoreArgs;
use crate::cmd::save::open_store_read_only;

/// Compare stored runs.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Run ids or labels (a label selects its newest run).
    #[arg(value_name = "ID|LABEL", required = true)]
    pub runs: Vec<String>,
    /// The run changes are measured against (default: the first); added if not listed.
    #[arg(long, value_name = "ID|LABEL")]
    pub baseline: Option<String>,
    /// Output format; `table` is the same as `text`, the name `history --format` uses for it.
    #[arg(long, default_value = "text", value_parser = format_values())]
    pub format: String,
    /// Colour improvements and regressions (text format; NO_COLOR turns it off).
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
}

/// The `--format` values: the registry's comparison formats, with their hidden aliases
/// (`table`, `history`'s name for the plain layout), so the listed choices stay those of the
/// help.
fn format_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new(
        registry::for_comparisons()
            .map(|f| PossibleValue::new(f.name).aliases(f.hidden_aliases.iter().copied())),
    )
}

pub fn run_compare(args: CompareArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let db = open_store_read_only(store)?;
    let (runs, baseline) = select_runs(&db, &args.runs, args.baseline.as_deref())?;
    if runs.len() < 2 {
        anyhow::bail!(
            "compare needs at least two runs; got only run {}",
            runs[0].id
        );
    }
    let named = name_runs(&runs);
    let comparison = compare(&named, baseline);
    let format = registry::for_comparison(&args.format)
        .ok_or_else(|| anyhow::anyhow!("--format {}: not a comparison format", args.format))?;
    let style = Style {
        color: use_color(&args.color),
        width: crate::ui::stdout_columns(),
    };
    let mut out = std::io::stdout().lock();
    format.write_comparison(&comparison, style, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `always`, `never`, or (auto) a terminal without NO_COLOR.
fn use_color(choice: &str) -> bool {
    match choice {
        "always" => true,
        "never" => false,
        _ => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

/// Resolves one `ID|LABEL`, telling on stderr when a label matched several runs.
pub fn resolve_one(db: &Store, token: &str) -> anyhow::Result<i64> {
    let (id, matches) = db.resolve(token)?;
    if matches > 1 {
        eprintln!(
            "storbench: label '{token}' is on {matches} runs; using the newest, run {id} \
             (give an id to pick another)"
        );
    }
    Ok(id)
}

/// Loads the runs named by `tokens` (and the baseline, put first when not among them);
/// returns them with the baseline's index. Naming one run twice is an error; an interrupted
/// run is compared with a warning, since its figures may not be like for like.
pub fn select_runs(
    db: &Store,
    tokens: &[String],
    baseline: Option<&str>,
) -> anyhow::Result<(Vec<StoredRun>, usize)> {
    let mut ids = Vec::new();
    for t in tokens {
        let id = resolve_one(db, t)?;
        if ids.contains(&id) {
            anyhow::bail!("run {id} is named twice ('{t}')");
        }
        ids.push(id);
    }
    let mut base = 0;
    if let Some(b) = baseline {
        let id = resolve_one(db, b)?;
        base = match ids.iter().position(|&i| i == id) {
            Some(i) => i,
            None => {
                ids.insert(0, id);
                0
            }
        };
    }
    let runs = ids
        .iter()
        .map(|&id| db.load(id))
        .collect::<Result<Vec<_>, _>>()?;
    for r in runs.iter().filter(|r| r.run.interrupted) {
        eprintln!(
            "storbench: warning: run {} was {}",
            r.id,
            crate::cmd::history::PARTIAL
        );
    }
    Ok((runs, base))
}

/// Column names: the label when it is unique among the runs, else `label #id`, else `#id`;
/// a long label cut as [`storbench_report::label::shown`] cuts it.
pub fn name_runs(runs: &[StoredRun]) -> Vec<NamedRun<'_>> {
    runs.iter()
        .map(|r| {
            let label = r.meta.label.as_deref();
            let unique = label.is_some_and(|l| {
                runs.iter()
                    .filter(|o| o.meta.label.as_deref() == Some(l))
                    .count()
                    == 1
            });
            let name = match label.map(storbench_report::label::shown) {
                Some(l) if unique => l.into_owned(),
                Some(l) => format!("{l} #{}", r.id),
                None => format!("#{}", r.id),
            };
            NamedRun {
                id: r.id,
                name,
                run: &r.run,
            }
        })
        .collect()
}
