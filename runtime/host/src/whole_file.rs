//! A file written whole or not at all (`agl-host export --out`): the bytes go to a new temporary
//! file beside it, renamed over it once all are written and synced; dropped before that (an
//! error, a panic), the temporary file is removed and the old file, if any, is left as it was.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it appears at its path on [`WholeFile::finish`] only.
pub struct WholeFile {
    target: PathBuf,
    temporary: PathBuf,
    file: BufWriter<File>,
    finished: bool,
}

impl WholeFile {
    /// Starts writing `target`: creates a hidden temporary file in its folder (which must exist).
    pub fn create(target: &Path) -> io::Result<Self> {
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        if target.is_dir() {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "a folder"));
        }
        let folder = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut tries = 0;
        loop {
            let temporary = folder.join(format!(".{}.{:08x}.tmp", name.to_string_lossy(), fastrand::u32(..)));
            match OpenOptions::new().write(true).create_new(true).open(&temporary) {
                Ok(file) => {
                    return Ok(Self {
                        target: target.to_owned(),
                        temporary,
                        file: BufWriter::new(file),
                        finished: false,
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(error) => return Err(error),
            }
        }
    }

    /// Writes what is buffered, syncs it to disk and renames the file into place.
    pub fn finish(mut self) -> io::Result<()> {
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(&self.temporary, &self.target)?;
        self.finished = true;
        Ok(())
    }
}

impl Write for WholeFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agl-whole-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_file_appears_whole_when_finished() {
        let dir = folder("finished");
        let target = dir.join("out.jsonl");
        std::fs::write(&target, "old\n").expect("an old file");
        let mut file = WholeFile::create(&target).expect("created");
        file.write_all(b"{\"a\":1}\n").expect("written");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "old\n", "not yet");
        file.finish().expect("finished");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "{\"a\":1}\n");
        assert_eq!(entries(&dir), ["out.jsonl"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_dropped_unfinished_leaves_nothing_and_the_old_file_as_it_was() {
        let dir = folder("dropped");
        let target = dir.join("out.jsonl");
        std::fs::write(&target, "old\n").expect("an old file");
        let mut file = WholeFile::create(&target).expect("created");
        file.write_all(b"half a li").expect("written");
        drop(file);
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "old\n");
        assert_eq!(entries(&dir), ["out.jsonl"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_or_a_missing_folder_is_refused() {
        let dir = folder("refused");
        assert!(WholeFile::create(&dir).is_err());
        assert!(WholeFile::create(&dir.join("missing/out.jsonl")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
