use crate::model_dir;
use engram_embed::{ALL_MINILM_L6_V2, Encoder, LocalEmbeddings, WeightsSource};
use engram_providers::EmbeddingModel;
use std::time::Duration;

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn paraphrases_are_closer_than_unrelated_text() {
    let enc = Encoder::load(&model_dir()).unwrap();
    assert_eq!(enc.dimension(), 384);
    let texts: Vec<String> = [
        "my dog",
        "Bob loves boston terriers",
        "The quarterly tax report is due on Friday",
        "",
    ]
    .map(String::from)
    .to_vec();
    let v = enc.embed(&texts).unwrap();
    assert_eq!(v.len(), 4);
    for x in &v {
        assert_eq!(x.len(), 384);
        let n: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-4, "not unit length: {n}");
    }
    let dog_terrier = cos(&v[0], &v[1]);
    let dog_tax = cos(&v[0], &v[2]);
    assert!(
        dog_terrier > dog_tax + 0.1,
        "dog~terrier {dog_terrier} vs dog~tax {dog_tax}"
    );
}

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    let enc = Encoder::load(&model_dir()).unwrap();
    let short = "tulips bloom in April".to_owned();
    let long =
        "a much longer sentence about the garden, the weather, and what grows where in spring"
            .to_owned();
    let alone = enc.embed(std::slice::from_ref(&short)).unwrap();
    let batch = enc.embed(&[long, short]).unwrap();
    let sim = cos(&alone[0], &batch[1]);
    assert!(sim > 0.9999, "padding changed the vector: cos {sim}");
}

#[test]
fn a_damaged_weights_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(model_dir().join(f), dir.path().join(f)).unwrap();
    }
    let missing = Encoder::load(dir.path()).err().unwrap().to_string();
    assert!(missing.contains("model.safetensors"), "{missing}");
    let real = std::fs::read(model_dir().join("model.safetensors")).unwrap();
    std::fs::write(
        dir.path().join("model.safetensors"),
        &real[..real.len() / 2],
    )
    .unwrap();
    let damaged = Encoder::load(dir.path()).err().unwrap().to_string();
    assert!(damaged.contains("model.safetensors"), "{damaged}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_loads_on_first_use_and_unloads_when_idle() {
    let local = LocalEmbeddings::new(
        &ALL_MINILM_L6_V2,
        WeightsSource::Folder(model_dir()),
        Duration::from_millis(300),
        None,
    );
    assert!(!local.is_loaded());
    let v = local
        .embed("all-minilm-l6-v2", &["hello".to_owned()])
        .await
        .unwrap();
    assert_eq!(v[0].len(), 384);
    assert!(local.is_loaded());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while local.is_loaded() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!local.is_loaded(), "still loaded after being idle");
    // And it comes back on the next call.
    let again = local
        .embed("all-minilm-l6-v2", &["hello".to_owned()])
        .await
        .unwrap();
    assert_eq!(again, v);
    let wrong = local
        .embed("bge-small", &["x".to_owned()])
        .await
        .unwrap_err();
    assert!(
        wrong.message.contains("not a built-in"),
        "{}",
        wrong.message
    );
}

/// The model computes on its own threads, and unloading it ends them: what kept their stacks
/// and `gemm`'s per-thread buffers resident after the idle unload when candle used rayon's
/// process-wide pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unloaded_model_leaves_none_of_its_threads_behind() {
    let local = LocalEmbeddings::new(
        &ALL_MINILM_L6_V2,
        WeightsSource::Folder(model_dir()),
        Duration::from_secs(600),
        None,
    );
    let texts: Vec<String> = (0..40)
        .map(|i| format!("passage number {i} about tulips"))
        .collect();
    let v = local.embed("all-minilm-l6-v2", &texts).await.unwrap();
    assert_eq!(v.len(), 40);
    let threads = local.encoder().await.unwrap().thread_count();
    assert!(
        threads.get() >= 1,
        "the model runs on no threads of its own"
    );
    local.unload();
    assert!(!local.is_loaded());
    // Threads exit on their own once their pool is dropped; wait for that, not for a time.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while threads.get() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        threads.get(),
        0,
        "the unloaded model's threads are still running"
    );
    // Loaded again, it gets fresh threads and the same vectors.
    assert_eq!(local.embed("all-minilm-l6-v2", &texts).await.unwrap(), v);
    assert!(local.encoder().await.unwrap().thread_count().get() >= 1);
}

#[tokio::test]
async fn a_folder_without_weights_says_which_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalEmbeddings::new(
        &ALL_MINILM_L6_V2,
        WeightsSource::Folder(dir.path().to_owned()),
        Duration::from_secs(60),
        None,
    );
    let e = local
        .embed("all-minilm-l6-v2", &["x".to_owned()])
        .await
        .unwrap_err();
    assert!(e.message.contains("config.json"), "{}", e.message);
    assert!(
        e.message.contains("local/all-minilm-l6-v2"),
        "{}",
        e.message
    );
}

#[test]
fn token_vectors_are_unit_length_per_word_piece_and_match_alone_or_batched() {
    let enc = Encoder::load(&model_dir()).unwrap();
    let texts: Vec<String> = [
        "Which pet does Bob have?",
        "Bob loves boston terriers",
        "The quarterly tax report is due on Friday, and the accountant wants every receipt",
        "",
    ]
    .map(String::from)
    .to_vec();
    let tv = enc.token_vectors(&texts).unwrap();
    assert_eq!(tv.len(), 4);
    // [CLS] and [SEP] are left out: one vector per word piece of the text.
    let pieces = &tv[1].tokens;
    assert_eq!(pieces[..3], ["bob", "loves", "boston"], "{pieces:?}");
    assert_eq!(
        pieces[3..].concat().replace("##", ""),
        "terriers",
        "{pieces:?}"
    );
    assert!(tv[3].tokens.is_empty() && tv[3].vectors.is_empty());
    for t in &tv {
        assert_eq!(t.tokens.len(), t.vectors.len());
        for v in &t.vectors {
            assert_eq!(v.len(), 384);
            let n: f32 = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-4, "not unit length: {n}");
        }
    }
    // Padding in a batch with a longer text changes nothing.
    let alone = enc.token_vectors(&texts[1..2]).unwrap();
    for (a, b) in alone[0].vectors.iter().zip(&tv[1].vectors) {
        assert!(cos(a, b) > 0.9999, "{}", cos(a, b));
    }
    // MaxSim prefers the passage about the pet.
    let q: Vec<&[f32]> = tv[0].vectors.iter().map(Vec::as_slice).collect();
    let pet = engram_retrieval::late::maxsim::max_sim(&q, &tv[1].vectors);
    let tax = engram_retrieval::late::maxsim::max_sim(&q, &tv[2].vectors);
    assert!(pet > tax + 0.05, "pet {pet} vs tax {tax}");
}

/// The tensor-by-tensor reader gives exactly what candle's own safetensors reader gives, for
/// every tensor of the real weights file.
#[test]
fn the_file_reader_reads_every_tensor_as_candles_own_reader_does() {
    use candle_core::{DType, Device};
    use candle_nn::var_builder::SimpleBackend;
    let path = model_dir().join("model.safetensors");
    let reference = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    let ours = engram_embed::weights::FileWeights::open(&path).unwrap();
    assert!(reference.len() > 50, "{} tensors", reference.len());
    for (name, want) in &reference {
        assert!(ours.contains_tensor(name), "{name}");
        let got = ours
            .get_unchecked(name, want.dtype(), &Device::Cpu)
            .unwrap();
        assert_eq!(got.shape(), want.shape(), "{name}");
        let flat = |t: &candle_core::Tensor| {
            t.to_dtype(DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap()
        };
        assert!(flat(&got) == flat(want), "{name} differs");
    }
}
