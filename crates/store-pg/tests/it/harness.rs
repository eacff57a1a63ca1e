//! The two backends under one test body: a fresh, empty store of each kind, and more handles on
//! the same data the way replicas (or a second process) would have them.

use engram_store::Store;
use engram_store_api::Backend;
use engram_store_pg::PgStore;

/// A fresh store of one backend, and further connections to it.
pub trait Harness: Sized + Send + Sync + 'static {
    /// The backend.
    type B: Backend + Clone + 'static;
    /// A new empty store.
    async fn fresh() -> Self;
    /// The store the test works on.
    fn backend(&self) -> Self::B;
    /// Another handle on the same data with connections of its own: another SQLite connection
    /// to the file, another PostgreSQL pool (what a second replica has).
    async fn replica(&self) -> Self::B;
}

/// The desktop's store: a SQLite file in a temp dir.
pub struct Sqlite {
    dir: tempfile::TempDir,
    store: Store,
}

impl Harness for Sqlite {
    type B = Store;

    async fn fresh() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("engram.db")).unwrap();
        Sqlite { dir, store }
    }

    fn backend(&self) -> Store {
        self.store.clone()
    }

    async fn replica(&self) -> Store {
        Store::open(&self.dir.path().join("engram.db")).unwrap()
    }
}

/// A server's store: a database of its own in the test binary's PostgreSQL cluster.
pub struct Postgres {
    url: String,
    store: PgStore,
}

impl Postgres {
    /// The database's URL, for a client of the test's own.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Connections per pool: small, as several pools share one test cluster.
const POOL: usize = 4;

impl Harness for Postgres {
    type B = PgStore;

    async fn fresh() -> Self {
        let url = engram_test_postgres::database().url();
        let store = PgStore::connect_with_pool_size(&url, POOL).await.unwrap();
        Postgres { url, store }
    }

    fn backend(&self) -> PgStore {
        self.store.clone()
    }

    async fn replica(&self) -> PgStore {
        PgStore::connect_with_pool_size(&self.url, POOL)
            .await
            .unwrap()
    }
}

/// Instantiates each generic test body (`async fn name<H: Harness>(h: H)` in the calling
/// module) once per backend: `sqlite::name` and `postgres::name`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    use $crate::harness::Harness;
                    super::$name($crate::harness::Sqlite::fresh().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    use $crate::harness::Harness;
                    super::$name($crate::harness::Postgres::fresh().await).await;
                }
            )*
        }
    };
}
pub(crate) use on_both_backends;
