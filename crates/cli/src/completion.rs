//! What `storbench completions` offers beyond clap's definition: the values of options that
//! are parsed by storbench's own tables (formats from the reporter registry, profiles,
//! quick's engines from the catalogue, the live-progress modes), and the labels of the
//! results database where a run is named, which each shell's script asks
//! `storbench completions --labels` for as it completes (bash through a wrapper of clap's
//! function, zsh and fish through a marker value clap writes where the labels go).

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap_complete::Shell;
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

/// The one value clap's zsh and fish scripts offer where a run is named, replaced in the
/// script by the shell's call of [`ZSH_LABELS`] or [`FISH_LABELS`].
const LABELS_MARKER: &str = "__storbench_labels__";

/// Where a run is named: each subcommand's run arguments and options naming a run.
const NAMES_A_RUN: [(&str, &[&str]); 5] = [
    ("show", &["run"]),
    ("compare", &["runs", "baseline"]),
    ("report", &["runs", "baseline"]),
    ("export", &["runs"]),
    ("history", &["label"]),
];

/// `cmd` with the labels marker as the one value of every argument that names a run, for
/// the zsh and fish scripts. The hidden `--label` before a subcommand gets it too: zsh's
/// outer `_arguments` claims a `--label` anywhere on the line (`history --label`).
fn with_label_marker(cmd: clap::Command) -> clap::Command {
    let mut cmd = cmd.mut_arg("label", |a| a.value_parser(values([LABELS_MARKER])));
    for (sub, args) in NAMES_A_RUN {
        cmd = cmd.mut_subcommand(sub, |mut s| {
            for arg in args {
                s = s.mut_arg(*arg, |a| a.value_parser(values([LABELS_MARKER])));
            }
            s
        });
    }
    cmd
}

/// The completion script of `shell` for `cmd` (storbench's definition with its values),
/// completing stored labels where a run is named in bash, zsh and fish.
pub fn script(shell: Shell, cmd: clap::Command) -> String {
    let mut cmd = with_values(cmd);
    if matches!(shell, Shell::Zsh | Shell::Fish) {
        cmd = with_label_marker(cmd);
    }
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "storbench", &mut out);
    let script = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => script + BASH_LABELS,
        Shell::Zsh => {
            let call = script.replace(&format!("({LABELS_MARKER})"), "_storbench_labels");
            // Defined before clap's last lines, which run `_storbench` when autoloaded.
            match call.rfind("\nif [ \"$funcstack[1]\" = \"_storbench\" ]") {
                Some(at) => format!("{}{ZSH_LABELS}{}", &call[..at], &call[at..]),
                None => call + ZSH_LABELS,
            }
        }
        Shell::Fish => {
            let mut s = script.replace(
                &format!("\"{LABELS_MARKER}\\t''\""),
                "\"(__storbench_labels)\"",
            );
            s.push_str(FISH_LABELS);
            for (sub, args) in NAMES_A_RUN {
                if args.contains(&"run") || args.contains(&"runs") {
                    s.push_str(&format!(
                        "complete -c storbench -n \"__fish_storbench_using_subcommand {sub}\" -f -a \"(__storbench_labels)\"\n"
                    ));
                }
            }
            s
        }
        _ => script,
    }
}

/// zsh: the labels of the database the command line names (`--db`, else `STORBENCH_DB` or
/// the default), read from the whole line, which `_arguments` narrows `words` below.
const ZSH_LABELS: &str = r#"
_storbench_labels() {
    local -a all db labels
    local i
    all=(${(z)LBUFFER})
    for ((i = 2; i <= $#all; i++)); do
        case $all[i] in
            --db) (( i < $#all )) && db=(--db ${(Q)all[i+1]}) ;;
            --db=*) db=(${(Q)all[i]}) ;;
        esac
    done
    labels=(${(f)"$(storbench $db completions --labels 2>/dev/null)"})
    compadd -a labels
}
"#;

/// fish: the same, from the tokens before the cursor; the script adds it to the options
/// that name a run and to the run arguments of `show`, `compare`, `report` and `export`.
const FISH_LABELS: &str = r#"
function __storbench_labels
    set -l words (commandline -opc)
    set -l db
    for i in (seq 2 (count $words))
        switch $words[$i]
            case --db
                test $i -lt (count $words); and set db --db $words[(math $i + 1)]
            case '--db=*'
                set db $words[$i]
        end
    end
    storbench $db completions --labels 2>/dev/null
end
"#;

/// Appended to clap's bash script: where a run is named (`show`, `compare`, `report`,
/// `export`, `--baseline`, `history --label`), the labels of the database the command line
/// names (`--db`, else `STORBENCH_DB` or the default); clap's completion everywhere else.
const BASH_LABELS: &str = r#"
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
