//! Pure work spread over the machine's cores (a big plan's cells, a big report's
//! parts), with the results in the order one thread would give them, so that nothing
//! downstream can tell how many cores there were.

/// The most threads one call uses: a lab controller is a small machine, and past a few
/// threads the memory allocator, not the work, sets the pace.
const MAX_THREADS: usize = 8;

/// The threads worth using here, at least one.
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
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

/// `items.iter().map(f).collect()`, on up to `cores()` threads, none with fewer than
/// `min_part` items (a thread costs more than a few small items).
pub fn map<T: Sync, R: Send>(items: &[T], min_part: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads_for(items.len(), min_part);
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    // About sixteen blocks a thread, none longer than `min_part`.
    let block = (items.len() / (threads * 16)).clamp(1, min_part.max(1));
    let parts = blocks_on(items, threads, block, |b| {
        b.iter().map(&f).collect::<Vec<R>>()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in parts {
        out.extend(part);
    }
    out
}

/// `items.chunks(block).map(f).collect()`, the blocks on up to `cores()` threads (none
/// with fewer than `min_part` items): for work that keeps something per block, such as
/// a buffer.
pub fn map_blocks<T: Sync, R: Send>(
    items: &[T],
    min_part: usize,
    block: usize,
    f: impl Fn(&[T]) -> R + Sync,
) -> Vec<R> {
    let threads = threads_for(items.len(), min_part);
    if threads < 2 {
        return items.chunks(block.max(1)).map(f).collect();
    }
    blocks_on(items, threads, block, f)
}

fn threads_for(items: usize, min_part: usize) -> usize {
    cores().min(items.div_ceil(min_part.max(1)).max(1))
}

/// The blocks of `items`, each taken by the next thread free (the caller's among them)
/// rather than a fixed part per thread: when other work shares the cores (a report
/// reads the store while its plan is made), a thread held up does fewer blocks, and
/// no core sits idle at the end while another finishes a part. Results in block order.
fn blocks_on<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    block: usize,
    f: impl Fn(&[T]) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let block = block.max(1);
    let count = items.len().div_ceil(block);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                break done;
            }
            let start = i * block;
            done.push((i, f(&items[start..items.len().min(start + block)])));
        }
    };
    let mut done = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for t in others {
            done.extend(t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Runs every job once, on up to `cores()` threads (the caller's among them), each
/// taking the next job in the given order when it is done with its last. Give the
/// longest jobs first: then no thread sits idle at the end while another works
/// through a long one, as happens when each part of a big report gets a thread of its
/// own (more threads than cores, and the last one alone at the end). A panic in a job
/// is the caller's, after the other threads have stopped.
pub fn jobs<'a>(jobs: Vec<Box<dyn FnOnce() + Send + 'a>>) {
    use std::sync::{Mutex, PoisonError};
    let threads = cores().min(jobs.len()).max(1);
    // Each job is taken once, by the thread `blocks_on` hands its index to.
    let jobs: Vec<Mutex<Option<_>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    // The first panic, kept until every job has run: the jobs after it are as good.
    let failed: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    blocks_on(&jobs, threads, 1, |one| {
        for job in one {
            let Some(job) = job.lock().unwrap_or_else(PoisonError::into_inner).take() else {
                continue;
            };
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
                failed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(p);
            }
        }
    });
    if let Some(p) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        std::panic::resume_unwind(p);
    }
}

/// A job's result, set once by the job that makes it (`jobs`).
pub struct Slot<T>(std::sync::OnceLock<T>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(std::sync::OnceLock::new())
    }
}

impl<T> Slot<T> {
    pub fn set(&self, value: T) {
        // Each slot belongs to one job, which sets it once.
        let _ = self.0.set(value);
    }

    /// The value its job set; None if the job never ran to its end.
    pub fn take(self) -> Option<T> {
        self.0.into_inner()
    }
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
    fn map_blocks_gives_every_block_in_order_for_every_size() {
        for n in [0usize, 1, 2, 3, 7, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            for (min_part, block) in [(0, 0), (1, 1), (3, 2), (64, 5), (5000, 64)] {
                let got = map_blocks(&items, min_part, block, <[usize]>::to_vec);
                let want: Vec<Vec<usize>> =
                    items.chunks(block.max(1)).map(<[usize]>::to_vec).collect();
                assert_eq!(got, want, "n={n} min_part={min_part} block={block}");
            }
        }
    }

    #[test]
    fn both_returns_each_side_in_its_place() {
        let (a, b) = both(|| "left".to_string(), || 2 + 2);
        assert_eq!((a.as_str(), b), ("left", 4));
    }

    #[test]
    fn jobs_runs_every_job_once_and_each_sets_its_own_slot() {
        for n in [0usize, 1, 2, 3, 17] {
            let slots: Vec<Slot<usize>> = (0..n).map(|_| Slot::default()).collect();
            let runs = std::sync::atomic::AtomicUsize::new(0);
            let work: Vec<Box<dyn FnOnce() + Send + '_>> = slots
                .iter()
                .enumerate()
                .map(|(i, slot)| {
                    let runs = &runs;
                    Box::new(move || {
                        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        slot.set(i * i);
                    }) as Box<dyn FnOnce() + Send + '_>
                })
                .collect();
            jobs(work);
            assert_eq!(runs.into_inner(), n);
            let got: Vec<Option<usize>> = slots.into_iter().map(Slot::take).collect();
            let want: Vec<Option<usize>> = (0..n).map(|i| Some(i * i)).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_panic_in_a_job_is_the_callers_after_the_other_jobs_ran() {
        let done = std::sync::atomic::AtomicUsize::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut work: Vec<Box<dyn FnOnce() + Send + '_>> =
                vec![Box::new(|| panic!("this job fails"))];
            for _ in 0..5 {
                work.push(Box::new(|| {
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }));
            }
            jobs(work);
        }));
        assert!(result.is_err());
        assert_eq!(done.into_inner(), 5);
    }

    #[test]
    fn free_later_frees_the_value() {
        struct Tell(std::sync::mpsc::Sender<()>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        free_later(Tell(tx));
        // The channel closes once the value is dropped: the send arrives, then the end.
        assert!(rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok());
    }
}
