//! `ycsb engines`: the engines of this build.

use ycsb::engines;

pub(super) fn engines() {
    for e in engines::ALL {
        match engines::why_not_built(e) {
            None => println!("{e}"),
            Some(why) => println!("{e} (not in this build: {why})"),
        }
    }
}
