//! On-disk constants, transaction ids and the WAL header (two copies: block 0 of the
//! WAL file and the block after the log).
//! Every integer is little-endian. Diagrams: baselines/wal/DESIGN.md.

/// WAL block, meta page and data block size.
pub const BLOCK: usize = 4096;

/// Log positions and transaction ids count units of this many bytes: a transaction
/// starts at a multiple of it, anywhere in a block (transactions of one group-commit
/// batch are packed; DESIGN.md, "Packing").
pub const UNIT: usize = 16;
/// Units in a block.
pub const UNITS_PER_BLOCK: u64 = (BLOCK / UNIT) as u64;

/// The first unit of the block after the one holding `pos` (`pos` itself if it
/// starts a block).
pub fn ceil_block(pos: u64) -> u64 {
    pos.div_ceil(UNITS_PER_BLOCK) * UNITS_PER_BLOCK
}

/// The first unit of the block holding `pos`.
pub fn floor_block(pos: u64) -> u64 {
    pos / UNITS_PER_BLOCK * UNITS_PER_BLOCK
}

pub const WAL_MAGIC: u32 = 0x4841_4c57; // the bytes "WLAH" read little-endian
/// 3 since 2026-12-03: the transactions of a group commit packed, positions in
/// 16-byte units. 2: two header copies, each transaction in whole blocks of its
/// own. 1: one header copy.
pub const WAL_VERSION: u32 = 3;
pub const WAL_HEADER_LEN: usize = 56;

/// The `N` bytes at `at` (panics, like indexing, if they are not there).
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

pub fn rd_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes_at(b, at))
}
pub fn rd_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes_at(b, at))
}
pub fn rd_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes_at(b, at))
}
pub fn wr_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn wr_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn wr_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A transaction id: `(lap sequence << 32) | offset in the log, in units`.
///
/// Inside the engine positions are kept as a linear unit count `abs = seq * units +
/// offset` (it never wraps in practice), `units` being the log's size in units; ids
/// are what goes to disk.
pub fn id_of(abs: u64, log_units: u64) -> u64 {
    ((abs / log_units) << 32) | (abs % log_units)
}

/// The linear position of an id.
pub fn abs_of(id: u64, log_units: u64) -> u64 {
    (id >> 32) * log_units + (id & 0xffff_ffff)
}

/// Compares two ids across a wrap of the 32-bit lap sequence (serial number
/// arithmetic on the sequence, then the offset).
pub fn id_cmp(a: u64, b: u64) -> std::cmp::Ordering {
    let (sa, sb) = ((a >> 32) as u32, (b >> 32) as u32);
    if sa != sb {
        return (sa.wrapping_sub(sb) as i32).cmp(&0);
    }
    (a as u32).cmp(&(b as u32))
}

/// The next id after a transaction of `units` units starting at `id`.
pub fn id_next(id: u64, units: u64, log_units: u64) -> u64 {
    let seq = (id >> 32) as u32;
    let off = (id & 0xffff_ffff) + units;
    if off >= log_units {
        ((seq.wrapping_add(1) as u64) << 32) | (off - log_units)
    } else {
        ((seq as u64) << 32) | off
    }
}

/// The WAL header. It is written in turn to two copies, block 0 of the WAL file
/// (odd `seq`) and the block after the log (even `seq`), each write synced before
/// the next, so a write torn by a crash leaves the other copy, the previous header,
/// whole; open takes the valid copy with the larger `seq` ([`header_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalHeader {
    /// Random at creation; the meta file carries the same value.
    pub pool_id: u32,
    /// Bumped at every open; every transaction carries it, so blocks left by an earlier
    /// open are never mistaken for new ones.
    pub generation: u32,
    /// Blocks in the circular log (the file has two more: the header copies).
    pub log_blocks: u32,
    /// Replay starts here: the first transaction not in the meta file.
    pub ckpt_id: u64,
    /// The id following the last transaction known complete (WAL and data durable)
    /// when the header was written. A transaction before it that fails its checks is
    /// corruption, not the end of the log.
    pub commit_id: u64,
    /// A checkpoint is writing meta pages: until the next header, a meta page may be
    /// torn (and fail its CRC); replay rewrites it.
    pub ckpt_pending: bool,
    /// Header writes since creation (1 for the first): which copy is newer, and
    /// where the next goes.
    pub seq: u64,
}

/// The byte offset of the header copy that write `seq` goes to, in a WAL of
/// `log_blocks` log blocks: block 0 for odd `seq`, block `log_blocks + 1` for even.
pub fn header_at(seq: u64, log_blocks: u64) -> u64 {
    if seq % 2 == 1 {
        0
    } else {
        (log_blocks + 1) * BLOCK as u64
    }
}

impl WalHeader {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK];
        wr_u32(&mut b, 0, WAL_MAGIC);
        wr_u32(&mut b, 4, WAL_VERSION);
        wr_u32(&mut b, 8, self.pool_id);
        wr_u32(&mut b, 12, self.generation);
        wr_u32(&mut b, 16, BLOCK as u32);
        wr_u32(&mut b, 20, self.log_blocks);
        wr_u64(&mut b, 24, self.ckpt_id);
        wr_u64(&mut b, 32, self.commit_id);
        wr_u32(&mut b, 40, self.ckpt_pending as u32);
        wr_u64(&mut b, 44, self.seq);
        let crc = crc32fast::hash(&b[..52]);
        wr_u32(&mut b, 52, crc);
        b
    }

    /// `Ok(None)` for an all-zero block (a WAL file never initialised).
    pub fn decode(b: &[u8]) -> Result<Option<WalHeader>, String> {
        if b[..WAL_HEADER_LEN].iter().all(|&x| x == 0) {
            return Ok(None);
        }
        if rd_u32(b, 0) != WAL_MAGIC {
            return Err("bad WAL header magic".into());
        }
        if rd_u32(b, 4) == 1 && crc32fast::hash(&b[..44]) == rd_u32(b, 44) {
            return Err("WAL format version 1 (one header copy, written before \
                        2026-12-03): this build reads and writes version 2 (two header \
                        copies) and converts nothing; recreate the database"
                .into());
        }
        if crc32fast::hash(&b[..52]) != rd_u32(b, 52) {
            return Err("WAL header checksum mismatch".into());
        }
        if rd_u32(b, 4) == 2 {
            return Err(
                "WAL format version 2 (each transaction in whole blocks of its \
                        own, written before 2026-12-03): this build reads and writes \
                        version 3 (transactions packed) and converts nothing; recreate \
                        the database"
                    .into(),
            );
        }
        if rd_u32(b, 4) != WAL_VERSION {
            return Err(format!("unsupported WAL version {}", rd_u32(b, 4)));
        }
        if rd_u32(b, 16) != BLOCK as u32 {
            return Err(format!("unsupported WAL block size {}", rd_u32(b, 16)));
        }
        let h = WalHeader {
            pool_id: rd_u32(b, 8),
            generation: rd_u32(b, 12),
            log_blocks: rd_u32(b, 20),
            ckpt_id: rd_u64(b, 24),
            commit_id: rd_u64(b, 32),
            ckpt_pending: rd_u32(b, 40) != 0,
            seq: rd_u64(b, 44),
        };
        if h.log_blocks < 16 {
            return Err(format!("WAL header names {} log blocks", h.log_blocks));
        }
        Ok(Some(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn ids_wrap_and_compare() {
        let n = 100;
        let id = id_of(250, n);
        assert_eq!(id, (2 << 32) | 50);
        assert_eq!(abs_of(id, n), 250);
        assert_eq!(id_next(id, 60, n), (3 << 32) | 10);
        assert_eq!(id_cmp((3 << 32) | 10, (2 << 32) | 99), Ordering::Greater);
        // the lap sequence wraps
        let last = (u32::MAX as u64) << 32 | 99;
        let next = id_next(last, 1, n);
        assert_eq!(next, 0);
        assert_eq!(id_cmp(next, last), Ordering::Greater);
        assert_eq!(id_cmp(last, next), Ordering::Less);
    }

    #[test]
    fn header_round_trip_and_checks() {
        let h = WalHeader {
            pool_id: 7,
            generation: 3,
            log_blocks: 64,
            ckpt_id: 1 << 32,
            commit_id: (1 << 32) | 5,
            ckpt_pending: true,
            seq: 9,
        };
        let mut b = h.encode();
        assert_eq!(WalHeader::decode(&b).unwrap(), Some(h));
        b[30] ^= 1;
        assert!(WalHeader::decode(&b).is_err());
        assert_eq!(WalHeader::decode(&vec![0u8; BLOCK]).unwrap(), None);
        // the copies alternate: odd writes to block 0, even after the log
        assert_eq!(
            (header_at(1, 64), header_at(2, 64), header_at(3, 64)),
            (0, 65 * 4096, 0)
        );
        // a version 1 header (one copy, CRC at 44) is refused with what to do
        let mut v1 = vec![0u8; BLOCK];
        wr_u32(&mut v1, 0, WAL_MAGIC);
        wr_u32(&mut v1, 4, 1);
        wr_u32(&mut v1, 20, 64);
        let crc = crc32fast::hash(&v1[..44]);
        wr_u32(&mut v1, 44, crc);
        let e = WalHeader::decode(&v1).unwrap_err();
        assert!(e.contains("version 1") && e.contains("recreate"), "{e}");
        // so is a version 2 header (transactions in whole blocks)
        let mut v2 = h.encode();
        wr_u32(&mut v2, 4, 2);
        let crc = crc32fast::hash(&v2[..52]);
        wr_u32(&mut v2, 52, crc);
        let e = WalHeader::decode(&v2).unwrap_err();
        assert!(e.contains("version 2") && e.contains("recreate"), "{e}");
    }

    #[test]
    fn units_round_to_blocks() {
        assert_eq!(UNITS_PER_BLOCK, 256);
        assert_eq!(
            (
                ceil_block(0),
                ceil_block(1),
                ceil_block(256),
                ceil_block(257)
            ),
            (0, 256, 256, 512)
        );
        assert_eq!(
            (
                floor_block(0),
                floor_block(255),
                floor_block(256),
                floor_block(511)
            ),
            (0, 0, 256, 256)
        );
    }
}
