//! Transactions: redo entries, their encoding into the log and their decoding.
//!
//! A transaction starts at a multiple of [`UNIT`] bytes anywhere in a block, with a
//! 32-byte header; every block boundary it crosses is followed by the same header
//! again (only `block_index` differs, counting the boundaries crossed). After the
//! first header come the entries (24 bytes each, never straddling a block), then the
//! payload (the bytes of the copy entries, in entry order, flowing across blocks and
//! skipping the headers), then an 8-byte tail holding the CRC32 of every byte of the
//! transaction before it. The transactions of one group-commit batch lie back to
//! back (each at the next unit), and the batch's last block is padded with zeros.
//! A transaction starts in the next block instead when fewer than [`MIN_ROOM`] bytes
//! are left in the current one (the gap is zeros too).

use crate::format::{BLOCK, UNIT, rd_u16, rd_u32, rd_u64, wr_u16, wr_u32, wr_u64};

pub const TX_MAGIC: u32 = 0x3158_5457; // "WTX1"
pub const TX_HEADER: usize = 32;
pub const ENTRY_LEN: usize = 24;
pub const TAIL_LEN: usize = 8;
/// A transaction starts in a block only if this many bytes are left in it (its
/// header, one entry and its tail); so it starts at an offset of at most
/// [`MAX_START`].
pub const MIN_ROOM: usize = TX_HEADER + ENTRY_LEN + TAIL_LEN;
pub const MAX_START: usize = BLOCK - MIN_ROOM;

/// The kinds of redo entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// Copy `len` payload bytes to image offset `off`.
    Copy = 1,
    /// Store the low `len` (1, 2 or 4) bytes of `data` at `off`.
    Assign = 2,
    /// Set `len` bytes at `off` to `data as u8`.
    Memset = 3,
    /// Set bits `data .. data + len` of the bitmap at `off`.
    SetBits = 4,
    /// Clear bits `data .. data + len` of the bitmap at `off`.
    ClrBits = 5,
    /// The data file bytes `off .. off + len` have CRC32 `data` (a large value written
    /// in parallel with this transaction); changes nothing in the image.
    Csum = 6,
}

impl Kind {
    fn from_u16(v: u16) -> Option<Kind> {
        Some(match v {
            1 => Kind::Copy,
            2 => Kind::Assign,
            3 => Kind::Memset,
            4 => Kind::SetBits,
            5 => Kind::ClrBits,
            6 => Kind::Csum,
            _ => return None,
        })
    }
}

/// One redo entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub off: u64,
    pub len: u32,
    pub data: u32,
}

/// The header at the start of a transaction, repeated after every block boundary
/// it crosses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxHeader {
    pub generation: u32,
    pub id: u64,
    pub entries: u32,
    pub payload: u32,
    /// 0 at the transaction's start, `k` after the `k`-th block boundary.
    pub block_index: u32,
    /// How far back the log was complete when this transaction was reserved: 0 is
    /// unknown (a log without syncs, or an older log); `k > 0` says every transaction
    /// before `start - (k - 1)` (in units) was complete (written, synced and its data
    /// durable, so acknowledged or acknowledgeable). Replay uses it to tell a
    /// transaction damaged after its acknowledgement from the torn tail of a crash.
    pub complete_back: u32,
}

impl TxHeader {
    /// The header at the start of `b` (at least [`TX_HEADER`] bytes), if its magic
    /// is there.
    pub fn decode(b: &[u8]) -> Option<TxHeader> {
        if b.len() < TX_HEADER || rd_u32(b, 0) != TX_MAGIC {
            return None;
        }
        Some(TxHeader {
            generation: rd_u32(b, 4),
            id: rd_u64(b, 8),
            entries: rd_u32(b, 16),
            payload: rd_u32(b, 20),
            block_index: rd_u32(b, 24),
            complete_back: rd_u32(b, 28),
        })
    }

    fn encode(&self, b: &mut [u8]) {
        wr_u32(b, 0, TX_MAGIC);
        wr_u32(b, 4, self.generation);
        wr_u64(b, 8, self.id);
        wr_u32(b, 16, self.entries);
        wr_u32(b, 20, self.payload);
        wr_u32(b, 24, self.block_index);
        wr_u32(b, 28, self.complete_back);
    }

    /// The position before which every transaction was complete when this one (at
    /// `start`) was reserved, if it says.
    pub fn complete_at_reserve(&self, start: u64) -> Option<u64> {
        (self.complete_back > 0).then(|| start.saturating_sub(self.complete_back as u64 - 1))
    }
}

/// Places items in the stream of a transaction that starts `off` bytes into a
/// block: positions count from that block's start.
struct Cursor {
    pos: usize,
}

impl Cursor {
    fn new(off: usize) -> Cursor {
        Cursor {
            pos: off + TX_HEADER,
        }
    }
    fn skip_header(&mut self) {
        if self.pos.is_multiple_of(BLOCK) {
            self.pos += TX_HEADER;
        }
    }
    /// Places an item of `n` bytes that must not straddle a block.
    fn whole(&mut self, n: usize) -> usize {
        self.skip_header();
        if self.pos % BLOCK + n > BLOCK {
            self.pos = (self.pos / BLOCK + 1) * BLOCK + TX_HEADER;
        }
        let p = self.pos;
        self.pos += n;
        p
    }
    /// Places `n` bytes that may straddle blocks: calls `f(stream position, range of
    /// the item)` for each piece.
    fn stream(&mut self, n: usize, mut f: impl FnMut(usize, std::ops::Range<usize>)) {
        let mut done = 0;
        while done < n {
            self.skip_header();
            let k = (BLOCK - self.pos % BLOCK).min(n - done);
            f(self.pos, done..done + k);
            self.pos += k;
            done += k;
        }
    }
}

/// Where everything goes for a transaction of `entries` entries and `payload` bytes
/// starting `off` bytes into a block; positions from the transaction's start.
struct Layout {
    entry_pos: Vec<usize>,
    pieces: Vec<(usize, std::ops::Range<usize>)>,
    tail: usize,
    /// Bytes from the start to the end of the tail.
    len: usize,
}

fn layout(entries: usize, payload: usize, off: usize) -> Layout {
    let mut c = Cursor::new(off);
    let entry_pos = (0..entries).map(|_| c.whole(ENTRY_LEN) - off).collect();
    let mut pieces = Vec::new();
    c.stream(payload, |p, r| pieces.push((p - off, r)));
    let tail = c.whole(TAIL_LEN);
    Layout {
        entry_pos,
        pieces,
        tail: tail - off,
        len: tail + TAIL_LEN - off,
    }
}

/// The bytes of a transaction of `entries` entries and `payload` payload bytes that
/// starts `off` bytes into a block.
pub fn size_for(entries: usize, payload: usize, off: usize) -> usize {
    let mut c = Cursor::new(off);
    for _ in 0..entries {
        c.whole(ENTRY_LEN);
    }
    c.stream(payload, |_, _| {});
    c.whole(TAIL_LEN) + TAIL_LEN - off
}

/// Blocks a transaction of `entries` entries and `payload` payload bytes takes when
/// it starts a block. It never ends further past the block boundary before it when
/// it starts later in a block (what it gains by starting later it spends on the
/// headers of the boundaries it crosses, at most one more), so this is what a
/// writer is admitted for.
pub fn blocks_for(entries: usize, payload: usize) -> usize {
    size_for(entries, payload, 0).div_ceil(BLOCK)
}

/// The continuation headers of a transaction of `len` bytes starting `off` bytes
/// into a block: `(block_index, position from the transaction's start)`.
fn continuations(off: usize, len: usize) -> impl Iterator<Item = (u32, usize)> {
    (1..(off + len).div_ceil(BLOCK)).map(move |k| (k as u32, k * BLOCK - off))
}

/// `complete_back` for a transaction at `start` reserved when the log was complete
/// up to `complete` (0, unknown, when too far back to say).
pub fn complete_back(start: u64, complete: Option<u64>) -> u32 {
    complete
        .and_then(|c| u32::try_from(start.checked_sub(c)? + 1).ok())
        .unwrap_or(0)
}

/// Encodes a transaction that starts `off` bytes into a block (its bytes, to the end
/// of its tail); `complete_back` as in [`TxHeader`].
pub fn encode(
    generation: u32,
    id: u64,
    complete_back: u32,
    entries: &[Entry],
    payload: &[u8],
    off: usize,
) -> Vec<u8> {
    let l = layout(entries.len(), payload.len(), off);
    let mut b = vec![0u8; l.len];
    let header = |block_index| TxHeader {
        generation,
        id,
        entries: entries.len() as u32,
        payload: payload.len() as u32,
        block_index,
        complete_back,
    };
    header(0).encode(&mut b);
    for (k, at) in continuations(off, l.len) {
        header(k).encode(&mut b[at..]);
    }
    for (e, &p) in entries.iter().zip(&l.entry_pos) {
        wr_u64(&mut b, p, e.off);
        wr_u32(&mut b, p + 8, e.len);
        wr_u32(&mut b, p + 12, e.data);
        wr_u16(&mut b, p + 16, e.kind as u16);
    }
    for (p, r) in &l.pieces {
        b[*p..*p + r.len()].copy_from_slice(&payload[r.clone()]);
    }
    let crc = crc32fast::hash(&b[..l.tail]);
    wr_u32(&mut b, l.tail, crc);
    b
}

/// A transaction being built: its entries and payload, and the image pages they
/// change. Every change is applied to the image at once and recorded here.
#[derive(Default)]
pub struct TxBuild {
    pub entries: Vec<Entry>,
    pub payload: Vec<u8>,
    pub pages: Vec<u32>,
}

/// A decoded, verified transaction.
#[derive(Debug, PartialEq, Eq)]
pub struct Txn {
    pub header: TxHeader,
    pub entries: Vec<Entry>,
    pub payload: Vec<u8>,
    /// Its bytes, to the end of its tail.
    pub len: usize,
}

impl Txn {
    /// The units it takes in the log (where the next one of its batch may start).
    pub fn units(&self) -> u64 {
        self.len.div_ceil(UNIT) as u64
    }
}

/// The bytes of a transaction whose first header is `h` and which starts `off`
/// bytes into a block, if sane for a log of `log_bytes` bytes.
pub fn len_of_header(h: &TxHeader, off: usize, log_bytes: u64) -> Option<usize> {
    // An absurd count (a garbage header that happens to pass the other checks) must
    // not make replay allocate gigabytes.
    let max = usize::try_from(log_bytes).ok()?;
    if h.entries as usize * ENTRY_LEN > max || h.payload as usize > max {
        return None;
    }
    let n = size_for(h.entries as usize, h.payload as usize, off);
    (n <= max).then_some(n)
}

/// Decodes and verifies a transaction from `b` (exactly its bytes), which starts
/// `off` bytes into a block: the header after every block boundary must agree with
/// the first and the CRC must match.
pub fn decode(b: &[u8], off: usize) -> Result<Txn, &'static str> {
    let h = TxHeader::decode(b).ok_or("bad magic")?;
    let l = layout(h.entries as usize, h.payload as usize, off);
    if b.len() != l.len {
        return Err("wrong length");
    }
    for (k, at) in continuations(off, l.len) {
        let hi = TxHeader::decode(&b[at..]).ok_or("bad magic in a later block")?;
        if hi.id != h.id || hi.generation != h.generation || hi.block_index != k {
            return Err("block of another transaction");
        }
        if hi.entries != h.entries || hi.payload != h.payload {
            return Err("block headers disagree");
        }
    }
    if crc32fast::hash(&b[..l.tail]) != rd_u32(b, l.tail) {
        return Err("checksum mismatch");
    }
    let mut entries = Vec::with_capacity(l.entry_pos.len());
    for &p in &l.entry_pos {
        entries.push(Entry {
            off: rd_u64(b, p),
            len: rd_u32(b, p + 8),
            data: rd_u32(b, p + 12),
            kind: Kind::from_u16(rd_u16(b, p + 16)).ok_or("unknown entry type")?,
        });
    }
    let mut payload = vec![0u8; h.payload as usize];
    for (p, r) in &l.pieces {
        payload[r.clone()].copy_from_slice(&b[*p..*p + r.len()]);
    }
    Ok(Txn {
        header: h,
        entries,
        payload,
        len: l.len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_completion_stamp_survives_encoding_and_says_unknown_when_it_cannot() {
        let (es, p) = sample(3, 100);
        let start = (2u64 << 32) + 40;
        let back = complete_back(start, Some(start - 7));
        assert_eq!(back, 8);
        let t = decode(&encode(1, 9, back, &es, &p, 0), 0).unwrap();
        assert_eq!(t.header.complete_at_reserve(start), Some(start - 7));
        // complete up to itself: every earlier transaction was
        assert_eq!(complete_back(start, Some(start)), 1);
        // unknown: no stamp, a position after the start, or too far back
        assert_eq!(complete_back(start, None), 0);
        assert_eq!(complete_back(start, Some(start + 1)), 0);
        assert_eq!(complete_back(start, Some(0)), 0);
        let t = decode(&encode(1, 9, 0, &es, &p, 640), 640).unwrap();
        assert_eq!(t.header.complete_at_reserve(start), None);
    }

    fn sample(entries: usize, payload: usize) -> (Vec<Entry>, Vec<u8>) {
        let es = (0..entries)
            .map(|i| Entry {
                kind: if i % 2 == 0 { Kind::Copy } else { Kind::Assign },
                off: i as u64 * 77,
                len: i as u32 % 5,
                data: i as u32 * 3,
            })
            .collect();
        let p = (0..payload).map(|i| (i * 31 % 251) as u8).collect();
        (es, p)
    }

    /// Encodes and decodes at `off`; returns the blocks the transaction touches.
    fn round_trip_at(entries: usize, payload: usize, off: usize) -> usize {
        let (es, p) = sample(entries, payload);
        let b = encode(9, (4 << 32) | 17, 3, &es, &p, off);
        assert_eq!(b.len(), size_for(entries, payload, off));
        let t = decode(&b, off).unwrap();
        assert_eq!(t.entries, es);
        assert_eq!(t.payload, p);
        assert_eq!(t.header.id, (4 << 32) | 17);
        assert_eq!(t.header.generation, 9);
        assert_eq!(t.len, b.len());
        // every block boundary it crosses is followed by its header
        for (k, at) in continuations(off, b.len()) {
            assert_eq!((off + at) % BLOCK, 0);
            let h = TxHeader::decode(&b[at..]).unwrap();
            assert_eq!((h.id, h.block_index), ((4 << 32) | 17, k));
        }
        (off + t.len).div_ceil(BLOCK)
    }

    fn round_trip(entries: usize, payload: usize) -> usize {
        let n = round_trip_at(entries, payload, 0);
        assert_eq!(n, blocks_for(entries, payload));
        n
    }

    #[test]
    fn small_transaction_is_one_block() {
        assert_eq!(round_trip(1, 100), 1);
        assert_eq!(round_trip(0, 0), 1);
    }

    #[test]
    fn entries_span_blocks_without_straddling() {
        // 169 entries fill block 0's 4064 bytes but 8; the 170th starts block 1.
        let per_block = (BLOCK - TX_HEADER) / ENTRY_LEN;
        assert_eq!(per_block, 169);
        assert_eq!(round_trip(per_block, 0), 1);
        assert_eq!(round_trip(per_block + 1, 0), 2);
        let n = round_trip(1000, 5000);
        assert!(n >= 7, "{n}");
        for off in [0, 16, 1200, MAX_START] {
            let l = layout(1000, 0, off);
            for &p in &l.entry_pos {
                let p = p + off;
                assert_eq!(
                    p / BLOCK,
                    (p + ENTRY_LEN - 1) / BLOCK,
                    "entry at {p} straddles"
                );
                assert!(p % BLOCK >= TX_HEADER);
            }
        }
    }

    #[test]
    fn one_mib_payload() {
        let n = round_trip(3, 1 << 20);
        assert_eq!(n, blocks_for(3, 1 << 20));
        assert!(n > (1 << 20) / BLOCK);
        round_trip_at(3, 1 << 20, 2000);
    }

    #[test]
    fn tail_forced_into_a_new_block() {
        // one entry, then a payload leaving fewer than 8 bytes in block 0
        let room = BLOCK - TX_HEADER - ENTRY_LEN;
        for left in 0..TAIL_LEN {
            assert_eq!(round_trip(1, room - left), 2, "{left} bytes left");
        }
        assert_eq!(round_trip(1, room - TAIL_LEN), 1);
        let l = layout(1, room - 3, 0);
        assert_eq!(l.tail, BLOCK + TX_HEADER);
    }

    /// Started later in a block, a transaction never ends past the block boundary
    /// that `blocks_for` blocks from the start of the next block would reach: what
    /// a writer is admitted for covers it wherever it lands.
    #[test]
    fn admission_covers_every_start() {
        for (entries, payload) in [
            (1, 100),
            (3, 1100),
            (12, 1088),
            (0, 0),
            (170, 0),
            (2, 9000),
            (1, 4024),
        ] {
            let b = blocks_for(entries, payload);
            for off in (0..=MAX_START).step_by(UNIT) {
                let end = off + size_for(entries, payload, off);
                assert!(
                    end <= (b + usize::from(off > 0)) * BLOCK,
                    "{entries} entries, {payload} B at {off}: ends at {end}, admitted {b} blocks"
                );
                if off % 512 == 0 {
                    round_trip_at(entries, payload, off);
                }
            }
        }
    }

    #[test]
    fn damage_is_detected() {
        for off in [0, 1008] {
            let (es, p) = sample(300, 9000);
            let b = encode(1, 1 << 32, 0, &es, &p, off);
            let first = BLOCK - off; // the first block boundary
            for at in [5, 40, first + 3, first + 100, b.len() - 100] {
                let mut c = b.clone();
                c[at] ^= 0x10;
                assert!(
                    decode(&c, off).is_err(),
                    "flip at {at} (start {off}) passed"
                );
            }
            // a block from another transaction
            let other = encode(1, (1 << 32) | 5, 0, &es, &p, off);
            let mut c = b.clone();
            c[first..first + BLOCK].copy_from_slice(&other[first..first + BLOCK]);
            assert_eq!(decode(&c, off), Err("block of another transaction"));
            // decoded as if it started elsewhere in its block
            assert!(decode(&b, off + UNIT).is_err());
        }
    }
}
