//! Tests of the image's frames (kept apart: image.rs stays under the layout's 800 lines).

use super::*;

fn install(im: &mut Image, p: u32, limit: usize) {
    let m = Miss {
        page: p,
        flushes: 0,
    };
    assert_eq!(im.install(m, &[p as u8; BLOCK], limit), Installed::Yes);
}

/// The frames' memory is whole chunks that follow the limit: pages beyond it
/// evict clean ones instead of adding chunks, and a lower limit frees the chunks
/// past it, moving their pages (bytes intact) to free frames below.
#[test]
fn chunks_follow_the_limit() {
    let mut im = Image::empty(200);
    im.set_limit(96);
    for p in 0..150 {
        install(&mut im, p, 96);
    }
    assert_eq!(im.chunks.len(), 96 / CHUNK_FRAMES);
    assert!(im.resident_frames() <= 96);
    assert!(im.loads_and_evictions().1 >= 150 - 96);
    im.make_room(32);
    im.set_limit(32);
    assert_eq!(im.resident_frames(), 31);
    assert_eq!(
        im.chunks.len(),
        32 / CHUNK_FRAMES,
        "chunks past the limit freed"
    );
    let held = im.resident_bytes() as usize;
    assert!(
        (32 * BLOCK..34 * BLOCK).contains(&held),
        "the chunks' pages, with the lists' few bytes: {held}"
    );
    let mut seen = 0;
    for p in 0..150u32 {
        if let Some(b) = im.resident(p) {
            assert!(b.iter().all(|&x| x == p as u8), "page {p} moved intact");
            seen += 1;
        }
    }
    assert_eq!(seen, 31);
    // the cache grows again by whole chunks
    im.set_limit(64);
    for p in 150..200 {
        install(&mut im, p, 64);
    }
    assert_eq!(im.chunks.len(), 64 / CHUNK_FRAMES);
}
