//! The self-contained binary (packaging/static.sh) in a root holding nothing else: no
//! shared library, no NSS module, no nsswitch.conf or resolv.conf; only the binary,
//! /etc/hosts, /proc, /dev/{null,zero,urandom} and a tmpfs /tmp, in a mount namespace of
//! its own (unshare) so nothing stays mounted. `quick` runs on the tmpfs and saves to a
//! database there (bundled SQLite), and over NFS, SMB and NBD to a real ganesha, smbd and
//! nbdkit named through /etc/hosts. The .deb (packaging/deb.sh) is built from the same binary and installed
//! into a scratch dpkg root.
//!
//! The release build is slow: test.sh runs packaging/static.sh before the tests, so here
//! it only finds the binary up to date.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Run;
use common::entries;
use common::mpi::{mpirun_of, no_mpirun, run_mpi};
use common::system::{have_tool, root_or_skip};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::nbdkit::{self, Nbdkit};
use storbench_testkit::require;
use storbench_testkit::smbd::{self, Smbd};

/// The host name the jail's /etc/hosts gives the test's servers.
const NAS: &str = "nas.storbench.test";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds (or finds up to date) the static binary.
fn static_binary() -> PathBuf {
    let out = Command::new(workspace().join("packaging/static.sh"))
        .output()
        .expect("packaging/static.sh runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "packaging/static.sh failed:\n{err}");
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(path.is_file(), "{}", path.display());
    path
}

/// A root with only the binary and /etc/hosts; the rest is mounted per run.
struct Jail {
    root: tempfile::TempDir,
}

impl Jail {
    fn new(bin: &Path) -> Jail {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::copy(bin, r.join("storbench")).unwrap();
        for d in ["etc", "proc", "dev", "tmp"] {
            std::fs::create_dir(r.join(d)).unwrap();
        }
        std::fs::write(
            r.join("etc/hosts"),
            format!("127.0.0.1 localhost\n127.0.0.1 {NAS}\n"),
        )
        .unwrap();
        for dev in ["null", "zero", "urandom"] {
            std::fs::write(r.join("dev").join(dev), "").unwrap();
        }
        Jail { root }
    }

    /// Runs `script` (lines of `storbench ARGS`, as a shell would split them) inside the
    /// jail, in a new mount namespace, with an empty environment.
    fn run(&self, script: &str) -> Run {
        self.run_with(script, &[])
    }

    /// [`Jail::run`] with `env` as the only environment beside `PATH`.
    fn run_with(&self, script: &str, env: &[(&str, &str)]) -> Run {
        let r = self.root.path().display();
        let body = script
            .lines()
            .map(|l| format!("chroot {r} /storbench {l}"))
            .collect::<Vec<_>>()
            .join(" && ");
        let setup = format!(
            "mount -t proc proc {r}/proc && mount -t tmpfs -o size=128m tmpfs {r}/tmp && \
             for d in null zero urandom; do mount --bind /dev/$d {r}/dev/$d || exit 1; done && {body}"
        );
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            &setup,
        ])
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .envs(env.iter().copied());
        Run::of(&mut c)
    }
}

fn jail_or_skip() -> bool {
    root_or_skip("chroot and mount namespaces")
        && ["unshare", "chroot", "readelf"].iter().all(|t| {
            let ok = have_tool(t);
            if !ok {
                eprintln!("SKIP: {t} not installed");
            }
            ok
        })
}

fn assert_quick_table(run: &Run) {
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    for test in ["SEQ1M Q8T1", "RND4K Q32T1", "RND4K Q1T1"] {
        assert!(run.stdout.contains(test), "{test} missing:\n{}", run.stdout);
    }
}

#[test]
fn static_binary_runs_quick_alone_in_an_empty_root() {
    if !jail_or_skip() {
        return;
    }
    let bin = static_binary();
    let elf = Command::new("readelf")
        .arg("-ld")
        .arg(&bin)
        .output()
        .unwrap();
    let elf = String::from_utf8_lossy(&elf.stdout);
    assert!(
        !elf.contains("INTERP") && !elf.contains("(NEEDED)"),
        "{elf}"
    );
    let jail = Jail::new(&bin);
    let run = jail.run(
        "quick /tmp --size 8m --runtime 200ms --db /tmp/results.db --label jailed\n\
         history --db /tmp/results.db",
    );
    assert_quick_table(&run);
    assert!(
        run.stdout.contains("jailed"),
        "history lacks the run:\n{}",
        run.stdout
    );
}

#[test]
fn static_binary_reaches_nfs_by_host_name_without_nss() {
    if !jail_or_skip() {
        return;
    }
    if let Some(why) = ganesha::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let bin = static_binary();
    let nfs = Ganesha::start().expect("ganesha starts");
    let url = nfs.url("").replace("127.0.0.1", NAS);
    assert!(url.contains(NAS), "{url}");
    let jail = Jail::new(&bin);
    let run = jail.run(&format!("quick {url} --size 8m --runtime 200ms --no-save"));
    assert_quick_table(&run);
    // A name nobody knows: one line and a failure (no resolv.conf: 127.0.0.1:53 is asked).
    let unknown = jail.run("quick nfs://nobody.storbench.test/export --size 8m --no-save");
    assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
    let line = unknown.one_error_line();
    assert!(line.contains("nobody.storbench.test"), "{line}");
}

#[test]
fn static_binary_reaches_smb_and_nbd_by_host_name_without_nss() {
    if !jail_or_skip() {
        return;
    }
    if let Some(why) = smbd::unavailable().or_else(nbdkit::unavailable) {
        eprintln!("SKIP: {why}");
        return;
    }
    let bin = static_binary();
    let jail = Jail::new(&bin);
    let smb = Smbd::start().expect("smbd starts");
    let url = format!("smb://{}@{NAS}:{}/share", smb.user(), smb.port);
    let run = jail.run_with(
        &format!("quick {url} --size 8m --runtime 200ms --no-save"),
        &[("STORBENCH_SMB_PASSWORD", smb.password())],
    );
    assert_quick_table(&run);
    let nbd = Nbdkit::memory("64M").expect("nbdkit starts");
    let url = nbd.uri().replace("127.0.0.1", NAS);
    assert!(url.contains(NAS), "{url}");
    let run = jail.run(&format!("quick {url} --size 8m --runtime 200ms --no-save"));
    assert_quick_table(&run);
    // Names nobody knows: one line each, naming the host, from the one resolver.
    for url in [
        "smb://nobody.storbench.test/share",
        "nbd://nobody.storbench.test/",
    ] {
        let unknown = jail.run_with(
            &format!("quick {url} --size 8m --no-save"),
            &[("STORBENCH_SMB_PASSWORD", "x")],
        );
        assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
        let line = unknown.one_error_line();
        assert!(
            line.contains("cannot resolve") && line.contains("nobody.storbench.test"),
            "{line}"
        );
    }
}

#[test]
fn deb_installs_binary_man_pages_and_completions() {
    if !jail_or_skip() {
        return;
    }
    if !have_tool("dpkg-deb") {
        eprintln!("SKIP: dpkg-deb not installed");
        return;
    }
    let bin = static_binary();
    let out = tempfile::tempdir().unwrap();
    let built = Command::new(workspace().join("packaging/deb.sh"))
        .arg(&bin)
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let deb = PathBuf::from(String::from_utf8_lossy(&built.stdout).trim());
    // Installed with dpkg into a scratch root with its own database.
    let root = tempfile::tempdir().unwrap();
    let admin = root.path().join("var/lib/dpkg");
    std::fs::create_dir_all(admin.join("info")).unwrap();
    std::fs::create_dir_all(admin.join("updates")).unwrap();
    std::fs::write(admin.join("status"), "").unwrap();
    let installed = Command::new("dpkg")
        .arg(format!("--root={}", root.path().display()))
        .args(["--force-script-chrootless", "--log=/dev/null", "-i"])
        .arg(&deb)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let r = root.path();
    for f in [
        "usr/bin/storbench",
        "usr/share/man/man1/storbench.1.gz",
        "usr/share/man/man1/storbench-quick.1.gz",
        "usr/share/man/man1/storbench-iscsi-discover.1.gz",
        "usr/share/bash-completion/completions/storbench",
        "usr/share/zsh/vendor-completions/_storbench",
        "usr/share/fish/vendor_completions.d/storbench.fish",
    ] {
        assert!(r.join(f).is_file(), "{f} not installed");
    }
    let version = Command::new(r.join("usr/bin/storbench"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("storbench "));
    // The drop-in fio: a relative link, so it works in any root.
    let link = r.join("usr/lib/storbench/bin/fio");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../../../bin/storbench")
    );
    let fio_version = Command::new(&link).arg("--version").output().unwrap();
    assert!(
        String::from_utf8_lossy(&fio_version.stdout).starts_with("fio-3.33 (storbench "),
        "{}",
        String::from_utf8_lossy(&fio_version.stdout)
    );
    if have_tool("man") {
        let page = Command::new("man")
            .arg("-l")
            .arg(r.join("usr/share/man/man1/storbench.1.gz"))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&page.stdout);
        assert!(
            page.status.success() && text.contains("storbench-quick"),
            "{text}"
        );
    }
}

/// The self-contained binary is built without MPI: started by a launcher as several
/// processes it refuses to run, since each would run the whole benchmark alone against the
/// same target; one process started by a launcher is just a run.
#[test]
fn a_build_without_mpi_refuses_a_launcher_start() {
    let bin = static_binary();
    let dir = tempfile::tempdir().unwrap();
    let fio = |size: &str| {
        let mut c = Command::new(&bin);
        c.current_dir(dir.path())
            .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
            .args([
                "fio",
                "--name=a",
                "--size=1m",
                "--ioengine=null",
                "--no-save",
            ])
            .env("OMPI_COMM_WORLD_SIZE", size);
        c
    };
    let run = Run::of(&mut fio("3"));
    assert_eq!(run.code, Some(1), "{run:?}");
    let line = run.one_error_line();
    assert!(line.contains("started by mpirun as 3 processes"), "{line}");
    assert!(line.contains("--features mpi"), "{line}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    let run = Run::of(&mut fio("1"));
    assert_eq!(run.code, Some(0), "{run:?}");
}

/// Under a real `mpirun`, every rank of a build without MPI refuses, and nothing is laid out.
#[test]
fn a_build_without_mpi_refuses_on_every_rank_of_a_real_mpirun() {
    require!(no_mpirun());
    let bin = static_binary();
    let dir = tempfile::tempdir().unwrap();
    let run = run_mpi(mpirun_of(&bin, 2, &[]).current_dir(dir.path()).args([
        "fio",
        "--name=a",
        "--size=1m",
        "--no-save",
    ]));
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("built without MPI"), "{}", run.stderr);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
