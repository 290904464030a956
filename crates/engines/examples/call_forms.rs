//! Whether the form of a metadata system call changes its cost: bonnie++ creates with
//! `openat(AT_FDCWD, name, O_WRONLY|O_CREAT|O_EXCL, 0600)` after `chdir` and stats with
//! `stat(name)`; storbench's local engine names files relative to an `O_PATH` directory
//! descriptor, with `O_CLOEXEC` and mode 0644, and stats with `fstatat`. Both forms work
//! in one directory (names differ by a last letter), in alternating batches of 2,000, each
//! form first in turn. `AA=1` runs bonnie++'s form against itself to show the scatter.
//!
//! usage: call_forms DIR [FILES] [ROUNDS]     (DIR on tmpfs: the cheapest calls)
//! prints per round: µs per call each way, and storbench's form's rate over bonnie++'s

mod support;

use std::ffi::CString;
use std::time::Duration;

use support::{BATCH, take_turns};

/// How a side makes its calls.
#[derive(Clone, Copy)]
struct Form {
    /// `AT_FDCWD`, or the directory's `O_PATH` descriptor.
    dir: i32,
    flags: i32,
    mode: libc::c_uint,
}

fn create(form: Form, name: &CString) {
    // SAFETY: a directory descriptor (or AT_FDCWD) and a C string.
    let fd = unsafe { libc::openat(form.dir, name.as_ptr(), form.flags, form.mode) };
    assert!(fd >= 0, "create {name:?}");
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
}

fn stat(form: Form, name: &CString) {
    // SAFETY: `stat` is plain data; a directory descriptor and a C string.
    let rc = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if form.dir == libc::AT_FDCWD {
            libc::stat(name.as_ptr(), &mut st)
        } else {
            libc::fstatat(form.dir, name.as_ptr(), &mut st, 0)
        }
    };
    assert_eq!(rc, 0, "stat {name:?}");
}

/// Times `op` over both sides' names in alternating batches.
fn compare(forms: [Form; 2], names: &[[CString; 2]], op: fn(Form, &CString)) -> [Duration; 2] {
    take_turns(names.len(), |side, i| op(forms[side], &names[i][side]))
}

fn main() {
    let support::Args {
        base,
        dir,
        count,
        rounds,
    } = support::args("call_forms", 200_000, 4);
    std::fs::create_dir(&dir).expect("make the bench directory");
    std::env::set_current_dir(&dir).expect("change to the bench directory");
    let dot = CString::new(".").unwrap();
    // SAFETY: a C string; the descriptor lives until the process ends.
    let dir_fd = unsafe { libc::open(dot.as_ptr(), libc::O_PATH | libc::O_DIRECTORY) };
    assert!(dir_fd >= 0, "open the bench directory");
    let bonnie = Form {
        dir: libc::AT_FDCWD,
        flags: libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        mode: 0o600,
    };
    let storbench = Form {
        dir: dir_fd,
        flags: libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
        mode: 0o644,
    };
    let aa = std::env::var_os("AA").is_some();
    let forms = [bonnie, if aa { bonnie } else { storbench }];
    let names: Vec<[CString; 2]> = (0..count)
        .map(|i| {
            [format!("{i:010x}abcdefA"), format!("{i:010x}abcdefB")]
                .map(|n| CString::new(n).unwrap())
        })
        .collect();
    let label = if aa {
        "bonnie++'s form again"
    } else {
        "storbench's form"
    };
    println!("{count} files per round, batches of {BATCH}, in {dir}; side 2: {label}");
    for round in 1..=rounds {
        let created = compare(forms, &names, create);
        let stated = compare(forms, &names, stat);
        for n in names.iter().flatten() {
            std::fs::remove_file(n.to_str().unwrap()).expect("remove a bench file");
        }
        for (op, [a, b]) in [("create", created), ("stat", stated)] {
            let per_call = |d: Duration| d.as_secs_f64() * 1e6 / count as f64;
            println!(
                "round {round} {op:<6}: µs per call: bonnie++'s form {:.3}, side 2 {:.3}; rate side 2 / bonnie++'s {:.4}",
                per_call(a),
                per_call(b),
                a.as_secs_f64() / b.as_secs_f64()
            );
        }
    }
    std::env::set_current_dir(&base).expect("leave the bench directory");
    std::fs::remove_dir(&dir).expect("remove the bench directory");
}
