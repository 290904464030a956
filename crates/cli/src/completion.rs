//! What `storbench completions` offers beyond clap's definition: the values of options that
//! are parsed by storbench's own tables (formats from the reporter registry, profiles,
//! quick's engines from the catalogue, the live-progress modes), and for bash the labels
//! of the results database, which the script asks `storbench completions --labels` for as
//! it completes.

use clap::builder::{PossibleValue, PossibleValuesParser};
use storbench_job::catalogue;
use storbench_model::profile::Profile;
use storbench_model::result::RunMode;
use storbench_report::registry;

/// The live-progress modes of `--eta`.
const ETA: [&str; 3] = ["auto", "always", "never"];

/// The formats (names and listed aliases) that show a run of any of `modes`, in list order.
fn formats(modes: &[RunMode]) -> PossibleValuesParser {
    let mut names: Vec<&'static str> = Vec::new();
    for mode in modes {
        for f in registry::for_mode(*mode) {
            for name in std::iter::once(f.name).chain(f.aliases.iter().copied()) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    PossibleValuesParser::new(names.into_iter().map(PossibleValue::new))
}

fn values(names: impl IntoIterator<Item = &'static str>) -> PossibleValuesParser {
    PossibleValuesParser::new(names.into_iter().map(PossibleValue::new))
}

/// `cmd` (storbench's definition) with the values completions offer. Only the scripts are
/// generated from it; the options themselves keep their own parsers.
pub fn with_values(cmd: clap::Command) -> clap::Command {
    let profiles = [
        Profile::Default,
        Profile::Peak,
        Profile::Real,
        Profile::Nvme,
        Profile::Classic,
    ]
    .map(Profile::name);
    cmd.mut_subcommand("quick", |s| {
        s.mut_arg("format", |a| a.value_parser(formats(&[RunMode::Quick])))
            .mut_arg("profile", |a| a.value_parser(values(profiles)))
            .mut_arg("engine", |a| {
                a.value_parser(values(catalogue::data_engines(None)))
            })
            .mut_arg("eta", |a| a.value_parser(values(ETA)))
    })
    .mut_subcommand("show", |s| {
        s.mut_arg("format", |a| {
            a.value_parser(formats(&[
                RunMode::Quick,
                RunMode::Fio,
                RunMode::Bonnie,
                RunMode::Diagnose,
            ]))
        })
    })
    .mut_subcommand("bonnie", |s| {
        s.mut_arg("format", |a| a.value_parser(formats(&[RunMode::Bonnie])))
    })
    .mut_subcommand("diagnose", |s| {
        s.mut_arg("format", |a| a.value_parser(formats(&[RunMode::Diagnose])))
            .mut_arg("eta", |a| a.value_parser(values(ETA)))
    })
}

/// Appended to clap's bash script: where a run is named (`show`, `compare`, `report`,
/// `export`, `--baseline`, `history --label`), the labels of the database the command line
/// names (`--db`, else `STORBENCH_DB` or the default); clap's completion everywhere else.
pub const BASH_LABELS: &str = r#"
_storbench_with_labels() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local sub="" i db=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            --db) db=(--db "${COMP_WORDS[i+1]}"); ((i++)) ;;
            --db=*) db=("${COMP_WORDS[i]}") ;;
            -*) ;;
            *) [[ -z $sub ]] && sub="${COMP_WORDS[i]}" ;;
        esac
    done
    local want=""
    case "$sub:$prev" in
        history:--label | *:--baseline) want=1 ;;
        show:-* | compare:-* | report:-* | export:-*) ;;
        show:* | compare:* | report:* | export:*) [[ $cur != -* ]] && want=1 ;;
    esac
    if [[ -n $want ]]; then
        local IFS=$'\n'
        COMPREPLY=($(compgen -W "$(storbench "${db[@]}" completions --labels 2>/dev/null)" -- "$cur"))
        return 0
    fi
    _storbench "$@"
}
complete -F _storbench_with_labels -o nosort -o bashdefault -o default storbench
"#;
