//! The memory of one render, bounded whatever the template engine does.
//!
//! minijinja concatenates strings (`~`, `+`) and lists inside its VM with no
//! hook, so a template that doubles a string into a variable and never
//! writes it escapes both the output budget and the steps. Every SDK
//! plugin's allocator is therefore this counting wrapper around the system
//! allocator: while a [`Watch`] is alive on a thread, it counts the bytes
//! that thread holds beyond what it held when the watch started, and once
//! they pass [`memory_limit`] it writes one message naming what was being
//! rendered to stderr and exits the process (unwinding out of an allocator
//! is undefined behaviour; the plugins survive a kill at any point, so the
//! next run converges). Without a watch the cost is one thread-local load
//! per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// How much more than its output budget one render may hold: its output,
/// the strings it writes, and the engine's own working memory.
const OUTPUT_BUDGETS: usize = 4;
/// Memory every render may hold whatever its budget: the engine, the
/// compiled template, the facts and data.
const BASE_MEMORY: usize = 64 << 20;
/// The longest place kept for the message; a longer one is cut.
const PLACE_CAPACITY: usize = 768;
/// The exit status of a plugin stopped by the limit.
pub const EXIT_STATUS: i32 = 1;

/// The bytes one render with `output_budget` (`max_render_size`) may hold:
/// 4 times the budget and 64 MiB.
pub fn memory_limit(output_budget: usize) -> usize {
    output_budget
        .saturating_mul(OUTPUT_BUDGETS)
        .saturating_add(BASE_MEMORY)
}

/// The allocator of every binary built on the SDK.
pub struct CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The watch of the current thread. Constant-initialised and without a
/// destructor, so the allocator can read it at any time without allocating.
struct ThreadWatch {
    active: Cell<bool>,
    /// Bytes allocated minus bytes freed since the watch started.
    held: Cell<isize>,
    limit: Cell<isize>,
    place: Cell<[u8; PLACE_CAPACITY]>,
    place_len: Cell<usize>,
}

thread_local! {
    static WATCH: ThreadWatch = const {
        ThreadWatch {
            active: Cell::new(false),
            held: Cell::new(0),
            limit: Cell::new(0),
            place: Cell::new([0; PLACE_CAPACITY]),
            place_len: Cell::new(0),
        }
    };
}

/// What an outer watch had, put back when an inner one ends.
struct Saved {
    active: bool,
    held: isize,
    limit: isize,
    place: [u8; PLACE_CAPACITY],
    place_len: usize,
}

/// The memory of one render is watched while this lives. `place` names
/// what is rendered (`FILE:LINE: property P`, or a template file), for the
/// message. A watch inside another (data rendered for a property) counts
/// for both and names its own place.
pub struct Watch {
    saved: Saved,
}

impl Watch {
    pub fn start(place: &str, output_budget: usize) -> Watch {
        let mut buffer = [0; PLACE_CAPACITY];
        let mut len = place.len().min(PLACE_CAPACITY);
        while !place.is_char_boundary(len) {
            len -= 1;
        }
        buffer[..len].copy_from_slice(&place.as_bytes()[..len]);
        let limit = isize::try_from(memory_limit(output_budget)).unwrap_or(isize::MAX);
        WATCH.with(|watch| {
            let saved = Saved {
                active: watch.active.get(),
                held: watch.held.get(),
                limit: watch.limit.get(),
                place: watch.place.get(),
                place_len: watch.place_len.get(),
            };
            watch.place.set(buffer);
            watch.place_len.set(len);
            watch.limit.set(limit);
            watch.held.set(0);
            watch.active.set(true);
            Watch { saved }
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = WATCH.try_with(|watch| {
            watch.active.set(false);
            let inner = watch.held.get();
            watch.place.set(self.saved.place);
            watch.place_len.set(self.saved.place_len);
            watch.limit.set(self.saved.limit);
            watch.held.set(self.saved.held.saturating_add(inner));
            watch.active.set(self.saved.active);
        });
    }
}

/// Counts `delta` bytes for the thread's watch, if any; past the limit,
/// says so and exits.
#[inline]
fn count(delta: isize) {
    let _ = WATCH.try_with(|watch| {
        if !watch.active.get() {
            return;
        }
        let held = watch.held.get().saturating_add(delta);
        watch.held.set(held);
        if delta > 0 && held > watch.limit.get() {
            watch.active.set(false);
            exceeded(watch);
        }
    });
}

/// Writes the message with `write(2)` from fixed buffers (the allocator
/// must not allocate) and exits without unwinding or running destructors.
#[cold]
fn exceeded(watch: &ThreadWatch) -> ! {
    let place = watch.place.get();
    let place = &place[..watch.place_len.get().min(PLACE_CAPACITY)];
    let mut digits = [0u8; 20];
    let limit = decimal(usize::try_from(watch.limit.get()).unwrap_or(0), &mut digits);
    // As the SDK prints an error: "!! " and exit status 1.
    let parts: [&[u8]; 5] = [
        b"!! ",
        place,
        b": the template takes more than ",
        limit,
        b" bytes of memory to render (4 times max_render_size and 64 MiB): a string or list it builds, perhaps one it never writes, such as a string doubled in a loop; make it build less, or raise max_render_size on this resource\n",
    ];
    for part in parts {
        write_all(part);
    }
    // SAFETY: _exit ends the process at once; nothing runs after it.
    unsafe { libc::_exit(EXIT_STATUS) }
}

fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length come from a live slice.
        let written = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        let Ok(written) = usize::try_from(written) else {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        };
        bytes = &bytes[written.min(bytes.len())..];
    }
}

/// `value` in decimal, in `buffer`.
fn decimal(mut value: usize, buffer: &mut [u8; 20]) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buffer[at..];
        }
    }
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// count only reads and writes the thread's own cells.
unsafe impl GlobalAlloc for CountingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(signed(layout.size()));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(signed(layout.size()));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-signed(layout.size()));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(signed(new_size).saturating_sub(signed(layout.size())));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_four_budgets_and_64_mib() {
        assert_eq!(memory_limit(1 << 20), (4 << 20) + (64 << 20));
        assert_eq!(memory_limit(usize::MAX), usize::MAX);
    }

    #[test]
    fn a_watch_counts_what_its_thread_holds_and_an_inner_one_counts_for_both() {
        let outer = Watch::start("outer", 1 << 20);
        let kept: Vec<u8> = Vec::with_capacity(1000);
        {
            let _inner = Watch::start("inner", 1 << 20);
            let more: Vec<u8> = Vec::with_capacity(500);
            WATCH.with(|watch| assert!(watch.held.get() >= 500));
            drop(more);
        }
        WATCH.with(|watch| {
            let held = watch.held.get();
            assert!((1000..1500).contains(&held), "{held}");
            assert_eq!(&watch.place.get()[..5], b"outer");
        });
        drop(kept);
        drop(outer);
        WATCH.with(|watch| assert!(!watch.active.get()));
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        let mut buffer = [0; 20];
        assert_eq!(decimal(0, &mut buffer), b"0");
        assert_eq!(decimal(335_544_320, &mut buffer), b"335544320");
    }
}
