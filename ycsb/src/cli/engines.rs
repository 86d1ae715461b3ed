//! `ycsb engines`: the engines of this build.

use ycsb::engines;

pub(super) fn engines() {
    for e in engines::ALL {
        println!(
            "{e}{}",
            if engines::is_built(e) {
                ""
            } else {
                " (not in this build)"
            }
        );
    }
}
