//! The KVell engine (in progress).
