//! Batches the scrubber found damaged: bytes of a closed segment whose CRC or header no
//! longer checks out. They are kept in `<partition dir>/damaged-batches`, so a restart
//! still refuses them, until an operator chooses what to do (`kafkalite log scrub`):
//! serve around them (`skip`) or cut the log there (`truncate`).
//!
//! One line per damaged range: `<segment base> <segment size> <from> <to> <first offset>
//! <fail|skip> <why>`. A mark applies only while its segment still has the size it had
//! when marked: a segment that compaction or truncation rewrote is no longer the one that
//! was damaged.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::storage::files::write_atomically;

pub const DAMAGE_FILE: &str = "damaged-batches";

/// What reads do at a damaged range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageAction {
    /// Fetches of the offsets it holds answer CORRUPT_MESSAGE (the default: a consumer
    /// never skips data silently).
    Fail,
    /// Fetches leave it out, as compaction leaves an offset gap.
    Skip,
}

impl DamageAction {
    fn name(self) -> &'static str {
        match self {
            DamageAction::Fail => "fail",
            DamageAction::Skip => "skip",
        }
    }
}

/// A damaged byte range of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Base offset of the segment.
    pub segment: i64,
    /// The segment's size when the damage was marked.
    pub segment_size: u64,
    /// Byte range: `from` is where a batch should start, `to` where the next sound batch
    /// starts (or the segment's end).
    pub from: u64,
    pub to: u64,
    /// The first offset the damaged bytes may hold.
    pub first_offset: i64,
    pub action: DamageAction,
    pub why: String,
}

impl Damage {
    fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.segment,
            self.segment_size,
            self.from,
            self.to,
            self.first_offset,
            self.action.name(),
            self.why.replace('\n', " ")
        )
    }

    fn parse(line: &str) -> Option<Damage> {
        let mut fields = line.splitn(7, ' ');
        let mut number = || fields.next()?.parse::<i64>().ok();
        let (segment, segment_size, from, to, first_offset) =
            (number()?, number()?, number()?, number()?, number()?);
        let action = match fields.next()? {
            "fail" => DamageAction::Fail,
            "skip" => DamageAction::Skip,
            _ => return None,
        };
        let damage = Damage {
            segment,
            segment_size: u64::try_from(segment_size).ok()?,
            from: u64::try_from(from).ok()?,
            to: u64::try_from(to).ok()?,
            first_offset,
            action,
            why: fields.next().unwrap_or("").to_string(),
        };
        (damage.from < damage.to && damage.to <= damage.segment_size).then_some(damage)
    }
}

/// Every damaged range of one partition, sorted by segment and position.
pub struct DamageLog {
    path: PathBuf,
    entries: Vec<Damage>,
}

impl DamageLog {
    /// The marks in `dir` (none when the file is absent; a line that does not parse is
    /// dropped, never trusted).
    pub fn load(dir: &Path) -> DamageLog {
        let path = dir.join(DAMAGE_FILE);
        let mut entries: Vec<Damage> = fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter_map(Damage::parse)
            .collect();
        entries.sort_by_key(|d| (d.segment, d.from));
        entries.dedup_by_key(|d| (d.segment, d.from));
        DamageLog { path, entries }
    }

    #[must_use]
    pub fn all(&self) -> &[Damage] {
        &self.entries
    }

    /// The marks of the segment with base offset `segment`.
    #[must_use]
    pub fn of_segment(&self, segment: i64) -> &[Damage] {
        let start = self.entries.partition_point(|d| d.segment < segment);
        let end = self.entries.partition_point(|d| d.segment <= segment);
        &self.entries[start..end]
    }

    /// Add what is not marked yet; returns the new marks.
    pub fn record(&mut self, found: Vec<Damage>) -> io::Result<Vec<Damage>> {
        let new: Vec<Damage> = found
            .into_iter()
            .filter(|d| {
                !self.entries.iter().any(|e| {
                    (e.segment, e.segment_size, e.from) == (d.segment, d.segment_size, d.from)
                })
            })
            .collect();
        if !new.is_empty() {
            self.entries.extend(new.iter().cloned());
            self.entries.sort_by_key(|d| (d.segment, d.from));
            self.save()?;
        }
        Ok(new)
    }

    /// Keep only the marks of segments that still exist with the size they had.
    pub fn retain_segments(&mut self, segments: &[(i64, u64)]) -> io::Result<()> {
        let before = self.entries.len();
        self.entries
            .retain(|d| segments.contains(&(d.segment, d.segment_size)));
        if self.entries.len() != before {
            self.save()?;
        }
        Ok(())
    }

    /// Set every mark's action; returns how many changed.
    pub fn set_action(&mut self, action: DamageAction) -> io::Result<usize> {
        let mut changed = 0;
        for d in &mut self.entries {
            if d.action != action {
                d.action = action;
                changed += 1;
            }
        }
        if changed > 0 {
            self.save()?;
        }
        Ok(changed)
    }

    fn save(&self) -> io::Result<()> {
        if self.entries.is_empty() {
            return crate::storage::files::remove_if_exists(&self.path);
        }
        let text: String = self.entries.iter().map(|d| d.line() + "\n").collect();
        write_atomically(&self.path, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn damage(segment: i64, from: u64) -> Damage {
        Damage {
            segment,
            segment_size: 1000,
            from,
            to: from + 100,
            first_offset: 7,
            action: DamageAction::Fail,
            why: "CRC mismatch: stored 1, computed 2".into(),
        }
    }

    #[test]
    fn marks_survive_a_reload_and_follow_their_segment() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = DamageLog::load(dir.path());
        assert!(log.all().is_empty());
        let new = log.record(vec![damage(50, 200), damage(0, 300)]).unwrap();
        assert_eq!(new.len(), 2);
        assert!(
            log.record(vec![damage(0, 300)]).unwrap().is_empty(),
            "known already"
        );
        assert_eq!(log.set_action(DamageAction::Skip).unwrap(), 2);
        let reloaded = DamageLog::load(dir.path());
        assert_eq!(reloaded.all(), log.all());
        assert_eq!(reloaded.of_segment(0)[0].from, 300);
        assert_eq!(reloaded.of_segment(0)[0].action, DamageAction::Skip);
        assert_eq!(
            reloaded.of_segment(0)[0].why,
            "CRC mismatch: stored 1, computed 2"
        );
        assert!(reloaded.of_segment(10).is_empty());
        // Segment 50 was rewritten (another size): its mark goes.
        log.retain_segments(&[(0, 1000), (50, 900)]).unwrap();
        assert_eq!(DamageLog::load(dir.path()).all().len(), 1);
        log.retain_segments(&[]).unwrap();
        assert!(!dir.path().join(DAMAGE_FILE).exists());
    }

    #[test]
    fn a_garbled_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(DAMAGE_FILE),
            "0 1000 10 20 0 fail ok\nnot a mark\n0 1000 30 20 0 fail to before from\n",
        )
        .unwrap();
        let log = DamageLog::load(dir.path());
        assert_eq!(log.all().len(), 1);
        assert_eq!(log.all()[0].from, 10);
    }
}
