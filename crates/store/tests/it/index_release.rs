//! An agent's vector index leaves memory when nobody searched it for the idle time the
//! service passes (the built-in model's), and the next search loads it again unchanged.

use crate::scale::{SMALL, nearest, texts, vector, with_vectors};
use crate::support::{create, temp_store};
use std::time::Duration;

#[test]
fn releasing_memory_drops_an_unsearched_index_and_a_search_loads_it_again() {
    let (_dir, store) = temp_store();
    store.set_vector_index_config(SMALL);
    let (a, _) = create(&store, "A");
    let dim = 24;
    store
        .passages()
        .insert(&a.id, &with_vectors(0..400, dim, |_| vec![]))
        .unwrap();
    let q = vector(10_007, dim);
    nearest(&store, &a.id, &q, 5, &[]);
    store.wait_for_vector_index_builds();
    let before = texts(&nearest(&store, &a.id, &q, 5, &[]));
    assert_eq!(before.len(), 5);
    assert!(store.vector_index_memory() > 0, "no index in memory");

    // Searched just now: an hour's idle time keeps it.
    store
        .release_memory_after(Duration::from_secs(3600))
        .unwrap();
    assert!(store.vector_index_memory() > 0, "a fresh index was dropped");
    // Unsearched for longer than the idle time (zero here): its memory goes.
    store.release_memory_after(Duration::ZERO).unwrap();
    assert_eq!(store.vector_index_memory(), 0);

    // The next search reloads it and finds the same passages.
    assert_eq!(texts(&nearest(&store, &a.id, &q, 5, &[])), before);
    assert!(store.vector_index_memory() > 0);
}
