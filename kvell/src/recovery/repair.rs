//! What recovery writes before the engine opens: a tombstone over every slot that
//! must not come back (older copies left by a crash between a move's two writes,
//! never-written slots below a slab's end left by a lost append, torn writes), so a
//! later delete cannot uncover an older copy and a cleanly closed slab never has a
//! never-written slot below its end. The slots are free afterwards.

use crate::io::{AlignedBuf, Backend, PAGE};
use crate::slab::{self, Format, Loc, NO_NEXT, Slab};
use kvapi::{Error, Result};

/// Writes a tombstone over each slot of `locs`, with timestamps counted on from
/// `max_ts`, adds the slots to `frees` (by class), and syncs every slab if any was
/// written.
pub(super) fn bury(
    io: &mut dyn Backend,
    slabs: &[Slab],
    locs: impl Iterator<Item = Loc>,
    fmt: Format,
    max_ts: &mut u64,
    frees: &mut [Vec<u64>],
) -> Result<()> {
    let mut repairs = 0u64;
    for loc in locs {
        repairs += 1;
        *max_ts += 1;
        let class = loc.class();
        let s = &slabs[class];
        let unit = loc.unit();
        let mut page = AlignedBuf::new(PAGE);
        let off = loc.offset_in_unit();
        let at = unit.file_offset();
        let ctx = |e| Error::io(format!("repairing {} at offset {at}", s.path.display()), e);
        if !slab::is_large(class) {
            io.read(s.file, at, &mut page).map_err(ctx)?;
        }
        let size = if slab::is_large(class) {
            PAGE
        } else {
            slab::SMALL[class]
        };
        fmt.write_tomb(&mut page[off..off + size], *max_ts, NO_NEXT);
        io.write(s.file, at, &page).map_err(ctx)?;
        frees[class].push(loc.slot());
    }
    if repairs > 0 {
        for s in slabs {
            io.sync(s.file)
                .map_err(|e| Error::io(format!("syncing {}", s.path.display()), e))?;
        }
    }
    Ok(())
}
