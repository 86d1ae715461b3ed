//! What the engine states about itself: every option and configuration string in
//! force, and what it cannot control (notes), for the result file.

use crate::config::{self, Config, LIMITS};
use crate::ffi;
use kvapi::{Durability, EngineInfo, Options};

pub(crate) fn engine_info(
    o: &Options,
    cfg: &Config,
    direct_io: bool,
    mut notes: Vec<String>,
) -> EngineInfo {
    let mut settings = o.resolved();
    settings.push(("library".into(), ffi::version()));
    settings.push(("wiredtiger_open".into(), cfg.open_config(direct_io)));
    settings.push((
        "create".into(),
        format!("{} {}", config::TABLE, cfg.table_config()),
    ));
    settings.push(("open_session".into(), config::SESSION_CONFIG.into()));
    settings.push(("open_cursor".into(), config::CURSOR_CONFIG.into()));
    notes.push(
        "the paper's B+ tree baseline as this project configures it (issue 22): a row-store \
         B+ tree of 4 KiB leaf and internal pages, no compression, direct I/O for data files; \
         the paper does not publish its WiredTiger settings beyond that"
            .into(),
    );
    notes.push(format!(
        "writers of one key wait for each other before WiredTiger (a striped lock over the \
         key, counted as key_lock_waits), then for one of {} write tickets (writes inside \
         WiredTiger at once; 0 = no limit; counted as write_ticket_waits), as a database in \
         front of WiredTiger admits them; reads and scans take neither",
        cfg.write_tickets
    ));
    if let Some(m) = cfg.memory {
        settings.push((
            "memory_split".into(),
            if o.is_set("cache") {
                format!(
                    "wiredtiger.cache ({} bytes) overrides the budget ({m} bytes)",
                    cfg.cache_bytes
                )
            } else {
                format!(
                    "cache_size = memory ({} bytes): WiredTiger has one cache for pages and \
                     updates; what it allocates outside it comes on top",
                    cfg.cache_bytes
                )
            },
        ));
    }
    notes.push(format!(
        "cache_size ({} MiB) bounds WiredTiger's cache (pages, updates, plus its 8% estimate \
         of allocator overhead); outside it: sessions and cursors, the log's slot buffers \
         when the log is on, scratch buffers of eviction and checkpoint threads, and glibc's \
         fragmentation (WiredTiger allocates with the C library's malloc): loading 300K x 1 \
         KiB into a 64 MiB cache, the resident memory grew by 3 to 4 x the cache (glibc: 86 \
         MiB allocated, 157 MiB free in its arenas)",
        cfg.cache_bytes >> 20
    ));
    notes.push(
        "eviction runs below the cache size too (dirty target 5%, target 80% of the cache) \
         and an evicted page leaves the cache, so pages can be read back while the cache is \
         far from full: WiredTiger's defaults, kept"
            .into(),
    );
    if direct_io {
        notes.push(
            "direct I/O for data files: data is cached only in WiredTiger's cache; the log \
             (when on) is written through the OS page cache"
                .into(),
        );
    }
    if cfg.drops_log_pages() {
        notes.push(
            "wiredtiger.log_os_cache=drop: every 100 ms the engine advises the kernel to drop \
             the log files' pages (posix_fadvise DONTNEED: dirty pages start their writeback, \
             clean ones leave the page cache), which would otherwise stay cached, charged to \
             the budget, until a checkpoint removes the file; the log is read only by \
             recovery, and what is durable does not change"
                .into(),
        );
    }
    if !direct_io && !cfg.direct_io {
        notes.push(
            "buffered I/O (wiredtiger.direct_io=false): the OS page cache also caches data, \
             outside the budget"
                .into(),
        );
    }
    if cfg.durability != Durability::None {
        notes.push(
            "every operation is its own (autocommit) transaction; commits of concurrent \
             threads are written (and, at power, synced) together by WiredTiger's log slots"
                .into(),
        );
    }
    notes.push(
        "one WiredTiger session (with its cursor) per calling thread; no native asynchronous \
         path (the driver's thread pool gives it a queue depth)"
            .into(),
    );
    EngineInfo {
        engine: "wiredtiger".into(),
        durability: cfg.durability,
        durability_setting: cfg.durability_setting(),
        cache_bytes: Some(cfg.cache_bytes),
        direct_io: Some(direct_io),
        settings,
        notes,
        limits: LIMITS,
    }
}
