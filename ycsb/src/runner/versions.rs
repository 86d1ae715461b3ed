//! Versions of the values a writer writes, so a read can tell them apart.

/// Versions of written values: the writer's id in the high bits, a sequence below.
pub(super) struct Versions {
    next: u64,
}

impl Versions {
    pub(super) fn new(writer: usize) -> Versions {
        Versions {
            next: ((writer as u64 + 1) << 40) + 1,
        }
    }

    pub(super) fn take(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}
