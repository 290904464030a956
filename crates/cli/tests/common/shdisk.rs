//! A 1 MiB disk served by nbdkit's `sh` plugin from a script the test writes: faults no
//! real disk makes on demand (an IO error, a lost write, a trim it ignores), for both tools
//! on the nbd engine.

use std::path::Path;

use storbench_testkit::nbdkit::{Listen, Nbdkit};

/// What the script does besides reading and writing its image.
#[derive(Default)]
pub struct Script<'a> {
    /// More callbacks that only answer "yes" (`can_trim|trim` for a disk that takes trims
    /// and ignores them).
    pub also_can: &'a str,
    /// Shell run before a read (`$3` length, `$4` offset); it may end the callback.
    pub before_read: &'a str,
    /// Shell run before a write, the same way (`cat >/dev/null; exit 0` loses it).
    pub before_write: &'a str,
}

/// The disk: its image and script in `dir`, served over TCP until the guard is dropped.
pub fn start(dir: &Path, s: Script) -> Nbdkit {
    let image = dir.join("disk.img");
    std::fs::File::create(&image)
        .and_then(|f| f.set_len(1 << 20))
        .unwrap();
    let img = image.display();
    let can = format!("can_write|can_flush|flush{}", s.also_can);
    let script = format!(
        "#!/bin/sh\n\
         case \"$1\" in\n\
         get_size) echo 1048576 ;;\n\
         {can}) exit 0 ;;\n\
         pread) {}\n\
           dd if={img} skip=$4 count=$3 iflag=skip_bytes,count_bytes status=none ;;\n\
         pwrite) {}\n\
           dd of={img} seek=$4 oflag=seek_bytes conv=notrunc status=none ;;\n\
         *) exit 2 ;;\n\
         esac\n",
        s.before_read, s.before_write
    );
    let path = dir.join("disk.sh");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Nbdkit::start(Listen::Tcp, &[], &["sh", &path.display().to_string()]).unwrap()
}
