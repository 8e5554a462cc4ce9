//! Pure work spread over the machine's cores (a big plan's cells, a big report's
//! parts), with the results in the order one thread would give them, so that nothing
//! downstream can tell how many cores there were.

/// The most threads one call uses: a lab controller is a small machine, and past a few
/// threads the memory allocator, not the work, sets the pace.
const MAX_THREADS: usize = 8;

/// The threads worth using here, at least one.
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
}

/// Runs `a` and `b`, on two threads where there are two cores; a panic in either is the
/// caller's.
pub fn both<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if cores() < 2 {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let other = s.spawn(b);
        let first = a();
        let second = other
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (first, second)
    })
}

/// `items.iter().map(f).collect()`, in contiguous parts on up to `cores()` threads,
/// none with fewer than `min_part` items (a thread costs more than a few small items).
pub fn map<T: Sync, R: Send>(items: &[T], min_part: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len().div_ceil(min_part.max(1)).max(1));
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    let part = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let running: Vec<_> = items
            .chunks(part)
            .map(|chunk| s.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for t in running {
            out.extend(t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        out
    })
}

/// Frees `value` on a thread of its own, so that the caller goes on (or the process
/// exits) without waiting: freeing a big store's contents one allocation at a time
/// costs a tenth of a report's render, and at exit the kernel takes the heap back
/// whole.
pub fn free_later<T: Send + 'static>(value: T) {
    // Where no thread can start, the closure is dropped here, and the value with it.
    let _ = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_the_order_of_one_thread_for_every_size_and_part() {
        for n in [0usize, 1, 2, 3, 7, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            for min_part in [0, 1, 3, 64, 5000] {
                let got = map(&items, min_part, |i| i * 3 + 1);
                let want: Vec<usize> = items.iter().map(|i| i * 3 + 1).collect();
                assert_eq!(got, want, "n={n} min_part={min_part}");
            }
        }
    }

    #[test]
    fn both_returns_each_side_in_its_place() {
        let (a, b) = both(|| "left".to_string(), || 2 + 2);
        assert_eq!((a.as_str(), b), ("left", 4));
    }

    #[test]
    fn free_later_frees_the_value() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        struct Tell(std::sync::mpsc::Sender<()>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        free_later(Tell(tx));
        // The channel closes once the value is dropped: the send arrives, then the end.
        assert!(rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok());
    }
}
