//! The worker threads a loaded model computes on: a rayon pool owned by the model, so its
//! threads end when the model is dropped.
//!
//! candle's matrix products (`gemm`) and the tokenizer's batch encoding run on the calling
//! thread and on whichever rayon pool is current. Without a pool of the model's own that was
//! a tokio blocking thread (kept alive by the server's periodic memory release) or rayon's
//! process-wide pool, threads that live on after the model: each keeps the stack pages it
//! touched and `gemm`'s per-thread packing buffer (one L2 cache's worth, `gemm-common`'s
//! `L2_SLAB`), measured as memory that stayed after the idle unload (see the README, "The
//! embedding model in memory"). Work run through
//! [`ModelThreads::install`] uses the model's own pool instead, and dropping the pool lets its
//! threads exit, giving all of that back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A model's own thread pool and a count of its threads that are still running.
pub struct ModelThreads {
    pool: rayon::ThreadPool,
    alive: Arc<AtomicUsize>,
}

/// How many of one pool's threads are running; stays readable after the pool is dropped
/// (its threads exit shortly after, asynchronously, and the count falls to 0).
#[derive(Clone, Debug)]
pub struct ThreadCount(Arc<AtomicUsize>);

impl ThreadCount {
    /// Threads of the pool still running now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl ModelThreads {
    /// A pool of as many threads as candle would use (`RAYON_NUM_THREADS` when set, else the
    /// physical cores), named `engram-model-<i>`. Errors: the OS refused to start a thread.
    pub fn new() -> Result<Self, rayon::ThreadPoolBuildError> {
        let alive = Arc::new(AtomicUsize::new(0));
        let (started, exited) = (alive.clone(), alive.clone());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(candle_core::utils::get_num_threads())
            .thread_name(|i| format!("engram-model-{i}"))
            .start_handler(move |_| {
                started.fetch_add(1, Ordering::SeqCst);
            })
            .exit_handler(move |_| {
                exited.fetch_sub(1, Ordering::SeqCst);
            })
            .build()?;
        Ok(Self { pool, alive })
    }

    /// Runs `work` on this pool: every rayon task it starts (candle's kernels, the
    /// tokenizer's batches) runs on these threads, not on the process-wide pool. Blocks the
    /// calling thread until `work` returns.
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        self.pool.install(work)
    }

    /// The live-thread count of this pool, to watch it fall to 0 after the model is dropped.
    pub fn count(&self) -> ThreadCount {
        ThreadCount(self.alive.clone())
    }
}
