//! Granted directories on the tape: each directory the agent is granted, its files as the attempt
//! began (content-addressed like every long text of a tape, so a directory a thousand attempts
//! saw is stored once). A replay writes them into a scratch directory and grants that in the
//! directory's place, with the same access: the guest reads what it read, and what it writes
//! stays out of the user's directory.
//!
//! Bounded: past [`MAX_DIR_FILES`] files or [`MAX_DIR_BYTES`] bytes (or a name that is not
//! UTF-8, or a directory that cannot be read) a directory's files are not recorded, the snapshot
//! says why, and a replay grants the directory itself. Symbolic links are not followed. A tape's
//! paths are checked before anything is written: a path that is not a plain relative one (`..`,
//! absolute) is refused, whoever wrote the tape.

use super::bytes::KeptBytes;
use crate::policy::DirGrant;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Most files of one directory a tape keeps.
pub const MAX_DIR_FILES: usize = 4096;
/// Most bytes of one directory's files a tape keeps.
pub const MAX_DIR_BYTES: u64 = 16 << 20;

/// One granted directory as the attempt began.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirSnapshot {
    /// Where the guest sees it.
    pub guest_path: String,
    /// Its files: the path relative to the directory (`/`-separated) and the contents.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, KeptBytes>,
    /// Its sub-directories (relative), empty ones included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<String>,
    /// Why its files are not on the tape; a replay then grants the directory itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_recorded: Option<String>,
}

impl DirSnapshot {
    /// The files of `grant`'s directory now.
    pub fn of(grant: &DirGrant) -> Self {
        let mut snapshot = Self {
            guest_path: grant.guest_path.clone(),
            ..Self::default()
        };
        if let Err(why) = snapshot.read(&grant.host_path) {
            snapshot.files.clear();
            snapshot.dirs.clear();
            snapshot.not_recorded = Some(why);
        }
        snapshot
    }

    fn read(&mut self, root: &Path) -> Result<(), String> {
        let mut pending = vec![(root.to_path_buf(), String::new())];
        let mut bytes = 0u64;
        while let Some((dir, relative)) = pending.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
                let name = entry.file_name();
                let name = name
                    .to_str()
                    .ok_or_else(|| format!("a name in {} is not UTF-8", dir.display()))?;
                let path = if relative.is_empty() {
                    name.to_owned()
                } else {
                    format!("{relative}/{name}")
                };
                let kind = entry.file_type().map_err(|e| format!("{path}: {e}"))?;
                if kind.is_dir() {
                    self.dirs.push(path.clone());
                    pending.push((entry.path(), path));
                } else if kind.is_file() {
                    if self.files.len() >= MAX_DIR_FILES {
                        return Err(format!("more than {MAX_DIR_FILES} files"));
                    }
                    let contents = std::fs::read(entry.path()).map_err(|e| format!("{path}: {e}"))?;
                    bytes += contents.len() as u64;
                    if bytes > MAX_DIR_BYTES {
                        return Err(format!("more than {} MiB of files", MAX_DIR_BYTES >> 20));
                    }
                    self.files.insert(path, KeptBytes::of(&contents));
                }
            }
        }
        self.dirs.sort();
        Ok(())
    }

    /// Writes the files into `into` (created), refusing a path that would leave it.
    fn write(&self, into: &Path) -> io::Result<()> {
        std::fs::create_dir_all(into)?;
        for dir in &self.dirs {
            std::fs::create_dir_all(into.join(plain_relative(dir)?))?;
        }
        for (path, contents) in &self.files {
            let path = into.join(plain_relative(path)?);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, contents.bytes())?;
        }
        Ok(())
    }
}

/// `path` as a relative path of plain names only.
fn plain_relative(path: &str) -> io::Result<PathBuf> {
    let relative = Path::new(path);
    let plain = !path.is_empty() && relative.components().all(|c| matches!(c, Component::Normal(_)));
    match plain {
        true => Ok(relative.to_path_buf()),
        false => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the recording names a file outside its directory: {path:?}"),
        )),
    }
}

/// The grants a replay gives: each of `grants` whose directory the tape recorded, pointed at a
/// copy of it written under `scratch`; the others as they are. A grant the recorded attempt did
/// not have, or one it had that `grants` lacks, is an error: the guest would see another tree.
pub fn replay_grants(snapshots: &[DirSnapshot], grants: &[DirGrant], scratch: &Path) -> Result<Vec<DirGrant>, String> {
    let guest_paths = |paths: Vec<&str>| paths.join(", ");
    let granted: Vec<&str> = grants.iter().map(|g| g.guest_path.as_str()).collect();
    let recorded: Vec<&str> = snapshots.iter().map(|s| s.guest_path.as_str()).collect();
    if granted != recorded {
        return Err(format!(
            "the directories granted now ({}) are not the ones the recorded attempt was granted ({}): grant the same",
            guest_paths(granted),
            guest_paths(recorded)
        ));
    }
    grants
        .iter()
        .zip(snapshots)
        .enumerate()
        .map(|(index, (grant, snapshot))| {
            if snapshot.not_recorded.is_some() {
                return Ok(grant.clone());
            }
            let copy = scratch.join(index.to_string());
            snapshot
                .write(&copy)
                .map_err(|e| format!("cannot write the recorded directory {}: {e}", snapshot.guest_path))?;
            Ok(DirGrant {
                host_path: copy,
                ..grant.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DirAccess;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agl-dirs-{tag}-{}-{}", std::process::id(), fastrand()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn fastrand() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()))
    }

    fn grant(host: &Path) -> DirGrant {
        DirGrant {
            host_path: host.to_path_buf(),
            guest_path: "/data".into(),
            access: DirAccess::ReadOnly,
        }
    }

    #[test]
    fn a_directory_is_kept_as_it_was_and_written_back_elsewhere() {
        let original = scratch("original");
        std::fs::create_dir_all(original.join("sub/empty")).unwrap();
        std::fs::write(original.join("a.txt"), "alpha").unwrap();
        std::fs::write(original.join("sub/b.bin"), [0xff, 0x00]).unwrap();
        let snapshot = DirSnapshot::of(&grant(&original));
        assert_eq!(snapshot.not_recorded, None);
        assert_eq!(snapshot.files.len(), 2);
        std::fs::write(original.join("a.txt"), "changed since").unwrap();

        let replay = scratch("replay");
        let grants = replay_grants(&[snapshot], &[grant(&original)], &replay).unwrap();
        let copy = &grants[0].host_path;
        assert_ne!(copy, &original);
        assert_eq!(std::fs::read_to_string(copy.join("a.txt")).unwrap(), "alpha");
        assert_eq!(std::fs::read(copy.join("sub/b.bin")).unwrap(), [0xff, 0x00]);
        assert!(copy.join("sub/empty").is_dir());
        let _ = std::fs::remove_dir_all(original);
        let _ = std::fs::remove_dir_all(replay);
    }

    #[test]
    fn a_tape_cannot_write_outside_the_scratch_directory() {
        let replay = scratch("hostile");
        for path in ["../escaped", "/etc/escaped", "a/../../escaped", ""] {
            let snapshot = DirSnapshot {
                guest_path: "/data".into(),
                files: [(path.to_owned(), KeptBytes::of(b"x"))].into(),
                ..DirSnapshot::default()
            };
            let refused = replay_grants(&[snapshot], &[grant(Path::new("/nowhere"))], &replay);
            assert!(refused.is_err(), "{path:?} was written");
        }
        assert!(!replay.join("escaped").exists() && !replay.parent().unwrap().join("escaped").exists());
        let _ = std::fs::remove_dir_all(replay);
    }

    #[test]
    fn other_grants_than_the_recorded_ones_are_refused() {
        let snapshot = DirSnapshot {
            guest_path: "/other".into(),
            ..DirSnapshot::default()
        };
        let refused = replay_grants(&[snapshot], &[grant(Path::new("/x"))], Path::new("/tmp"));
        assert!(refused.unwrap_err().contains("/other"));
    }
}
